import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Auth, Feed, type MarketError, PageCacheBytes, type Principal, RateLimits } from "@gpu-market/core"
import { admit, admitCounted, bodyBytes, charge, countStamped, judgeCount, makeReadCalls, type ReadCall, replayOf } from "@gpu-market/core/adapters"
import { StoreChangeStamp, StoreStampedCounts } from "@gpu-market/core/storage"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FiberRef from "effect/FiberRef"
import type * as Scope from "effect/Scope"
import { randomUUID } from "node:crypto"
import { type CorsOptions, corsOptionsProblem, withCors } from "./cors.js"
import { makeDashboardRoutes } from "./dashboard.js"
import { makeDirect } from "./direct.js"
import { docsPage, makeAssetRoutes } from "./docs.js"
import { DEFAULT_HEARTBEAT_MS, EVENTS_PATH, heartbeatProblem, sseResponse } from "./events.js"
import { makeExportRoutes } from "./export.js"
import { makeHealthRoutes } from "./health.js"
import { withNosniff } from "./nosniff.js"
import { CLIENT_CLOSED_REQUEST, currentPrincipal, routedAs } from "./observe.js"
import { problemResponse } from "./problem.js"
import { queryOf, rateHeaders } from "./request.js"
import { makeSupplyRoutes } from "./procurement.js"
import { dataRoutes } from "./routes.js"
import { makeOrigins } from "./origin.js"
import { makeReplay, type Replay } from "./replay.js"
import { respond, withCompression } from "./transfer.js"

/** Options of the HTTP app. */
export interface AppOptions {
  /**
   * Public base URL, e.g. `https://api.example.com/market`; `meta.next.url` starts with it. Absent,
   * links start with the origin each request came to (`origin.ts`), and routes have no prefix.
   */
  readonly baseUrl?: string
  /** Path of the procurement service below the base URL; default `/supply`. Mounted when its services are provided. */
  readonly supplyPrefix?: `/${string}`
  /** Browser origins allowed to call the API (CORS); off when absent. */
  readonly cors?: CorsOptions
  /** Serve `GET /metrics`, every metric of the process in Prometheus text, public; default off. */
  readonly metrics?: boolean
  /**
   * Serve the `/dashboard` page and its assets (public; its charts read the API with the
   * visitor's own token); default on. Off, `/dashboard` is 404 like any unknown path.
   */
  readonly dashboard?: boolean
  /** How often a quiet change-feed stream (`/v2/events`) gets a heartbeat comment, in ms; default 15 000. */
  readonly feedHeartbeatMs?: number
}

/**
 * The app, its replay and its direct lane; the replay keeps answers and the lane takes requests
 * only when `replaying` (a Node server in front).
 */
const buildApp = (options: AppOptions, replaying: boolean) =>
  Effect.gen(function* () {
    const corsProblem = options.cors === undefined ? undefined : corsOptionsProblem(options.cors)
    if (corsProblem !== undefined) return yield* Effect.die(new TypeError(corsProblem))
    const heartbeat = heartbeatProblem(options.feedHeartbeatMs)
    if (heartbeat !== undefined) return yield* Effect.die(new RangeError(heartbeat))
    const heartbeatMs = options.feedHeartbeatMs ?? DEFAULT_HEARTBEAT_MS
    const auth = yield* Auth
    const limits = yield* RateLimits
    const readCall = yield* makeReadCalls
    const origins = makeOrigins(options.baseUrl)
    const admitNow = (authorization: string | undefined) => admit(auth, limits, authorization)
    // The replay shares the page cache's budget setting; without a server to take requests, it keeps nothing.
    const counts = yield* StoreStampedCounts
    const replay: Replay = makeReplay(replaying ? yield* PageCacheBytes : 0, {
      admit: admitNow,
      charge: (principal) => charge(limits, principal),
      changeStamp: yield* StoreChangeStamp,
      stamped: counts === undefined ? undefined : {
        counts,
        count: (principal, type) => countStamped(limits, counts, principal, type),
        judge: (principal, counted) => judgeCount(limits, principal, counted),
        admitCounted: (authorization, guess, counted) => admitCounted(auth, limits, authorization, guess, counted)
      }
    }, yield* Effect.runtime<never>())

    /**
     * A data request's one path: admitted (401, 429 as problems, with the rate-limit headers once
     * the caller is known), its principal recorded, then `answer` with the headers it sends.
     */
    const admitted = (
      answer: (
        principal: Principal, request: HttpServerRequest.HttpServerRequest, requestId: string, headers: Record<string, string>
      ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
    ) =>
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const requestId = randomUUID()
        const admission = replay.admissionOf(request) ?? (yield* Effect.either(admitNow(request.headers.authorization)))
        if (Either.isLeft(admission)) {
          const e = admission.left
          return problemResponse(e, requestId, e._tag === "RateLimited"
            ? rateHeaders({ limit: e.limit, remaining: 0, resetSeconds: e.retry_after_seconds })
            : {})
        }
        yield* FiberRef.set(currentPrincipal, admission.right.principal.id)
        return yield* answer(admission.right.principal, request, requestId, rateHeaders(admission.right.status))
      })

    const data = (run: (principal: Principal, request: HttpServerRequest.HttpServerRequest) => Effect.Effect<unknown, MarketError>) =>
      admitted((principal, request, requestId, headers) => Effect.gen(function* () {
        const failed = replay.failureOf(request)
        const body = failed !== undefined ? Either.left(failed) : yield* Effect.either(run(principal, request))
        if (Either.isLeft(body)) return problemResponse(body.left, requestId, headers)
        headers["x-request-id"] = requestId
        const replayable = replayOf(body.right)
        if (replayable !== undefined) replay.mark(request, replayable, principal)
        return respond(request, { body: bodyBytes(body.right), contentType: "application/json", headers, caller: principal })
      }))

    // The change feed: admitted as a data request (one count against the rate limit per
    // connection), refused with a problem before the stream starts, then Server-Sent Events.
    const feed = yield* Feed
    const events = admitted((principal, request, requestId, headers) =>
      Effect.map(Effect.either(feed.subscribe(principal, queryOf(request.url), request.headers["last-event-id"], auth.stillHolds(request.headers.authorization))), (items) =>
        Either.isLeft(items)
          ? problemResponse(items.left, requestId, headers)
          : sseResponse(items.right, heartbeatMs, { ...headers, "x-request-id": requestId })))

    const page = (endpoint: ReadCall) =>
      data((principal, request) => endpoint({ principal, query: queryOf(request.url), origin: origins.of(request) }))

    type Route = readonly [HttpRouter.PathInput, Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest>]
    const supplyPrefix = options.supplyPrefix ?? "/supply"
    const supply = yield* makeSupplyRoutes({ prefix: supplyPrefix, originOf: origins.of })
    // The API's own description is public (no token), like the docs page that renders it; it
    // documents procurement exactly when it is mounted. Built, and its module loaded, on first
    // request: an app is made per embedding and per test, most never serve it, and the JSON
    // Schema machinery would add to every start.
    const metrics = options.metrics === true
    const openApi = yield* Effect.cached(Effect.map(Effect.promise(() => import("./openapi.js")), ({ openApiDocument }) =>
      Buffer.from(JSON.stringify(openApiDocument({ baseUrl: options.baseUrl ?? "/", ...(supply.length > 0 ? { supplyPrefix } : {}), metrics })))))
    const docs: ReadonlyArray<Route> = [
      ["/openapi.json", Effect.zipWith(HttpServerRequest.HttpServerRequest, openApi, (request, doc) =>
        respond(request, { body: doc, contentType: "application/json" }))],
      ["/docs", Effect.succeed(docsPage(origins.prefix))],
      ...yield* makeAssetRoutes,
      ...(options.dashboard === false ? [] : yield* makeDashboardRoutes(origins.prefix)),
      ...yield* makeHealthRoutes({ metrics })
    ]

    const withExports = yield* makeExportRoutes({ admitted, originOf: origins.of })
    const routes: ReadonlyArray<Route> = [
      ...dataRoutes.map((route): Route => [route.path, withExports(route.entry, page(readCall(route.entry)))]), [EVENTS_PATH, events], ...docs
    ]
    const known = new Set<string>(routes.map(([path]) => path))
    const routed = yield* HttpRouter.toHttpApp(supply.reduce(
      (r, [path, handler]) => HttpRouter.all(r, path, routedAs(path, handler)),
      routes.reduce((r, [path, handler]) => HttpRouter.get(r, path, routedAs(path, handler)), HttpRouter.empty)
    ))

    const unrouted = Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
      const full = request.url.split("?", 1)[0]!
      const path = origins.prefix !== "" && full.startsWith(`${origins.prefix}/`) ? full.slice(origins.prefix.length) : full
      return known.has(path)
        ? problemResponse({ _tag: "MethodNotAllowed", method: request.method, allow: "GET" }, randomUUID())
        : problemResponse({ _tag: "RouteNotFound", path: full }, randomUUID())
    })

    // Served under the base URL's path (a standalone server at https://host/market), and without
    // it too (a proxy or host app that strips the prefix before handing the request on).
    const prefix = origins.prefix
    const unprefixed = prefix === "" ? routed : Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
      request.url.startsWith(`${prefix}/`)
        ? Effect.provideService(routed, HttpServerRequest.HttpServerRequest, request.modify({ url: request.url.slice(prefix.length) }))
        : routed)

    const answered = unprefixed.pipe(
      Effect.catchTag("RouteNotFound", () => unrouted),
      Effect.catchAllCause((cause) =>
        // Interrupted only: the connection went away (the client left, or was cut), so there is
        // no one to answer and nothing wrong; 499, as proxies count it, is what gets recorded.
        Cause.isInterruptedOnly(cause)
          ? Effect.succeed(HttpServerResponse.empty({ status: CLIENT_CLOSED_REQUEST }))
          // The cause, not its text: loggers then render the errors a defect wraps as well (a
          // backend's StorageDefect wraps the invalid plan or the record that did not decode).
          : Effect.as(Effect.logError("request failed", cause), problemResponse({ _tag: "InternalError" }, randomUUID()))
      )
    )
    // CORS around every answer, so a preflight is answered before anything else runs; `nosniff`
    // on all of them, preflights too; the recording outermost, so a replay gives the answer
    // exactly as it was sent.
    const app: HttpApp.Default<never, Scope.Scope> = replay.recording(withNosniff(withCors(options.cors)(withCompression(answered))))
    const direct = makeDirect({
      routes: replaying ? dataRoutes.map((route) => ({ path: route.path, call: readCall(route.entry) })) : [],
      prefix,
      originOf: origins.ofNode,
      admit: admitNow,
      replay,
      varyOrigin: options.cors !== undefined && options.cors.origins.length > 0,
      runtime: yield* Effect.runtime<never>()
    })
    return { app, replay, direct }
  })

/**
 * Builds the HTTP app over the market's services. Every data request takes one path: bearer
 * auth, the caller's rate limit, the core call, then JSON or a problem, with the rate-limit
 * headers on whatever the caller gets once it is known who they are. A page carries a strong
 * `ETag` (a 304 when `If-None-Match` names it); answers are compressed when the client asks.
 * `/healthz` and `/readyz` answer probes, and `/metrics` scrapes when asked for; all three public.
 * Options that cannot work (an origin no browser sends) are a defect of the embedding app.
 */
export const makeApp = (options: AppOptions) => Effect.map(makeAppParts(options), ({ app }) => app)

/**
 * The app with its `Replay` and `Direct` lane, which a Node server puts in front of it: answers
 * the app marks as replayable are kept, and the same request again is answered from them (see
 * replay.ts); plain data pages are read and written without the platform (see direct.ts).
 */
export const makeAppWithReplay = (options: AppOptions) => buildApp(options, true)

/** The app and a replay that keeps nothing: for hosts that cannot put the replay in front (a `fetch` handler). */
export const makeAppParts = (options: AppOptions) => buildApp(options, false)
