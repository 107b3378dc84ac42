import { assert, describe, layer } from "@effect/vitest"
import * as Server from "@gpu-market/http-adapter"
import { Effect, Layer } from "effect"
import { existsSync } from "node:fs"
import { chromium } from "playwright-core"
import { procurementFixture } from "./support/procurement"
import { freePort } from "./support/process"

/**
 * The docs page in a real browser: headless Chromium opens `/docs` of a server listening on a
 * real port behind a base-URL prefix, and Swagger UI lists every path of `/openapi.json` (the
 * market's and the procurement service's), with every script, style and the spec loaded from
 * this server (no CDN).
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
    it.effect("lists every documented path, loading everything from this server behind the prefix", () =>
      Effect.gen(function* () {
        if (!existsSync(CHROMIUM)) {
          return yield* Effect.die(new Error(`chromium not found at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`))
        }
        const { url } = yield* Base
        const doc = yield* Effect.promise(() => fetch(`${url}/openapi.json`).then((r) => r.json() as Promise<{ paths: object }>))
        const documented = Object.keys(doc.paths).sort()
        assert.isAbove(documented.length, 10)
        // The procurement service is mounted, so it is documented (and listed) too.
        for (const path of ["/supply/get_offers", "/supply/procurements", "/supply/resources/{resource_id}"]) assert.include(documented, path)

        const browser = yield* Effect.acquireRelease(
          Effect.promise(() => chromium.launch({ executablePath: CHROMIUM, args: ARGS })),
          (b) => Effect.promise(() => b.close())
        )
        const page = yield* Effect.promise(() => browser.newPage())
        const requested: Array<string> = []
        const failed: Array<string> = []
        page.on("request", (r) => requested.push(r.url()))
        page.on("requestfailed", (r) => failed.push(r.url()))
        page.on("response", (r) => { if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`) })
        const response = yield* Effect.promise(() => page.goto(`${url}/docs`))
        assert.strictEqual(response?.status(), 200)
        yield* Effect.promise(() => page.waitForSelector(".opblock-summary-path", { timeout: 30_000 }))
        const listed = yield* Effect.promise(() =>
          page.$$eval(".opblock-summary-path", (els) => els.map((e) => (e.getAttribute("data-path") ?? e.textContent ?? "").replace(/\u200b/g, "").trim())))
        assert.deepStrictEqual([...new Set(listed)].sort(), documented)
        const title = yield* Effect.promise(() => page.textContent(".info .title"))
        assert.include(title ?? "", "GPU Market Data API")
        assert.deepStrictEqual(failed, [])
        // Everything came from this server, under the prefix: the page works without internet.
        for (const r of requested.filter((r) => !r.startsWith("data:"))) assert.isTrue(r.startsWith(`${url}/`), r)
        assert.include(requested, `${url}/openapi.json`)
        assert.include(requested, `${url}/docs/assets/swagger-ui-bundle.js`)
      }).pipe(Effect.scoped))
  })
})
