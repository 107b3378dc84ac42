import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { varyWith } from "./transfer.js"

/**
 * Cross-origin requests from browser apps (the Fetch standard's CORS protocol): off unless
 * origins are listed; a listed origin's requests and preflights are answered with the CORS
 * headers, any other origin's get none, so its pages cannot read the answers.
 */

/** Which browser origins may call the API. */
export interface CorsOptions {
  /**
   * Origins whose pages may call the API, each `scheme://host[:port]` exactly as a browser sends
   * `Origin` (`https://app.example`: no path, no trailing slash). Empty: CORS stays off.
   */
  readonly origins: ReadonlyArray<string>
  /** Seconds a browser may reuse a preflight's answer; default 600 (browsers cap it: Chromium at 7,200). */
  readonly maxAgeSeconds?: number
}

/** Methods the API serves: the data API's GET, procurement's POST and DELETE. */
const ALLOW_METHODS = "GET, POST, DELETE"
/** Request headers a page may send: the token, revalidation, and procurement's body type and idempotency key. */
const ALLOW_HEADERS = "Authorization, If-None-Match, Content-Type, Idempotency-Key"
/** Response headers a page may read beyond the safelisted ones. */
const EXPOSE_HEADERS = "ETag, Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, X-Request-Id, Location"

/** Why `origin` is not one a browser sends, or undefined when it is. */
const originProblem = (origin: string): string | undefined => {
  let url: URL
  try {
    url = new URL(origin)
  } catch {
    return `${JSON.stringify(origin)} is not an origin; expected scheme://host[:port], e.g. https://app.example`
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return `${JSON.stringify(origin)} is not an http or https origin`
  return url.origin === origin ? undefined
    : `${JSON.stringify(origin)} is not an origin as browsers send it; did you mean ${url.origin}? (no path, no trailing slash, lower case)`
}

/**
 * The allowed origins of `--cors-origin` and `$GPU_MARKET_CORS_ORIGINS`: each value one origin
 * or a comma list of them (blanks ignored), or the first one that is not an origin, explained.
 */
export const parseCorsOrigins = (values: ReadonlyArray<string>): Either.Either<ReadonlyArray<string>, string> => {
  const origins = values.flatMap((v) => v.split(",")).map((o) => o.trim()).filter((o) => o !== "")
  const problem = origins.map(originProblem).find((p) => p !== undefined)
  return problem === undefined ? Either.right([...new Set(origins)]) : Either.left(problem)
}

/** Why `options` cannot be used, or undefined. */
export const corsOptionsProblem = (options: CorsOptions): string | undefined => {
  const maxAge = options.maxAgeSeconds
  if (maxAge !== undefined && !(Number.isInteger(maxAge) && maxAge >= 0)) return `cors.maxAgeSeconds: expected a whole number of seconds, got ${maxAge}`
  const problem = options.origins.map(originProblem).find((p) => p !== undefined)
  return problem === undefined ? undefined : `cors.origins: ${problem}`
}

/** The CORS protocol for the listed origins, as headers: what the app and the lean path both apply. */
export interface Cors {
  /** A preflight's 204 headers when `origin` is listed and the request is one (an `OPTIONS` naming a method), else undefined. */
  readonly preflight: (method: string, origin: string | undefined, requestMethod: string | undefined) => Record<string, string> | undefined
  /** The headers an answer to a request from `origin` gets, given the answer's own `vary`. */
  readonly headers: (origin: string | undefined, vary: string | undefined) => Record<string, string>
}

/** CORS for `options`, or undefined when it is off (no origins listed). */
export const makeCors = (options: CorsOptions | undefined): Cors | undefined => {
  if (options === undefined || options.origins.length === 0) return undefined
  const allowed = new Set(options.origins)
  const maxAge = String(options.maxAgeSeconds ?? 600)
  return {
    preflight: (method, origin, requestMethod) =>
      method !== "OPTIONS" || requestMethod === undefined || origin === undefined || !allowed.has(origin) ? undefined : {
        "access-control-allow-origin": origin,
        "access-control-allow-methods": ALLOW_METHODS,
        "access-control-allow-headers": ALLOW_HEADERS,
        "access-control-max-age": maxAge,
        vary: "Origin"
      },
    headers: (origin, vary) => origin === undefined || !allowed.has(origin)
      ? { vary: varyWith(vary, "Origin") }
      : { vary: varyWith(vary, "Origin"), "access-control-allow-origin": origin, "access-control-expose-headers": EXPOSE_HEADERS }
  }
}

/**
 * The app with CORS for the listed origins (unchanged when none are). A preflight from a listed
 * origin is answered here with 204, before routing and without a token (browsers send none);
 * one from any other origin goes on to the app like any OPTIONS request. Every answer says it
 * varies by `Origin`.
 */
export const withCors = (options: CorsOptions | undefined) => <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> => {
  const cors = makeCors(options)
  if (cors === undefined) return app
  return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const origin = request.headers["origin"]
    const preflight = cors.preflight(request.method, origin, request.headers["access-control-request-method"])
    if (preflight !== undefined) return Effect.succeed(HttpServerResponse.empty({ status: 204, headers: preflight }))
    return Effect.map(app, (response) => HttpServerResponse.setHeaders(response, cors.headers(origin, response.headers["vary"])))
  })
}
