import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Auth, describeToken, Feed, type MarketError, RateLimits, TOKEN_PATH, type TokenBody } from "@gpu-market/core"
import { admit, makeReadCalls, type MarketRequest, type ReadResult, responseBody } from "@gpu-market/core/adapters"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Scope from "effect/Scope"
import { randomUUID } from "node:crypto"
import { type CorsOptions, corsOptionsProblem, makeCors, withCors } from "./cors.js"
import { makeDashboardRoutes } from "./dashboard.js"
import { docsPage, makeAssetRoutes } from "./docs.js"
import { DEFAULT_HEARTBEAT_MS, EVENTS_PATH, heartbeatProblem, sseResponse } from "./events.js"
import { asksExport, makeExportRoutes } from "./export.js"
import { makeHealthRoutes } from "./health.js"
import { withNosniff } from "./nosniff.js"
import { Caller, CLIENT_CLOSED_REQUEST, notePrincipal, routedAs } from "./observe.js"
import { problemAnswer, problemResponse } from "./problem.js"
import { queryOf, rateHeaders } from "./request.js"
import { makeSupplyRoutes } from "./procurement.js"
import { dataRoutes } from "./routes.js"
import { makeOrigins } from "./origin.js"
import { respond, validate, withCompression } from "./transfer.js"
import { type Answer, type Exchange, finish, type LeanRoute, toResponse } from "./answer.js"
import type { IncomingMessage } from "node:http"

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
 * Builds the HTTP app over the market's services, and the lean path of its data routes: the one
 * path every request takes, whichever host runs it (the standalone server, the Node and fetch
 * handlers). Every data request is admitted (bearer auth, the caller's rate limit), read as its
 * caller, then answered with JSON or a problem, with the rate-limit headers on whatever the
 * caller gets once it is known who they are; one function (`page`, from an `Exchange` to an
 * `Answer`) does it, which the Node listener runs and writes directly (`lean`) and the platform
 * app converts. A page carries a strong `ETag` (a 304 when `If-None-Match` names it); answers
 * are compressed when the client asks. `/healthz` and `/readyz` answer probes, and `/metrics`
 * scrapes when asked for; all three public. Options that cannot work (an origin no browser
 * sends) are a defect of the embedding app.
 */
export const makeServing = (options: AppOptions) =>
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

    /**
     * Admission, the one door of data requests: 401 and 429 as problem answers (with the
     * rate-limit headers once the caller is known), else the caller and the headers their answer
     * carries.
     */
    const admission = (authorization: string | undefined, requestId: string) =>
      Effect.match(admit(auth, limits, authorization), {
        onFailure: (e) => Either.left(problemAnswer(e, requestId, e._tag === "RateLimited"
          ? rateHeaders({ limit: e.limit, remaining: 0, resetSeconds: e.retry_after_seconds })
          : {})),
        onSuccess: ({ principal, status }) => Either.right({ principal, headers: rateHeaders(status) })
      })

    /**
     * A data route: the caller admitted, their read of the query, answered as JSON with its
     * validator (a 304 when `If-None-Match` names it), or as the refusal's or the read's problem.
     * The one function both ends run: the Node server writes its answer, the platform app
     * converts it.
     */
    const page = (call: (request: MarketRequest) => Effect.Effect<ReadResult | TokenBody, MarketError>) => (exchange: Exchange): Effect.Effect<Answer> => {
      const requestId = randomUUID()
      return Effect.flatMap(admission(exchange.headers.authorization, requestId), (admitted) => {
        if (Either.isLeft(admitted)) return Effect.succeed(admitted.left)
        const { principal, headers } = admitted.right
        return Effect.match(call({ principal, query: queryOf(exchange.url), origin: exchange.origin }), {
          onFailure: (error): Answer => ({ ...problemAnswer(error, requestId, headers), caller: principal }),
          onSuccess: (body): Answer => {
            headers["x-request-id"] = requestId
            const kept = responseBody(body)
            const { bytes } = kept
            const { status, headers: validated } = validate(exchange.headers["if-none-match"], exchange.headers["accept-encoding"], {
              body: bytes, digest: kept.digest, kept, contentType: "application/json", headers, caller: principal
            })
            return { status, headers: validated, contentType: "application/json", body: status === 304 ? undefined : bytes, caller: principal }
          }
        })
      })
    }

    /** `answer` as a platform route: the request as an `Exchange`, the answer as a response. */
    const platformRoute = (answer: (exchange: Exchange) => Effect.Effect<Answer>) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
        Effect.flatMap(answer({
          method: request.method,
          url: request.url,
          headers: {
            authorization: request.headers.authorization,
            "if-none-match": request.headers["if-none-match"],
            "accept-encoding": request.headers["accept-encoding"],
            origin: request.headers.origin
          },
          origin: origins.of(request)
        }), (answered) => Effect.as(answered.caller === undefined ? Effect.void : notePrincipal(answered.caller), toResponse(answered))))

    /** An admitted request's platform answer, or its refusal. */
    const admitted = (
      answer: (request: HttpServerRequest.HttpServerRequest, requestId: string, headers: Record<string, string>) =>
        Effect.Effect<HttpServerResponse.HttpServerResponse, never, Caller>
    ) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
        const requestId = randomUUID()
        return Effect.flatMap(admission(request.headers.authorization, requestId), (result) => {
          if (Either.isLeft(result)) return Effect.succeed(toResponse(result.left))
          const { principal, headers } = result.right
          return Effect.zipRight(notePrincipal(principal), Effect.provideService(answer(request, requestId, headers), Caller, principal))
        })
      })

    // The change feed: admitted as a data request (one count against the rate limit per
    // connection), refused with a problem before the stream starts, then Server-Sent Events.
    const feed = yield* Feed
    const events = admitted((request, requestId, headers) => Effect.gen(function* () {
      const caller = yield* Caller
      const stillHolds = auth.stillHolds(request.headers.authorization)
      const items = yield* Effect.either(feed.subscribe(caller, queryOf(request.url), request.headers["last-event-id"], stillHolds))
      return Either.isLeft(items)
        ? problemResponse(items.left, requestId, headers)
        : sseResponse(items.right, heartbeatMs, { ...headers, "x-request-id": requestId })
    }))

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

    // The data routes by path: the table the lean path looks a request up in, and the platform routes them by.
    const dataAnswers: ReadonlyArray<readonly [`/${string}`, (exchange: Exchange) => Effect.Effect<Answer>]> = [
      ...dataRoutes.map((route) => [route.path, page(readCall(route.entry))] as const),
      // The caller's own token: admitted and counted as a data request, so it says nothing to one without a token.
      [TOKEN_PATH, page((request) => describeToken(request.principal, request.query))]
    ]
    const data = new Map<string, (exchange: Exchange) => Effect.Effect<Answer>>(dataAnswers)
    // A paged route's export (`format=`, an export's `Accept`) is the platform's: its body streams.
    const withExports = yield* makeExportRoutes({
      admitted: (answer) => admitted((request, requestId, headers) =>
        Effect.flatMap(Caller, (principal) => answer(principal, request, requestId, headers))),
      originOf: origins.of
    })
    const entries = new Map(dataRoutes.map((route) => [route.path, route.entry]))
    const routes: ReadonlyArray<Route> = [
      ...dataAnswers.map(([path, answer]): Route => {
        const entry = entries.get(path)
        return [path, entry === undefined ? platformRoute(answer) : withExports(entry, platformRoute(answer))]
      }),
      [EVENTS_PATH, events], ...docs
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

    // A lean answer that died is the 500 the app answers one with; an interrupted one (the client
    // left) is answered to no one.
    const rescued = (answer: Effect.Effect<Answer>): Effect.Effect<Answer> =>
      Effect.catchAllCause(answer, (cause) => Cause.isInterruptedOnly(cause)
        ? Effect.failCause(cause)
        : Effect.as(Effect.logError("request failed", cause), problemAnswer({ _tag: "InternalError" }, randomUUID())))

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
    // on all of them, preflights too.
    const app: HttpApp.Default<never, Scope.Scope> = withNosniff(withCors(options.cors)(withCompression(answered)))
    const cors = makeCors(options.cors)
    return {
      app,
      /**
       * The lean path's route, for a Node request: the answer of a data route's GET, finished as
       * the app's middleware would finish it; undefined for anything else (the app answers it).
       */
      lean: (req: IncomingMessage): LeanRoute | undefined => {
        if (req.method !== "GET") return undefined
        const full = req.url ?? "/"
        const url = prefix !== "" && full.startsWith(`${prefix}/`) ? full.slice(prefix.length) : full
        const q = url.indexOf("?")
        const path = q < 0 ? url : url.slice(0, q)
        const answer = data.get(path)
        // An export streams its body: the platform app answers it.
        if (answer === undefined || asksExport(url, req.headers.accept)) return undefined
        const exchange: Exchange = { method: "GET", url, headers: req.headers, origin: origins.ofNode(req) }
        // A preflight is an OPTIONS, so a GET is never one: CORS only adds its headers here.
        return { path, answer: Effect.flatMap(rescued(answer(exchange)), (answered) => finish(exchange, answered, cors)) }
      }
    } as const
  })

/**
 * The HTTP app over the market's services (see `makeServing`): what the Node and fetch handlers
 * and an embedding app mount.
 */
export const makeApp = (options: AppOptions) => Effect.map(makeServing(options), (serving) => serving.app)

/** The app and the lean path of one market (`makeServing`). */
export type Serving = Effect.Effect.Success<ReturnType<typeof makeServing>>
