import { HttpServerResponse } from "@effect/platform"
import type { MarketError, Problem } from "@gpu-market/core"

/**
 * The one place where errors become HTTP: status, `code`, title and extra headers of every
 * RFC 9457 problem this adapter sends.
 */

/** Errors only HTTP has. */
export type HttpOnlyError =
  | { readonly _tag: "RouteNotFound"; readonly path: string }
  | { readonly _tag: "MethodNotAllowed"; readonly method: string; readonly allow: string }
  | { readonly _tag: "InternalError" }

const STATUS = {
  Unauthenticated: [401, "unauthenticated", "Unauthorized"],
  InsufficientEntitlement: [403, "insufficient_entitlement", "Forbidden"],
  NotFound: [404, "not_found", "Not Found"],
  RouteNotFound: [404, "not_found", "Not Found"],
  MethodNotAllowed: [405, "method_not_allowed", "Method Not Allowed"],
  ValidationFailed: [422, "validation_failed", "Unprocessable Content"],
  MissingAnchor: [400, "missing_anchor", "Bad Request"],
  SearchTooBroad: [400, "search_too_broad", "Bad Request"],
  RateLimited: [429, "rate_limited", "Too Many Requests"],
  StorageUnavailable: [503, "storage_unavailable", "Service Unavailable"],
  InternalError: [500, "internal_error", "Internal Server Error"]
} as const satisfies Record<(MarketError | HttpOnlyError)["_tag"], readonly [number, string, string]>

/** The problem body and extra headers for an error. */
export const toProblem = (
  error: MarketError | HttpOnlyError,
  requestId: string
): { readonly problem: Problem; readonly headers: Record<string, string> } => {
  const [status, code, title] = STATUS[error._tag]
  const headers: Record<string, string> = {}
  let detail: string
  const extra: { -readonly [K in "errors" | "anchors" | "history_starts_at"]?: Problem[K] } = {}
  switch (error._tag) {
    case "RouteNotFound":
      detail = `no endpoint at ${error.path}`
      break
    case "MethodNotAllowed":
      detail = `${error.method} is not allowed here; use ${error.allow}`
      headers.allow = error.allow
      break
    case "InternalError":
      detail = "the request failed unexpectedly; it has been logged"
      break
    case "Unauthenticated":
      detail = error.detail
      headers["www-authenticate"] = 'Bearer realm="gpu-market"'
      break
    case "RateLimited":
      detail = error.detail
      headers["retry-after"] = String(error.retry_after_seconds)
      break
    case "ValidationFailed":
      detail = error.detail
      extra.errors = error.errors
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
  return { problem: { type: `/problems/${code}`, title, status, detail, code, request_id: requestId, ...extra }, headers }
}

/** A problem as an `application/problem+json` response. */
export const problemResponse = (
  error: MarketError | HttpOnlyError,
  requestId: string,
  headers: Record<string, string> = {}
): HttpServerResponse.HttpServerResponse => {
  const p = toProblem(error, requestId)
  return HttpServerResponse.text(JSON.stringify(p.problem), {
    status: p.problem.status,
    contentType: "application/problem+json",
    headers: { ...headers, ...p.headers, "x-request-id": requestId }
  })
}
