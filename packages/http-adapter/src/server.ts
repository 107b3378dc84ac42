import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Feed } from "@gpu-market/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { IncomingMessage, Server, ServerResponse } from "node:http"
import { makeServing } from "./app.js"
import { nodeListener } from "./answer.js"
import { createHttpServer, DEFAULT_TIMEOUTS, type ServerTimeouts, timeoutsProblem } from "./connections.js"
import type { CorsOptions } from "./cors.js"
import { observed, observedAnswer } from "./observe.js"

/** Where and how the standalone server listens. */
export interface ServerOptions {
  readonly port: number
  readonly host: string
  /** Public base URL; absent, links start with the origin each request came to (its `Host`). */
  readonly baseUrl?: string
  /** Browser origins allowed to call the API (CORS); off when absent. */
  readonly cors?: CorsOptions
  /** Serve `GET /metrics` in Prometheus text (public); default off. */
  readonly metrics?: boolean
  /** Serve the `/dashboard` page; default on. */
  readonly dashboard?: boolean
  /**
   * How long closing the server waits for requests in flight before it cuts their connections,
   * in ms; default `DEFAULT_SHUTDOWN_TIMEOUT_MS`.
   */
  readonly shutdownTimeoutMs?: number
  /** How long clients may take to send a request, and idle connections stay open; `DEFAULT_TIMEOUTS` fills the rest. */
  readonly timeouts?: Partial<ServerTimeouts>
  /** How often a quiet change-feed stream gets a heartbeat comment, in ms; default 15 000. */
  readonly feedHeartbeatMs?: number
}

/** How long closing the server waits for requests in flight: 10 s, inside the 30 s most supervisors allow. */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000

/**
 * Listens with `handle` for the life of the scope. Closing stops accepting connections at once,
 * closes idle keep-alive connections, answers what is in flight (with `Connection: close`, and a
 * request that arrives meanwhile on an open connection is answered too), and cuts whatever is
 * still running after `timeoutMs`.
 */
const listen = (
  handle: (request: IncomingMessage, response: ServerResponse) => void,
  options: { readonly port: number; readonly host: string; readonly timeoutMs: number; readonly timeouts: ServerTimeouts }
) => {
  const inFlight = new Set<ServerResponse>()
  let draining = false
  const server = createHttpServer(options.timeouts, (request, response) => {
    inFlight.add(response)
    if (draining) response.setHeader("connection", "close")
    response.once("close", () => {
      inFlight.delete(response)
      if (draining) server.closeIdleConnections()
    })
    handle(request, response)
  })

  const open = Effect.async<Server, HttpServerError.ServeError>((resume) => {
    const failed = (cause: Error) => resume(Effect.fail(new HttpServerError.ServeError({ cause })))
    server.once("error", failed)
    server.listen(options.port, options.host, () => {
      server.off("error", failed)
      resume(Effect.succeed(server))
    })
  })

  const close = Effect.gen(function* () {
    const closed = yield* Effect.sync(() => {
      draining = true
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      server.closeIdleConnections()
      for (const response of inFlight) if (!response.headersSent) response.setHeader("connection", "close")
      return closed
    })
    yield* Effect.logInfo("closing the server: no new connections; answering the requests in flight").pipe(
      Effect.annotateLogs({ in_flight: inFlight.size, timeout_ms: options.timeoutMs })
    )
    // A finalizer cannot be interrupted, so no `Effect.timeout` here: the timer races the close itself.
    const done = yield* Effect.promise(() => new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), options.timeoutMs)
      void closed.then(() => {
        clearTimeout(timer)
        resolve(true)
      })
    }))
    if (!done) {
      const cut = inFlight.size
      server.closeAllConnections()
      yield* Effect.logWarning("requests cut at the shutdown timeout").pipe(Effect.annotateLogs({ cut }))
      yield* Effect.promise(() => closed)
    }
    yield* Effect.logInfo("server closed")
  })

  return Effect.acquireRelease(open, () => close)
}

/**
 * The standalone HTTP server: the market's HTTP app (`makeApp`, the one path every request
 * takes) on a Node `http.Server`, each request logged and counted (`observed`), closed gracefully
 * with its scope (`listen`). It has no tracer to report to, so tracing is off for its requests:
 * the request span and the service spans (`RentalPrices.latest`, …) would cost more than the rest
 * of a cached page and be read by no one. An app that wants them mounts `makeApp` in a runtime
 * with its own tracer. Timeouts that cannot work are a defect of the embedding app, as CORS
 * options that cannot are.
 */
export const layer = (options: ServerOptions) => {
  const timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts }
  const problem = timeoutsProblem(timeouts)
  if (problem !== undefined) return Layer.die(new TypeError(problem))
  return Layer.scopedDiscard(Effect.gen(function* () {
    const serving = yield* makeServing({
      ...(options.baseUrl === undefined ? {} : { baseUrl: options.baseUrl }),
      ...(options.cors === undefined ? {} : { cors: options.cors }),
      metrics: options.metrics ?? false,
      ...(options.dashboard === undefined ? {} : { dashboard: options.dashboard }),
      ...(options.feedHeartbeatMs === undefined ? {} : { feedHeartbeatMs: options.feedHeartbeatMs })
    })
    const platform = yield* NodeHttpServer.makeHandler(observed(serving.app).pipe(Effect.withTracerEnabled(false))).pipe(
      Effect.locally(HttpMiddleware.currentTracerDisabledWhen, () => true)
    )
    const runtime = yield* Effect.runtime<never>().pipe(Effect.withTracerEnabled(false))
    const handle = nodeListener(serving.lean, platform, runtime, observedAnswer)
    yield* listen(handle, {
      port: options.port, host: options.host, timeoutMs: options.shutdownTimeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS, timeouts
    })
    // Run before the server closes (finalizers run last first): change-feed streams end, so they
    // do not hold the graceful shutdown to its timeout; their clients resume elsewhere by their ids.
    const feed = yield* Feed
    yield* Effect.addFinalizer(() => feed.close)
  }))
}
