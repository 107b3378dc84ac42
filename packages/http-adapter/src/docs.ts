import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import { readFile } from "node:fs/promises"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"

/**
 * The docs page: Redoc over `/openapi.json`, its one script served from the installed `redoc`
 * package's standalone bundle (no CDN, no telemetry: the page works on a machine without
 * internet and talks to nothing but this server). Every URL in the page starts with the base
 * URL's path, so it loads behind a prefix too.
 */

const redocBundle = join(dirname(createRequire(import.meta.url).resolve("redoc/package.json")), "bundles", "redoc.standalone.js")

/**
 * No inline script, and nothing fetched but this server's own files. Redoc draws with
 * styled-components, which writes `<style>` elements (hence `'unsafe-inline'` for styles only,
 * which runs no code), and runs its search in a worker made from a `blob:`.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'", "script-src 'self'", "style-src 'self' 'unsafe-inline'", "img-src 'self' data:",
  "font-src 'self'", "connect-src 'self'", "worker-src blob:", "base-uri 'none'", "form-action 'none'",
  "frame-ancestors 'none'"
].join("; ")

/** The docs page for an API whose base URL has the path `prefix` (`""` at the root). */
export const docsPage = (prefix: string): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.text(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>GPU Market Data API</title>
<link rel="icon" href="data:,">
</head>
<body>
<redoc spec-url="${prefix}/openapi.json"></redoc>
<script src="${prefix}/docs/assets/redoc.standalone.js"></script>
</body>
</html>
`, {
    contentType: "text/html; charset=utf-8",
    headers: { "content-security-policy": CONTENT_SECURITY_POLICY, "referrer-policy": "no-referrer" }
  })

/**
 * The one outside URL Redoc's bundle loads: Redocly's logo beside "API docs by Redocly", fetched
 * from their CDN on every visit. It is served as an empty image instead, so a visit is seen by
 * this server alone (and the page's CSP has nothing to refuse).
 */
const REDOCLY_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"
const EMPTY_IMAGE = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg'/%3E"

/** Redoc's bundle as a route (`/docs/assets/redoc.standalone.js`), read once, on first use. */
export const makeAssetRoutes = Effect.map(Effect.cached(Effect.promise(async () =>
  Buffer.from((await readFile(redocBundle, "utf8")).replaceAll(REDOCLY_LOGO, EMPTY_IMAGE)))), (file) => [
  [
    "/docs/assets/redoc.standalone.js" as const,
    Effect.map(file, (bytes) =>
      HttpServerResponse.uint8Array(bytes, { contentType: "text/javascript; charset=utf-8", headers: { "cache-control": "public, max-age=86400" } }))
  ] as const
])
