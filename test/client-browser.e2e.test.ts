import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createMarket, type Market } from "@gpu-market/core"
import { sqlite } from "@gpu-market/storage-sqlite"
import { build } from "esbuild"
import { existsSync } from "node:fs"
import { resolve } from "node:path"
import { type Browser, chromium } from "playwright-core"
import { seedMarket, tempDb } from "./support/adapters"
import { startHost } from "./support/host"

/**
 * `@gpu-market/client` in a browser: a script that imports it is bundled by esbuild for the
 * browser (no Node shims, no externals), the bundle is checked to hold nothing of Node or of the
 * market, and headless Chromium runs it against a live server: it reads every page of
 * `/v2/gpu/rental/prices/latest` with a bearer token by following `meta.next`.
 */

const ROOT = resolve(import.meta.dirname, "..")
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"
const ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
  "--disable-component-update", "--disable-sync"]

/** What the page runs: every page of a query through the client, each page's rows and next link. */
const SCRIPT = `
import { createClient, MarketProblemError } from "@gpu-market/client"
globalThis.readPages = async (baseUrl, token, query) => {
  const client = createClient({ baseUrl, token })
  const pages = []
  for await (const page of client.rental.prices.latest.pages(query)) {
    pages.push({ rows: page.data.map((row) => row.product_key), next: page.meta.next === null ? null : page.meta.next.url })
  }
  let refused = null
  try {
    await createClient({ baseUrl }).rental.prices.latest(query)
  } catch (e) {
    refused = e instanceof MarketProblemError ? { status: e.status, code: e.code } : String(e)
  }
  return { pages, refused }
}
`

describe("@gpu-market/client bundled for the browser, in Chromium against a live server", () => {
  const db = tempDb("client-browser")
  let direct: Market
  let host: Awaited<ReturnType<typeof startHost>>
  let browser: Browser | undefined
  let bundle: Awaited<ReturnType<typeof bundleScript>>

  const bundleScript = () => build({
    stdin: { contents: SCRIPT, resolveDir: ROOT, loader: "js", sourcefile: "browser-client.js" },
    absWorkingDir: ROOT, bundle: true, platform: "browser", format: "esm", write: false, metafile: true, logLevel: "silent"
  })

  beforeAll(async () => {
    bundle = await bundleScript()
    direct = await createMarket({ storage: sqlite(db) })
    await seedMarket(direct)
    host = await startHost(db)
    assert.isTrue(existsSync(CHROMIUM), `chromium not found at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`)
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS })
  }, 120_000)
  afterAll(async () => {
    await browser?.close()
    await host?.close()
    await direct?.close()
  })

  it("bundles with no node: import and none of the server, storage or services", () => {
    const [output] = bundle.outputFiles
    assert.notMatch(output!.text, /["']node:/)
    const inputs = Object.keys(bundle.metafile.inputs)
    assert.deepStrictEqual(inputs.filter((input) => input.startsWith("node:") || input.includes("(disabled)")), [])
    // Of ours, the client and core's browser-safe reads entry with what it imports; no Effect, no market.
    assert.deepStrictEqual(inputs.filter((input) => input !== "browser-client.js").sort(), [
      "packages/client/dist/client.js", "packages/client/dist/index.js", "packages/core/dist/adapters/endpoints.js",
      "packages/core/dist/adapters/problem.js", "packages/core/dist/adapters/reads.js", "packages/core/dist/reads.js"
    ])
  })

  it("reads a page with a token, follows meta.next to the last page, and throws a refusal as MarketProblemError", { timeout: 60_000 }, async () => {
    const page = await browser!.newPage()
    const requests: Array<{ url: string; authorization: string | undefined }> = []
    const errors: Array<string> = []
    page.on("pageerror", (e) => errors.push(e.message))
    page.on("request", (r) => requests.push({ url: r.url(), authorization: r.headers().authorization }))
    // The page is served from the API's origin, so its calls are same-origin, as an app's own page is.
    const pageUrl = `${host.origin}/app`
    await page.route(pageUrl, (route) => route.fulfill({
      contentType: "text/html", body: `<!doctype html><script type="module">${bundle.outputFiles[0]!.text}</script>`
    }))
    await page.goto(pageUrl)
    await page.waitForFunction(() => typeof (globalThis as { readPages?: unknown }).readPages === "function")
    const query = { vendor: "v-alpha", page_size: 7 }
    const read = await page.evaluate(([baseUrl, q]) => (globalThis as any).readPages(baseUrl, "all", q), [`${host.origin}/market`, query] as const)
    await page.close()

    const expected = (await direct.rental.prices.latest({ vendor: "v-alpha", page_size: 1000 }, { token: "all" })).data.map((r) => r.product_key)
    assert.isAbove(read.pages.length, 2)
    assert.deepStrictEqual(read.pages.flatMap((p: { rows: Array<string> }) => p.rows), expected)
    const nexts: Array<string | null> = read.pages.map((p: { next: string | null }) => p.next)
    assert.isNull(nexts.at(-1))
    for (const next of nexts.slice(0, -1)) assert.isTrue(next!.startsWith(`${host.origin}/market/v2/gpu/rental/prices/latest?page_token=`), next!)
    // The browser sent each page's request, the first by the query and the rest by meta.next, with the token.
    const calls = requests.filter((r) => r.url.includes("/v2/gpu/rental/prices/latest"))
    assert.deepStrictEqual(calls.slice(1, read.pages.length).map((r) => r.url), nexts.slice(0, -1))
    assert.deepStrictEqual(calls.slice(0, read.pages.length).map((r) => r.authorization), read.pages.map(() => "Bearer all"))
    assert.deepStrictEqual(read.refused, { status: 401, code: "unauthenticated" })
    assert.deepStrictEqual(errors, [])
  })
})
