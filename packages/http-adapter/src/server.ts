import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServer from "@effect/platform/HttpServer"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { makeAppWithReplay } from "./app.js"
import type { CorsOptions } from "./cors.js"
import { replayingServer } from "./replaying-server.js"

/** Where and how the standalone server listens. */
export interface ServerOptions {
  readonly port: number
  readonly host: string
  /** Public base URL; defaults to `http://<host>:<port>`. */
  readonly baseUrl?: string
  /** Browser origins allowed to call the API (CORS); off when absent. */
  readonly cors?: CorsOptions
}

/**
 * The standalone HTTP server: the market's HTTP app on a Node `http.Server`. It has no tracer to
 * report to, so tracing is off for its requests: the request span and the service spans
 * (`RentalPrices.latest`, …) would cost more than the rest of a cached page and be read by no
 * one. An app that wants them mounts `makeApp` in a runtime with its own tracer.
 */
export const layer = (options: ServerOptions) =>
  Layer.unwrapEffect(
    Effect.map(makeAppWithReplay({
      baseUrl: options.baseUrl ?? `http://${options.host}:${options.port}`,
      ...(options.cors === undefined ? {} : { cors: options.cors })
    }), ({ app, replay }) =>
      HttpServer.serve(app.pipe(Effect.withTracerEnabled(false))).pipe(
        HttpMiddleware.withTracerDisabledWhen(() => true),
        // Replayed answers are taken before the platform sees the request.
        Layer.provide(NodeHttpServer.layer(() => replayingServer(replay), { port: options.port, host: options.host }))
      ))
  )
