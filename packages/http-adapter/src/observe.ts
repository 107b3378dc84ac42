import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { LATENCY_BUCKETS_SECONDS, labelsOf } from "@gpu-market/core/adapters"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Metric from "effect/Metric"
import { randomUUID } from "node:crypto"

/**
 * What the standalone server records of each request: one log line (method, route template,
 * status, duration, request id, principal id; never the token) and the request metrics. The
 * route template and the principal are set where they become known, in the request's own fiber,
 * and read here once the answer is made.
 */

/** The status of a request whose client left before its answer (nginx's 499): never sent, only recorded. */
export const CLIENT_CLOSED_REQUEST = 499

/** The route template (`/supply/offers/:offer_id`) of the request this fiber serves, once routed. */
export const currentRoute = FiberRef.unsafeMake<string | undefined>(undefined)

/** The principal the request this fiber serves authenticated as, once it has. */
export const currentPrincipal = FiberRef.unsafeMake<string | undefined>(undefined)

/** `handler` recording `path` as the route of its request. */
export const routedAs = <A, E, R>(path: string, handler: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.zipRight(FiberRef.set(currentRoute, path), handler)

/** The route label of a request no route took: raw paths would make a label value per URL. */
const UNMATCHED = "unmatched"

/** Paths probes and scrapers ask every few seconds: logged at debug, so they do not drown the log. */
const PROBES: ReadonlySet<string> = new Set(["/healthz", "/readyz", "/metrics"])

const requests = Metric.counter("gpu_market_http_requests_total", {
  description: "HTTP requests answered, by method, route template and status (499: the client left first).",
  incremental: true
})

const durations = Metric.histogram(
  "gpu_market_http_request_duration_seconds",
  LATENCY_BUCKETS_SECONDS,
  "Time from a request's head to its answer, by method and route template."
)

/** One answered request, as its log line and metrics see it. */
export interface Answered {
  readonly method: string
  readonly route: string
  readonly status: number
  readonly requestId: string
  readonly principalId: string | undefined
  readonly seconds: number
}

/** What a Node server hears of the answers given before the app: to log and count them as the app's. */
export interface Heard {
  /** An answer replayed from memory. */
  readonly replayed?: (answered: Answered) => void
  /** Any other request answered or ended without the app: the direct lane's, one whose client left. */
  readonly answered?: (answered: Answered) => void
}

/** Logs and counts one answered request. */
export const recordAnswered = (answered: Answered) => {
  const { method, route, status, seconds } = answered
  durations.unsafeUpdate(seconds, labelsOf({ method, route }))
  requests.unsafeUpdate(1, labelsOf({ method, route, status: String(status) }))
  const line = {
    method,
    route,
    status,
    duration_ms: Math.round(seconds * 1e6) / 1e3,
    request_id: answered.requestId,
    ...(answered.principalId === undefined ? {} : { principal_id: answered.principalId })
  }
  // The fields ride with the message rather than as annotations: annotating a line per request
  // cost a busy server more than the rest of a replayed answer. JSON logs spread them into the line.
  return PROBES.has(route) ? Effect.logDebug("request", line) : Effect.logInfo("request", line)
}

const replays = Metric.counter("gpu_market_http_replayed_total", {
  description: "Requests answered with a replayed /latest answer, without running the app (also counted in gpu_market_http_requests_total).",
  incremental: true
})

/** Logs and counts a request the server answered with a replayed answer, without the app. */
export const recordReplayed = (answered: Answered): Effect.Effect<void> => {
  replays.unsafeUpdate(1, labelsOf({ route: answered.route }))
  return recordAnswered(answered)
}

/** Logs and counts one finished request of the app, with the route and principal its fiber noted. */
const record = (request: HttpServerRequest.HttpServerRequest, status: number, requestId: string, started: number) =>
  Effect.gen(function* () {
    const seconds = (performance.now() - started) / 1000
    const route = (yield* FiberRef.get(currentRoute)) ?? UNMATCHED
    const principalId = yield* FiberRef.get(currentPrincipal)
    yield* recordAnswered({ method: request.method, route, status, requestId, principalId, seconds })
  })

/**
 * The app, each request logged and counted when answered (or when its client leaves first, as
 * 499). An answer without a request id gets one, so every log line can be found from its answer.
 */
export const observed = <R>(app: HttpApp.Default<never, R>): HttpApp.Default<never, R | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const started = performance.now()
    return app.pipe(
      Effect.flatMap((response) => {
        const requestId = response.headers["x-request-id"] ?? randomUUID()
        return Effect.as(
          record(request, response.status, requestId, started),
          response.headers["x-request-id"] === undefined ? HttpServerResponse.setHeader(response, "x-request-id", requestId) : response
        )
      }),
      Effect.onInterrupt(() => record(request, CLIENT_CLOSED_REQUEST, randomUUID(), started))
    )
  })
