import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { LATENCY_BUCKETS_SECONDS, labelsOf } from "@gpu-market/core/adapters"
import type { Principal } from "@gpu-market/core"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import { randomUUID } from "node:crypto"
import type { Answer } from "./answer.js"

/**
 * What the standalone server records of each request: one log line (method, route template,
 * status, duration, request id, principal id; never the token) and the request metrics. The
 * route template and the principal are noted where they become known, on the request's
 * `RequestNotes` in the Effect context, and read here once the answer is made.
 */

/** The status of a request whose client left before its answer (nginx's 499): never sent, only recorded. */
export const CLIENT_CLOSED_REQUEST = 499

/**
 * The caller of a data or procurement request, once admitted: what its handler reads, provided
 * by the admission in front of it.
 */
export class Caller extends Context.Tag("@gpu-market/http-adapter/Caller")<Caller, Principal>() {}

/**
 * What the request log learns of one request while it is answered: the route template that took
 * it (`/supply/offers/:offer_id`) and the principal it was admitted as. One per request, provided
 * by `observed`; an app mounted without it (the handlers) notes nothing.
 */
export class RequestNotes extends Context.Tag("@gpu-market/http-adapter/RequestNotes")<RequestNotes, {
  route: string | undefined
  principalId: string | undefined
}>() {}

/** Notes `note` on the request's `RequestNotes`, where it has them. */
const noteOn = (note: (notes: RequestNotes["Type"]) => void): Effect.Effect<void> =>
  Effect.map(Effect.serviceOption(RequestNotes), Option.map(note))

/** Notes the principal a request was admitted as. */
export const notePrincipal = (principal: Principal): Effect.Effect<void> =>
  noteOn((notes) => {
    notes.principalId = principal.id
  })

/** `handler` noting `path` as the route of its request. */
export const routedAs = <A, E, R>(path: string, handler: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.zipRight(noteOn((notes) => {
    notes.route = path
  }), handler)

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
interface Answered {
  readonly method: string
  readonly route: string
  readonly status: number
  readonly requestId: string
  readonly principalId: string | undefined
  readonly seconds: number
}

/** Logs and counts one answered request. */
const recordAnswered = (answered: Answered) => {
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
  // cost a busy server more than the rest of a cached page. JSON logs spread them into the line.
  return PROBES.has(route) ? Effect.logDebug("request", line) : Effect.logInfo("request", line)
}

/** Logs and counts one finished request of the app, with the route and principal it noted. */
const record = (method: string, notes: RequestNotes["Type"], status: number, requestId: string, started: number) =>
  recordAnswered({
    method, route: notes.route ?? UNMATCHED, status, requestId, principalId: notes.principalId,
    seconds: (performance.now() - started) / 1000
  })

/**
 * The app, each request logged and counted when answered (or when its client leaves first, as
 * 499). An answer without a request id gets one, so every log line can be found from its answer.
 */
export const observed = <R>(
  app: HttpApp.Default<never, R>
): HttpApp.Default<never, Exclude<R, RequestNotes> | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const started = performance.now()
    const notes: RequestNotes["Type"] = { route: undefined, principalId: undefined }
    return app.pipe(
      Effect.flatMap((response) => {
        const requestId = response.headers["x-request-id"] ?? randomUUID()
        return Effect.as(
          record(request.method, notes, response.status, requestId, started),
          response.headers["x-request-id"] === undefined ? HttpServerResponse.setHeader(response, "x-request-id", requestId) : response
        )
      }),
      Effect.onInterrupt(() => record(request.method, notes, CLIENT_CLOSED_REQUEST, randomUUID(), started)),
      Effect.provideService(RequestNotes, notes)
    )
  })

/**
 * The lean path's `answer` to a request on `route`, logged and counted as `observed` does the
 * app's, with the caller the answer names.
 */
export const observedAnswer = (method: string, route: string, answer: Effect.Effect<Answer>): Effect.Effect<Answer> => {
  const started = performance.now()
  return answer.pipe(
    Effect.tap((answered) => record(method, { route, principalId: answered.caller?.id }, answered.status, answered.headers["x-request-id"] ?? randomUUID(), started)),
    Effect.onInterrupt(() => record(method, { route, principalId: undefined }, CLIENT_CLOSED_REQUEST, randomUUID(), started))
  )
}
