import * as HttpApp from "@effect/platform/HttpApp"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import type { LocalMarket, MarketServices } from "@gpu-market/core"
import { toProblemError } from "@gpu-market/core/adapters"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Scope from "effect/Scope"
import type { IncomingMessage, ServerResponse } from "node:http"
import { makeServing, type Serving } from "./app.js"
import { nodeListener } from "./answer.js"
import { atTheDoor } from "./connections.js"
import { type CorsOptions, corsOptionsProblem } from "./cors.js"
import { heartbeatProblem } from "./events.js"

/**
 * The HTTP API as handlers an existing service mounts over the market it already has (from
 * `createMarket`): a Node `(req, res)` handler (node:http, Express, Fastify) and a web-standard
 * `fetch` handler (`Request → Response`). They serve what the standalone server serves, with the
 * market's own tokens, rate limits, caches and breaker. The host may pass the full URL or strip
 * its prefix first; `meta.next.url` starts with `baseUrl`, or without one with the origin the
 * request came to, so a caller follows it back through the host.
 */

/** Options of a mounted handler. */
export interface HandlerOptions {
  /**
   * Public URL of the mount point, prefix included: `https://api.example.com/market`. Absent, links
   * start with the origin of each request (its `Host` header, `https:` over TLS) and no prefix.
   */
  readonly baseUrl?: string
  /** Browser origins allowed to call the API (CORS); off when absent. */
  readonly cors?: CorsOptions
  /** Serve `GET /metrics`, every metric of the process in Prometheus text, public; default off. */
  readonly metrics?: boolean
  /** Serve the `/dashboard` page and its assets; default on, as on the standalone server. */
  readonly dashboard?: boolean
  /** How often a quiet change-feed stream gets a heartbeat comment, in ms; default 15 000. */
  readonly feedHeartbeatMs?: number
}

/**
 * Builds the app in the market's runtime; throws before building anything a `TypeError` if the
 * CORS options cannot work and a `RangeError` if the change feed's heartbeat cannot.
 */
const mount = async <A>(
  market: LocalMarket,
  options: HandlerOptions,
  toHandler: (app: HttpApp.Default<never, Scope.Scope>, serving: Serving) => Effect.Effect<A, never, MarketServices>
): Promise<A> => {
  const corsProblem = options.cors === undefined ? undefined : corsOptionsProblem(options.cors)
  if (corsProblem !== undefined) throw new TypeError(corsProblem)
  const heartbeat = heartbeatProblem(options.feedHeartbeatMs)
  if (heartbeat !== undefined) throw new RangeError(heartbeat)
  // No tracer reports these spans: as in the standalone server, tracing stays off.
  const built = await market.runtime.runPromiseExit(
    Effect.flatMap(makeServing(options), (serving) => toHandler(serving.app.pipe(Effect.withTracerEnabled(false)), serving))
  )
  if (Exit.isFailure(built)) throw toProblemError(built.cause)
  return built.value
}

/** A Node `(req, res)` handler over `market`; closing the market ends it. */
export const nodeHandler = async (market: LocalMarket, options: HandlerOptions = {}): Promise<{
  readonly handle: (req: IncomingMessage, res: ServerResponse) => void
}> => {
  const handle = await mount(market, options, (app, serving) =>
    // The refusals of the standalone server's door first (no `Host`, an `Expect` it cannot
    // meet: they reach the handler where the host server lets them), then the data routes' GETs
    // on the lean path and the rest through the app, as on the standalone server.
    Effect.zipWith(NodeHttpServer.makeHandler(app), Effect.runtime<never>().pipe(Effect.withTracerEnabled(false)), (platform, runtime) =>
      atTheDoor(nodeListener(serving.lean, platform, runtime))))
  return { handle }
}

/** A `fetch` handler (`Request → Response`) over `market`; closing the market ends it. */
export const fetchHandler = async (market: LocalMarket, options: HandlerOptions = {}): Promise<{
  readonly fetch: (request: Request) => Promise<Response>
}> => {
  const handler = await mount(market, options, (app) => Effect.map(Effect.runtime<never>(), (rt) => HttpApp.toWebHandlerRuntime(rt)(app)))
  return { fetch: (request) => handler(request) }
}
