import * as HttpApp from "@effect/platform/HttpApp"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import {
  type HardwareVocabularyExtension, marketLayer, type MarketServices, type RateLimitMode, type Storage, type StorageError, withRateLimits
} from "@gpu-market/core"
import { hardwareVocabularyLayer, pageCacheLayer, toProblemError } from "@gpu-market/core/adapters"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import type * as Scope from "effect/Scope"
import type { IncomingMessage, ServerResponse } from "node:http"
import { makeApp } from "./app.js"
import { atTheDoor } from "./connections.js"
import { type CorsOptions, corsOptionsProblem } from "./cors.js"
import { heartbeatProblem } from "./events.js"

/**
 * The HTTP API as handlers an existing service mounts: a Node `(req, res)` handler (node:http,
 * Express, Fastify) and a web-standard `fetch` handler (`Request → Response`). The host may pass
 * the full URL or strip its prefix first; either way `meta.next.url` starts with `baseUrl`, so a
 * caller follows it back through the host.
 */

/** Options of a mounted handler. */
export interface HandlerOptions {
  /** The storage backend, e.g. `sqlite("market.db")`. */
  readonly storage: Layer.Layer<Storage, StorageError>
  /** Public URL of the mount point, prefix included: `https://api.example.com/market`. */
  readonly baseUrl: string
  /** Values added to the hardware vocabulary, as `createMarket` takes them. */
  readonly hardwareVocabulary?: HardwareVocabularyExtension
  /** Browser origins allowed to call the API (CORS); off when absent. */
  readonly cors?: CorsOptions
  /** Where rate limits are counted, as `createMarket` takes it (default `shared`). */
  readonly rateLimits?: RateLimitMode
  /** Memory for hot pages in MiB, as `createMarket` takes it (default 64; 0 turns the cache off). */
  readonly pageCacheMb?: number
  /** How often a quiet change-feed stream gets a heartbeat comment, in ms; default 15 000. */
  readonly feedHeartbeatMs?: number
}

/**
 * Opens the market and builds the app in one runtime; rejects with a `MarketProblemError` if
 * storage cannot open, and before opening anything with a `TypeError` if the CORS options cannot work
 * and a `RangeError` if the change feed's heartbeat cannot.
 */
const open = async <A>(
  options: HandlerOptions,
  toHandler: (app: HttpApp.Default<never, Scope.Scope>) => Effect.Effect<A, never, MarketServices>
) => {
  const corsProblem = options.cors === undefined ? undefined : corsOptionsProblem(options.cors)
  if (corsProblem !== undefined) throw new TypeError(corsProblem)
  const heartbeat = heartbeatProblem(options.feedHeartbeatMs)
  if (heartbeat !== undefined) throw new RangeError(heartbeat)
  const runtime = ManagedRuntime.make(marketLayer.pipe(
    Layer.provide(hardwareVocabularyLayer(options.hardwareVocabulary)),
    Layer.provide(pageCacheLayer(options.pageCacheMb)),
    Layer.provideMerge(withRateLimits(options.storage, options.rateLimits ?? "shared"))
  ))
  // No tracer reports these spans: as in the standalone server, tracing stays off.
  const built = await runtime.runPromiseExit(
    Effect.flatMap(makeApp({
      baseUrl: options.baseUrl,
      ...(options.cors === undefined ? {} : { cors: options.cors }),
      ...(options.feedHeartbeatMs === undefined ? {} : { feedHeartbeatMs: options.feedHeartbeatMs })
    }), (app) => toHandler(app.pipe(Effect.withTracerEnabled(false))))
  )
  if (Exit.isFailure(built)) {
    await runtime.dispose()
    throw toProblemError(built.cause)
  }
  return { runtime, handler: built.value }
}

/** A Node `(req, res)` handler over the market, and `close` to release its storage. */
export const nodeHandler = async (options: HandlerOptions): Promise<{
  readonly handle: (req: IncomingMessage, res: ServerResponse) => void
  readonly close: () => Promise<void>
}> => {
  const { runtime, handler } = await open(options, (app) =>
    // The refusals of the standalone server's door first (no `Host`, an `Expect` it cannot
    // meet: they reach the handler where the host server lets them), then the app.
    Effect.map(NodeHttpServer.makeHandler(app), atTheDoor))
  return { handle: handler, close: () => runtime.dispose() }
}

/** A `fetch` handler (`Request → Response`) over the market, and `close` to release its storage. */
export const fetchHandler = async (options: HandlerOptions): Promise<{
  readonly fetch: (request: Request) => Promise<Response>
  readonly close: () => Promise<void>
}> => {
  const { runtime, handler } = await open(options, (app) => Effect.map(Effect.runtime<never>(), (rt) => HttpApp.toWebHandlerRuntime(rt)(app)))
  return { fetch: (request) => handler(request), close: () => runtime.dispose() }
}
