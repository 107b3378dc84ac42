import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"

/**
 * `X-Content-Type-Options: nosniff` on every answer, whatever its status and type: a browser
 * then takes a body as the type it is labelled with and never guesses, so a JSON page or a
 * problem echoing a caller's text is never run as HTML or script, and a 304 refreshing a cached
 * copy keeps the header.
 */

/** The header, for answers written without the app (the server's own refusals). */
export const NOSNIFF = { "x-content-type-options": "nosniff" } as const

/** The app with `NOSNIFF` on every answer it gives. */
export const withNosniff = <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
  Effect.map(app, (response) => HttpServerResponse.setHeaders(response, NOSNIFF))
