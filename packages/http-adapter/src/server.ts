import { HttpMiddleware, HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { createServer } from "node:http"
import { makeApp } from "./app"

/** Where and how the standalone server listens. */
export interface ServerOptions {
  readonly port: number
  readonly host: string
  /** Public base URL; defaults to `http://<host>:<port>`. */
  readonly baseUrl?: string
}

/**
 * The standalone HTTP server: the market's HTTP app on a Node `http.Server`. Request spans are
 * off by default: a span per request costs more than the rest of a cached page.
 */
export const layer = (options: ServerOptions) =>
  Layer.unwrapEffect(
    Effect.map(makeApp({ baseUrl: options.baseUrl ?? `http://${options.host}:${options.port}` }), (app) =>
      HttpServer.serve(app).pipe(HttpMiddleware.withTracerDisabledWhen(() => true))
    )
  ).pipe(Layer.provide(NodeHttpServer.layer(createServer, { port: options.port, host: options.host })))
