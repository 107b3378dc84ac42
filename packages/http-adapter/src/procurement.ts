import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import {
  Auth, Discovery, type DiscoveryRequest, Offers, type Principal, type ProcurementError, Procurements, Resources, UnsupportedMediaType, validationFailed
} from "@gpu-market/core"
import { refuseParameters, type RequestOrigin, requireProcurement } from "@gpu-market/core/adapters"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { randomUUID } from "node:crypto"
import { notePrincipal } from "./observe.js"
import { readBody } from "./body.js"
import { problemResponse } from "./problem.js"
import { queryOf, rateHeaders } from "./request.js"
import { type SupplyOperationId, supplyEndpoints } from "./supply-routes.js"

/**
 * The procurement service over HTTP, under the supply prefix (`/supply` by default), unversioned:
 * the endpoints of `supplyEndpoints`, each answered by its handler here.
 * Every path checks, in order: method (405, before auth, as the data paths do), bearer token
 * (401), the procurement grant (403), then the endpoint's own rules. Only `POST /get_offers`
 * is rate limited, and only it carries `X-RateLimit-*`.
 */

/** Largest JSON body `POST /procurements` reads. */
const MAX_JSON_BYTES = 16 * 1024
/** Largest body `POST /get_offers` reads; the core's own cap decides, this only bounds the read. */
const MAX_OFFER_BODY_BYTES = 16 * 1024

type Handler = Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest | HttpRouter.RouteContext>

/** One procurement path and the handler of each method it takes. */
export type SupplyRoute = readonly [path: HttpRouter.PathInput, handler: Handler]

/** What a handler answers: a status, a JSON body and extra headers. */
interface Reply {
  readonly status: number
  readonly body: unknown
  readonly headers?: Record<string, string>
}


/**
 * Which of `types` the request's `Content-Type` is (parameters allowed, a `charset` only if
 * UTF-8), else the 415 that names what to send.
 */
const requireMediaType = <const T extends string>(
  request: HttpServerRequest.HttpServerRequest,
  ...types: readonly [T, ...Array<T>]
): Effect.Effect<T, UnsupportedMediaType> => {
  const header = request.headers["content-type"] ?? ""
  const [essence, ...params] = header.split(";").map((s) => s.trim().toLowerCase())
  const charset = params.find((p) => p.startsWith("charset="))?.slice(8).replace(/"/g, "")
  const type = types.find((t) => t === essence)
  return type !== undefined && (charset === undefined || charset === "utf-8" || charset === "utf8")
    ? Effect.succeed(type)
    : Effect.fail(new UnsupportedMediaType({
        detail: `send the body as Content-Type: ${types.join(" or ")}${header === "" ? "" : ` (got ${JSON.stringify(header.slice(0, 100))})`}`,
        accept: types.join(", ")
      }))
}

/**
 * The procurement routes under `prefix`, or none when the app's context lacks the procurement
 * services: an app built without a supply provider serves the market alone.
 */
export const makeSupplyRoutes = (options: {
  readonly prefix: `/${string}`
  /** Where a request's links lead (`origin.ts`). */
  readonly originOf: (request: HttpServerRequest.HttpServerRequest) => RequestOrigin
}) =>
  Effect.gen(function* () {
    const services = Option.all({
      auth: yield* Effect.serviceOption(Auth),
      discovery: yield* Effect.serviceOption(Discovery),
      offers: yield* Effect.serviceOption(Offers),
      procurements: yield* Effect.serviceOption(Procurements),
      resources: yield* Effect.serviceOption(Resources)
    })
    if (Option.isNone(services)) return [] as ReadonlyArray<SupplyRoute>
    const { auth, discovery, offers, procurements, resources } = services.value
    const listOrigin = (request: HttpServerRequest.HttpServerRequest): RequestOrigin => {
      const origin = options.originOf(request)
      return { origin: origin.origin, prefix: origin.prefix + options.prefix }
    }

    /**
     * Authenticates, checks the grant, runs the endpoint and answers JSON or a problem. `headers`
     * an endpoint sets go on either answer (the rate-limit state of `get_offers`).
     */
    const serve = (
      run: (
        principal: Principal,
        request: HttpServerRequest.HttpServerRequest,
        params: Readonly<Record<string, string | undefined>>,
        headers: Record<string, string>
      ) => Effect.Effect<Reply, ProcurementError>
    ): Handler =>
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const params = yield* HttpRouter.params
        const requestId = randomUUID()
        const principal = yield* Effect.either(Effect.tap(auth.authenticate(request.headers.authorization), requireProcurement))
        if (Either.isLeft(principal)) return problemResponse(principal.left, requestId)
        yield* notePrincipal(principal.right)
        const headers: Record<string, string> = {}
        const reply = yield* Effect.either(run(principal.right, request, params, headers))
        if (Either.isLeft(reply)) {
          const e = reply.left
          if (e._tag === "RateLimited") Object.assign(headers, rateHeaders({ limit: e.limit, remaining: 0, resetSeconds: e.retry_after_seconds }))
          return problemResponse(e, requestId, headers)
        }
        return HttpServerResponse.text(JSON.stringify(reply.right.body), {
          status: reply.right.status,
          contentType: "application/json",
          headers: { ...headers, ...reply.right.headers, "x-request-id": requestId }
        })
      })

    const ok = (body: unknown): Reply => ({ status: 200, body })
    /** A GET that takes no query parameters. */
    const plain = <A>(call: (principal: Principal, params: Readonly<Record<string, string | undefined>>) => Effect.Effect<A, ProcurementError>) =>
      serve((principal, request, params) =>
        Effect.zipRight(refuseParameters(queryOf(request.url)), Effect.map(call(principal, params), ok)))

    /** A discovery list; the service refuses any query parameter. */
    const discover = (list: (request: DiscoveryRequest) => Effect.Effect<unknown, ProcurementError>) =>
      serve((principal, request) => Effect.map(list({ principal, query: queryOf(request.url) }), ok))

    const getOffers = serve((principal, request, _params, headers) =>
      Effect.gen(function* () {
        Object.assign(headers, rateHeaders(yield* offers.admit(principal)))
        const type = yield* requireMediaType(request, "application/yaml", "application/json")
        const body = yield* readBody(request, MAX_OFFER_BODY_BYTES)
        return ok(yield* offers.offersFor(principal, body, type === "application/json" ? "json" : "yaml"))
      }))

    const createProcurement = serve((principal, request) =>
      Effect.gen(function* () {
        yield* requireMediaType(request, "application/json")
        const bytes = yield* readBody(request, MAX_JSON_BYTES)
        let body: unknown
        try {
          body = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes))
        } catch {
          return yield* Effect.fail(validationFailed([{ parameter: "body", message: "not valid JSON" }]))
        }
        const result = yield* procurements.create({ principal, body, idempotencyKey: request.headers["idempotency-key"] })
        const id = result.procurement.procurement_id
        return result.created
          ? { status: 201, body: result.procurement, headers: { location: `${listOrigin(request).prefix}/procurements/${id}` } }
          : ok(result.procurement)
      }))

    const byMethod = (methods: Readonly<Record<string, Handler>>): Handler =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
        methods[request.method] ??
          Effect.succeed(problemResponse({ _tag: "MethodNotAllowed", method: request.method, allow: Object.keys(methods).join(", ") }, randomUUID())))

    const handlers: Record<SupplyOperationId, Handler> = {
      supply_gpus: discover(discovery.gpus),
      supply_vendors: discover(discovery.vendors),
      supply_regions: discover(discovery.regions),
      supply_contracts: discover(discovery.contracts),
      supply_storage_options: discover(discovery.storageOptions),
      supply_get_offers: getOffers,
      supply_offer: plain((principal, params) => offers.offer({ principal, offerId: params.offer_id ?? "" })),
      supply_create_procurement: createProcurement,
      supply_procurement: plain((principal, params) => procurements.get({ principal, procurementId: params.procurement_id ?? "" })),
      supply_list_resources: serve((principal, request) =>
        Effect.map(resources.list({ principal, query: queryOf(request.url), origin: listOrigin(request) }), ok)),
      supply_resource: plain((principal, params) => resources.get({ principal, resourceId: params.resource_id ?? "" })),
      supply_delete_resource: serve((principal, request, params) =>
        Effect.zipRight(
          refuseParameters(queryOf(request.url)),
          Effect.map(resources.delete({ principal, resourceId: params.resource_id ?? "" }), (r): Reply => ({
            status: r.status === "deleted" ? 200 : 202,
            body: r
          }))
        ))
    }

    // The documented table decides the paths and methods: one route per path, its methods in table order.
    const methods = new Map<string, Record<string, Handler>>()
    for (const endpoint of supplyEndpoints) {
      methods.set(endpoint.path, { ...methods.get(endpoint.path), [endpoint.method]: handlers[endpoint.operationId] })
    }
    const routes = [...methods].map(([path, handler]): SupplyRoute => [`${options.prefix}${path}`, byMethod(handler)])
    return routes
  })
