import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import { readFile } from "node:fs/promises"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"

/**
 * The docs page: Swagger UI over `/openapi.json`, its scripts and styles served from the
 * installed `swagger-ui-dist` (no CDN: the page works on a machine without internet). Every URL
 * in the page starts with the base URL's path, so it loads behind a prefix too.
 */

const swaggerDir = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"))

/** The Swagger UI files the page uses, with their media types. */
const ASSETS: Readonly<Record<string, string>> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "favicon-32x32.png": "image/png"
}

/** The docs page for an API whose base URL has the path `prefix` (`""` at the root). */
export const docsPage = (prefix: string): string => {
  const assets = `${prefix}/docs/assets`
  const spec = JSON.stringify(`${prefix}/openapi.json`)
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>GPU Market Data API</title>
<link rel="stylesheet" href="${assets}/swagger-ui.css">
<link rel="icon" type="image/png" href="${assets}/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="${assets}/swagger-ui-bundle.js"></script>
<script>
window.ui = SwaggerUIBundle({ url: ${spec}, dom_id: "#swagger-ui", deepLinking: true, docExpansion: "list" })
</script>
</body>
</html>
`
}

/**
 * The Swagger UI assets as routes (`/docs/assets/<file>`); each file is read once, on first use.
 */
export const makeAssetRoutes = Effect.forEach(Object.entries(ASSETS), ([name, contentType]) =>
  Effect.map(Effect.cached(Effect.promise(() => readFile(join(swaggerDir, name)))), (file) =>
    [
      `/docs/assets/${name}` as const,
      Effect.map(file, (bytes) =>
        HttpServerResponse.uint8Array(bytes, { contentType, headers: { "cache-control": "public, max-age=86400" } }))
    ] as const))
