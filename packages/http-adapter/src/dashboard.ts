import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import { createHash, randomUUID } from "node:crypto"
import { readdir, readFile } from "node:fs/promises"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { problemResponse } from "./problem.js"

/**
 * The dashboard page: charts of what a token may see, drawn in the browser by plain ES modules
 * (this package's `dashboard/` folder) with uPlot (the installed `uplot`, no CDN), calling the
 * public API with the token the user enters. Its assets live under one versioned folder
 * (`/dashboard/assets/<version>/`), the version a hash of every file, so they are cached for a
 * year and a new release is fetched at once; the page itself is revalidated on every load.
 */

const ownDir = fileURLToPath(new URL("../dashboard/", import.meta.url))
const uplotDir = join(dirname(createRequire(import.meta.url).resolve("uplot/package.json")), "dist")

const JS = "text/javascript; charset=utf-8"
const CSS = "text/css; charset=utf-8"
const SVG = "image/svg+xml"

/** uPlot's files, as its package ships them. */
const UPLOT = [["uPlot.iife.min.js", JS], ["uPlot.min.css", CSS]] as const

/**
 * Self only, no inline script or style: the page runs nothing but its own files and talks to
 * nothing but this server, so an injected string cannot run and a token cannot leave. uPlot sets
 * styles through the CSSOM, which `style-src` does not govern.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self'", "connect-src 'self'",
  "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'"
].join("; ")

const PAGE_HEADERS = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "cache-control": "no-cache",
  "referrer-policy": "no-referrer"
}

/** The versioned assets never change under their URL. */
const ASSET_CACHE_CONTROL = "public, max-age=31536000, immutable"

interface Loaded {
  readonly version: string
  readonly files: ReadonlyMap<string, { readonly bytes: Uint8Array; readonly contentType: string }>
  /** The modules main.js imports, directly or not. */
  readonly modules: ReadonlyArray<string>
  readonly template: string
}

/**
 * Every asset: uPlot's files and each script, style and icon of the dashboard's folder, so a module
 * added there is served (and preloaded) without a list to keep in step.
 */
const load = Effect.promise(async (): Promise<Loaded> => {
  const own = (await readdir(ownDir)).filter((name) => /\.(js|css|svg)$/.test(name)).sort()
  const assets = [
    ...UPLOT.map(([name, contentType]) => ({ name, path: join(uplotDir, name), contentType })),
    ...own.map((name) => ({ name, path: join(ownDir, name), contentType: name.endsWith(".js") ? JS : name.endsWith(".svg") ? SVG : CSS }))
  ]
  const [template, ...bytes] = await Promise.all([readFile(join(ownDir, "page.html"), "utf8"), ...assets.map((a) => readFile(a.path))])
  const hash = createHash("sha256")
  assets.forEach((a, i) => hash.update(a.name).update("\0").update(bytes[i]!))
  return {
    version: hash.digest("base64url").slice(0, 12),
    files: new Map(assets.map((a, i) => [a.name, { bytes: bytes[i]!, contentType: a.contentType }])),
    modules: own.filter((name) => name.endsWith(".js") && name !== "main.js"),
    template: template
  }
})

/**
 * The page for an API whose base URL has the path `prefix` (`""` at the root). Every module is
 * named in a `modulepreload` link, so the browser fetches them all at once instead of one
 * level of imports after another.
 */
const pageOf = (loaded: Loaded, prefix: string) => {
  const assets = `${prefix}/dashboard/assets/${loaded.version}`
  return loaded.template
    .replaceAll("%PRELOAD%", loaded.modules.map((name) => `<link rel="modulepreload" href="${assets}/${name}">`).join("\n"))
    .replaceAll("%ASSETS%", assets)
    .replaceAll("%API%", prefix)
}

/**
 * The dashboard's routes: `/dashboard` and its assets; the files are read once, on first use.
 * An asset of another version (a page cached from an earlier release) is a 404, not today's file
 * under yesterday's name.
 */
export const makeDashboardRoutes = (prefix: string) =>
  Effect.gen(function* () {
    const loaded = yield* Effect.cached(load)
    const html = yield* Effect.cached(Effect.map(loaded, (l) => Buffer.from(pageOf(l, prefix))))
    const page = Effect.map(html, (body) =>
      HttpServerResponse.uint8Array(body, { contentType: "text/html; charset=utf-8", headers: PAGE_HEADERS }))
    const asset = Effect.zipWith(HttpServerRequest.HttpServerRequest, loaded, (request, l) => {
      const [version, name] = request.url.split("?", 1)[0]!.split("/").slice(-2)
      const file = version === l.version ? l.files.get(name ?? "") : undefined
      return file === undefined
        ? problemResponse({ _tag: "RouteNotFound", path: request.url }, randomUUID())
        : HttpServerResponse.uint8Array(file.bytes, {
          contentType: file.contentType,
          headers: { "cache-control": ASSET_CACHE_CONTROL }
        })
    })
    return [["/dashboard", page], ["/dashboard/assets/:version/:file", asset]] as const
  })
