import { type HttpApp, HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import {
  Auth, HardwarePrices, hardwarePricesCollection, Indexes, indexesCollection, LlmTokenPrices, llmTokenPricesCollection,
  type MarketError, type MarketRequest, type Principal, RateLimits, type RateLimitStatus, RentalPrices,
  rentalPricesCollection, requestOrigin, Transactions, transactionsCollection
} from "@gpu-market/core"
import { Cause, Effect, Either, type Scope } from "effect"
import { randomUUID } from "node:crypto"
import { problemResponse } from "./problem"

/** What a data type's service offers the adapter: its paged endpoints and its metadata. */
export interface CollectionEndpoints {
  readonly latest?: (request: MarketRequest) => Effect.Effect<unknown, MarketError>
  readonly asOf?: (request: MarketRequest) => Effect.Effect<unknown, MarketError>
  readonly history: (request: MarketRequest) => Effect.Effect<unknown, MarketError>
  readonly metadata: (request: Pick<MarketRequest, "principal" | "query">) => Effect.Effect<unknown, MarketError>
}

/** Options of the HTTP app. */
export interface AppOptions {
  /** Public base URL, e.g. `https://api.example.com/market`; `meta.next.url` starts with it. */
  readonly baseUrl: string
}

const rateHeaders = (s: RateLimitStatus): Record<string, string> => ({
  "x-ratelimit-limit": String(s.limit),
  "x-ratelimit-remaining": String(s.remaining),
  "x-ratelimit-reset": String(s.resetSeconds)
})

const queryOf = (url: string): URLSearchParams => {
  const i = url.indexOf("?")
  return new URLSearchParams(i < 0 ? "" : url.slice(i + 1))
}

/**
 * Builds the HTTP app over the market's services. Every data request takes one path: bearer
 * auth, the caller's rate limit, the core call, then JSON or a problem, with the rate-limit
 * headers on whatever the caller gets once it is known who they are.
 */
export const makeApp = (options: AppOptions) =>
  Effect.gen(function* () {
    const auth = yield* Auth
    const limits = yield* RateLimits
    const rental = yield* RentalPrices
    const llm = yield* LlmTokenPrices
    const hardware = yield* HardwarePrices
    const transactions = yield* Transactions
    const indexes = yield* Indexes
    const origin = requestOrigin(options.baseUrl)

    const data = (run: (principal: Principal, request: HttpServerRequest.HttpServerRequest) => Effect.Effect<unknown, MarketError>) =>
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const requestId = randomUUID()
        const principal = yield* Effect.either(auth.authenticate(request.headers.authorization))
        if (Either.isLeft(principal)) return problemResponse(principal.left, requestId)
        const status = yield* Effect.either(limits.consume(`data:${principal.right.id}`, principal.right.rate_limit_per_minute))
        if (Either.isLeft(status)) {
          const e = status.left
          return problemResponse(e, requestId, e._tag === "RateLimited"
            ? rateHeaders({ limit: e.limit, remaining: 0, resetSeconds: e.retry_after_seconds })
            : {})
        }
        const headers = rateHeaders(status.right)
        const body = yield* Effect.either(run(principal.right, request))
        if (Either.isLeft(body)) return problemResponse(body.left, requestId, headers)
        headers["x-request-id"] = requestId
        return HttpServerResponse.text(JSON.stringify(body.right), { contentType: "application/json", headers })
      })

    const page = (endpoint: (request: MarketRequest) => Effect.Effect<unknown, MarketError>) =>
      data((principal, request) => endpoint({ principal, query: queryOf(request.url), origin }))

    type Route = readonly [HttpRouter.PathInput, Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest>]
    /** The endpoints a data type's service offers under its path; an endpoint it lacks is a 404. */
    const collection = (basePath: `/${string}`, service: CollectionEndpoints): ReadonlyArray<Route> => [
      ...(service.latest === undefined ? [] : [[`${basePath}/latest`, page(service.latest)] as const]),
      ...(service.asOf === undefined ? [] : [[`${basePath}/as-of`, page(service.asOf)] as const]),
      [`${basePath}/history`, page(service.history)],
      [`${basePath}/metadata`, data((principal, request) => service.metadata({ principal, query: queryOf(request.url) }))]
    ]

    const routes: ReadonlyArray<Route> = [
      ...collection(rentalPricesCollection.basePath, rental),
      ...collection(llmTokenPricesCollection.basePath, llm),
      ...collection(hardwarePricesCollection.basePath, hardware),
      ...collection(transactionsCollection.basePath, transactions),
      ...collection(indexesCollection.basePath, indexes),
      ["/v1/custom-index/current", data((principal, request) => indexes.legacyCurrent({ principal, query: queryOf(request.url) }))],
      ["/v1/info-index/available", data((principal, request) => indexes.legacyAvailable({ principal, query: queryOf(request.url) }))]
    ]
    const known = new Set<string>(routes.map(([path]) => path))
    const routed = yield* HttpRouter.toHttpApp(routes.reduce((r, [path, handler]) => HttpRouter.get(r, path, handler), HttpRouter.empty))

    const unrouted = Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
      const full = request.url.split("?", 1)[0]!
      const path = origin.prefix !== "" && full.startsWith(`${origin.prefix}/`) ? full.slice(origin.prefix.length) : full
      return known.has(path)
        ? problemResponse({ _tag: "MethodNotAllowed", method: request.method, allow: "GET" }, randomUUID())
        : problemResponse({ _tag: "RouteNotFound", path: full }, randomUUID())
    })

    // Served under the base URL's path (a standalone server at https://host/market), and without
    // it too (a proxy or host app that strips the prefix before handing the request on).
    const prefix = origin.prefix
    const unprefixed = prefix === "" ? routed : Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
      request.url.startsWith(`${prefix}/`)
        ? Effect.provideService(routed, HttpServerRequest.HttpServerRequest, request.modify({ url: request.url.slice(prefix.length) }))
        : routed)

    const app: HttpApp.Default<never, Scope.Scope> = unprefixed.pipe(
      Effect.catchTag("RouteNotFound", () => unrouted),
      Effect.catchAllCause((cause) =>
        Effect.as(Effect.logError("request failed", Cause.pretty(cause)), problemResponse({ _tag: "InternalError" }, randomUUID()))
      )
    )
    return app
  })
