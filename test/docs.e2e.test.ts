import { assert, describe, layer } from "@effect/vitest"
import * as Server from "@gpu-market/http-adapter"
import { Effect, Layer } from "effect"
import { existsSync } from "node:fs"
import { chromium } from "playwright-core"
import { procurementFixture } from "./support/procurement"
import { freePort } from "./support/process"

/**
 * The docs page in a real browser: headless Chromium opens `/docs` of a server listening on a
 * real port behind a base-URL prefix, and Redoc renders every operation of `/openapi.json` (the
 * market's and the procurement service's), with its script and the spec loaded from this server
 * (no CDN), under the page's Content-Security-Policy, with nothing logged as an error.
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"
const ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
  "--disable-component-update", "--disable-sync"]

class Base extends Effect.Service<Base>()("Test/DocsBase", { succeed: { url: "" as string } }) {}

const serverLayer = Layer.unwrapEffect(Effect.map(Effect.promise(freePort), (port) => {
  const url = `http://127.0.0.1:${port}/market`
  return Layer.merge(Server.layer({ port, host: "127.0.0.1", baseUrl: url }), Layer.succeed(Base, Base.make({ url })))
})).pipe(Layer.provide(procurementFixture("docs")))

describe("/docs in headless Chromium", () => {
  layer(serverLayer, { timeout: "120 seconds" })((it) => {
    it.effect("renders every documented operation from this server alone, behind the prefix, with no console error", () =>
      Effect.gen(function* () {
        if (!existsSync(CHROMIUM)) {
          return yield* Effect.die(new Error(`chromium not found at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`))
        }
        const { url } = yield* Base
        const doc = yield* Effect.promise(() =>
          fetch(`${url}/openapi.json`).then((r) => r.json() as Promise<{ paths: Record<string, Record<string, { operationId: string }>> }>))
        const documented = Object.keys(doc.paths).sort()
        assert.isAbove(documented.length, 10)
        const operations = Object.values(doc.paths).flatMap((item) => Object.values(item).map((op) => `operation/${op.operationId}`)).sort()
        // The procurement service is mounted, so it is documented (and listed) too.
        for (const path of ["/supply/get_offers", "/supply/procurements", "/supply/resources/{resource_id}"]) assert.include(documented, path)

        const browser = yield* Effect.acquireRelease(
          Effect.promise(() => chromium.launch({ executablePath: CHROMIUM, args: ARGS })),
          (b) => Effect.promise(() => b.close())
        )
        const page = yield* Effect.promise(() => browser.newPage())
        const requested: Array<string> = []
        const failed: Array<string> = []
        const errors: Array<string> = []
        page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") errors.push(m.text()) })
        page.on("pageerror", (e) => errors.push(String(e)))
        page.on("request", (r) => requested.push(r.url()))
        page.on("requestfailed", (r) => failed.push(r.url()))
        page.on("response", (r) => { if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`) })
        const response = yield* Effect.promise(() => page.goto(`${url}/docs`))
        assert.strictEqual(response?.status(), 200)
        assert.include(response?.headers()["content-security-policy"] ?? "", "script-src 'self';")
        yield* Effect.promise(() => page.waitForSelector("[data-section-id^='operation/']", { timeout: 30_000 }))
        // Each operation is a section of its own, named by its operationId.
        const rendered = yield* Effect.promise(() =>
          page.$$eval("[data-section-id^='operation/']", (els) => els.map((e) => e.getAttribute("data-section-id")!)))
        assert.deepStrictEqual([...new Set(rendered)].sort(), operations)
        const title = yield* Effect.promise(() => page.textContent("h1"))
        assert.include(title ?? "", "GPU Market Data API")
        // The paths are shown as written in the document, under the base URL.
        const body = yield* Effect.promise(() => page.textContent("body"))
        for (const path of ["/supply/get_offers", "/v2/gpu/rental/prices/latest"]) assert.include(body ?? "", path)
        assert.deepStrictEqual(failed, [])
        assert.deepStrictEqual(errors, [])
        // Everything came from this server, under the prefix: the page works without internet.
        // (The search worker is made from a `blob:` of the bundle, which is not a request.)
        for (const r of requested.filter((r) => !/^(data|blob):/.test(r))) assert.isTrue(r.startsWith(`${url}/`), r)
        assert.include(requested, `${url}/openapi.json`)
        assert.include(requested, `${url}/docs/assets/redoc.standalone.js`)
      }).pipe(Effect.scoped))
  })
})
