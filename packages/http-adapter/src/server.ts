import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServer from "@effect/platform/HttpServer"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { makeApp } from "./app.js"
import { createHttpServer, DEFAULT_TIMEOUTS, type ServerTimeouts, timeoutsProblem } from "./connections.js"
import type { CorsOptions } from "./cors.js"

/** Where and how the standalone server listens. */
export interface ServerOptions {
  readonly port: number
  readonly host: string
  /** Public base URL; defaults to `http://<host>:<port>`. */
  readonly baseUrl?: string
  /** Browser origins allowed to call the API (CORS); off when absent. */
  readonly cors?: CorsOptions
  /** How long clients may take to send a request, and idle connections stay open; `DEFAULT_TIMEOUTS` fills the rest. */
  readonly timeouts?: Partial<ServerTimeouts>
}

/**
 * The standalone HTTP server: the market's HTTP app on a Node `http.Server`. It has no tracer to
 * report to, so tracing is off for its requests: the request span and the service spans
 * (`RentalPrices.latest`, …) would cost more than the rest of a cached page and be read by no
 * one. An app that wants them mounts `makeApp` in a runtime with its own tracer. Timeouts that
 * cannot work are a defect of the embedding app, as CORS options that cannot are.
 */
export const layer = (options: ServerOptions) => {
  const timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts }
  const problem = timeoutsProblem(timeouts)
  if (problem !== undefined) return Layer.die(new TypeError(problem))
  return Layer.unwrapEffect(
    Effect.map(makeApp({
      baseUrl: options.baseUrl ?? `http://${options.host}:${options.port}`,
      ...(options.cors === undefined ? {} : { cors: options.cors })
    }), (app) =>
      HttpServer.serve(app.pipe(Effect.withTracerEnabled(false))).pipe(HttpMiddleware.withTracerDisabledWhen(() => true))
    )
  ).pipe(Layer.provide(NodeHttpServer.layer(() => createHttpServer(timeouts), { port: options.port, host: options.host })))
}
