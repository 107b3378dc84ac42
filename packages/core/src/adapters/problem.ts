import type { EventIdExpired, InvalidRecords, MarketError, ProcurementError } from "../errors.js"
import type { Problem } from "../schema/problem.js"

/**
 * The one mapping from errors to RFC 9457 problem bodies: status, `code`, title and detail. The
 * HTTP adapter sends these bodies; the Promise API, the worker and the HTTP client throw them as
 * `MarketProblemError`. Headers (`Retry-After`, `Allow`, …) stay with the HTTP adapter.
 */

/** Errors no market service raises, which an adapter reports as problems of its own. */
export type AdapterError =
  | { readonly _tag: "RouteNotFound"; readonly path: string }
  | { readonly _tag: "MethodNotAllowed"; readonly method: string; readonly allow: string }
  | { readonly _tag: "InternalError" }
  // Refusals of requests that never reached the app: HTTP/1.1 Node's parser could not read, or
  // too slowly sent, or without the `Host` it requires, or with an expectation no server meets.
  | { readonly _tag: "MalformedRequest"; readonly detail: string }
  | { readonly _tag: "ExpectationFailed"; readonly detail: string }
  | { readonly _tag: "RequestTimeout"; readonly detail: string }
  | { readonly _tag: "HeaderFieldsTooLarge"; readonly detail: string }

/** Everything that can become a problem. */
export type ProblemError = MarketError | ProcurementError | InvalidRecords | EventIdExpired | AdapterError

const STATUS = {
  Unauthenticated: [401, "unauthenticated", "Unauthorized"],
  InsufficientEntitlement: [403, "insufficient_entitlement", "Forbidden"],
  NotFound: [404, "not_found", "Not Found"],
  RouteNotFound: [404, "not_found", "Not Found"],
  MethodNotAllowed: [405, "method_not_allowed", "Method Not Allowed"],
  ValidationFailed: [422, "validation_failed", "Unprocessable Content"],
  InvalidRecords: [422, "invalid_records", "Unprocessable Content"],
  MissingAnchor: [400, "missing_anchor", "Bad Request"],
  SearchTooBroad: [400, "search_too_broad", "Bad Request"],
  RateLimited: [429, "rate_limited", "Too Many Requests"],
  StorageUnavailable: [503, "storage_unavailable", "Service Unavailable"],
  OfferExpired: [410, "offer_expired", "Gone"],
  EventIdExpired: [410, "event_id_expired", "Gone"],
  PayloadTooLarge: [413, "payload_too_large", "Content Too Large"],
  UnsupportedMediaType: [415, "unsupported_media_type", "Unsupported Media Type"],
  IdempotencyConflict: [422, "idempotency_conflict", "Unprocessable Content"],
  ProviderUnavailable: [503, "provider_unavailable", "Service Unavailable"],
  InternalError: [500, "internal_error", "Internal Server Error"],
  MalformedRequest: [400, "malformed_request", "Bad Request"],
  ExpectationFailed: [417, "expectation_failed", "Expectation Failed"],
  RequestTimeout: [408, "request_timeout", "Request Timeout"],
  HeaderFieldsTooLarge: [431, "header_fields_too_large", "Request Header Fields Too Large"]
} as const satisfies Record<ProblemError["_tag"], readonly [number, string, string]>

/** The status and `code` of the problem an error becomes, by its tag (for documentation). */
export const problemKind = (tag: ProblemError["_tag"]): { readonly status: number; readonly code: string } => {
  const [status, code] = STATUS[tag]
  return { status, code }
}

/** The problem body of an error. */
export const problemOf = (error: ProblemError, requestId: string): Problem => {
  const [status, code, title] = STATUS[error._tag]
  let detail: string
  const extra: { -readonly [K in "errors" | "anchors" | "history_starts_at"]?: Problem[K] } = {}
  switch (error._tag) {
    case "RouteNotFound":
      detail = `no endpoint at ${error.path}`
      break
    case "MethodNotAllowed":
      detail = `${error.method} is not allowed here; use ${error.allow}`
      break
    case "InternalError":
      detail = "the request failed unexpectedly; it has been logged"
      break
    case "ValidationFailed":
      detail = error.detail
      extra.errors = error.errors
      break
    case "InvalidRecords":
      // A record has no parameter name: its position in the batch stands in for one.
      detail = error.detail
      extra.errors = error.errors.map((e) => ({ parameter: `[${e.index}]`, message: e.message }))
      break
    case "MissingAnchor":
      detail = error.detail
      extra.anchors = error.anchors
      break
    case "InsufficientEntitlement":
      detail = error.detail
      if (error.history_starts_at !== undefined) extra.history_starts_at = error.history_starts_at
      break
    default:
      detail = error.detail
  }
  return { type: `/problems/${code}`, title, status, detail, code, request_id: requestId, ...extra }
}

/**
 * A failed call of the Promise API, the worker or the HTTP client: the RFC 9457 problem body the
 * HTTP API would have sent, with `status` and `code` at hand for a `catch`.
 */
export class MarketProblemError extends Error {
  override readonly name = "MarketProblemError"
  readonly status: number
  readonly code: string

  constructor(readonly problem: Problem, options?: { readonly cause?: unknown }) {
    super(`${problem.status} ${problem.code}: ${problem.detail}`, options)
    this.status = problem.status
    this.code = problem.code
  }
}
