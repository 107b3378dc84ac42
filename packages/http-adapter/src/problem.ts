import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { type Answer, toResponse } from "./answer.js"
import { type Problem, problemOf } from "@gpu-market/core"
import type { AdapterError, ProblemError } from "@gpu-market/core/adapters"

/**
 * Problems as HTTP: the body comes from core's one mapping (`problemOf`); this module adds the
 * headers some problems carry and builds the `application/problem+json` response.
 */

/** Errors only HTTP has. */
export type HttpOnlyError = AdapterError

/** The problem body and extra headers for an error. */
export const toProblem = (
  error: ProblemError,
  requestId: string
): { readonly problem: Problem; readonly headers: Record<string, string> } => {
  const headers: Record<string, string> = {}
  switch (error._tag) {
    case "MethodNotAllowed":
      headers.allow = error.allow
      break
    case "Unauthenticated":
      headers["www-authenticate"] = 'Bearer realm="gpu-market"'
      break
    case "RateLimited":
      headers["retry-after"] = String(error.retry_after_seconds)
      break
  }
  return { problem: problemOf(error, requestId), headers }
}

/** A problem as an `application/problem+json` answer. */
export const problemAnswer = (error: ProblemError, requestId: string, headers: Record<string, string> = {}): Answer => {
  const p = toProblem(error, requestId)
  return {
    status: p.problem.status,
    contentType: "application/problem+json",
    headers: { ...headers, ...p.headers, "x-request-id": requestId },
    body: Buffer.from(JSON.stringify(p.problem))
  }
}

/** A problem as an `application/problem+json` response. */
export const problemResponse = (
  error: ProblemError,
  requestId: string,
  headers: Record<string, string> = {}
): HttpServerResponse.HttpServerResponse => toResponse(problemAnswer(error, requestId, headers))
