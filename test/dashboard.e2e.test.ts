import { assert, describe, layer } from "@effect/vitest"
import { marketLayer, procurementLayer, simulatedProviderLayer } from "@gpu-market/core"
import * as Demo from "@gpu-market/demo"
import * as Server from "@gpu-market/http-adapter"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Effect, Layer } from "effect"
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { type Browser, chromium, type Page } from "playwright-core"
import { freePort } from "./support/process"

/**
 * The dashboard in a real browser: headless Chromium opens `/dashboard` of a server on a real
 * port behind a base-URL prefix, over a small demo market (every data type, the demo tokens,
 * procurement). With `demo-all` every chart is drawn with data (its canvas holds the series'
 * pixels, its table the rows), nothing leaves the server's origin, the token never appears in a
 * URL, and the console stays clean; with `demo-rental` the charts it may not see say so.
 * A screenshot of the run is kept in test-artifacts/dashboard.png.
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"
const ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
  "--disable-component-update", "--disable-sync"]
const ARTIFACTS = resolve(import.meta.dirname, "../test-artifacts")
/** Days of demo history: enough for every chart to have a line, few enough to seed in seconds. */
const DAYS = 10
const CHARTS = ["index-history", "reference", "rental", "hardware", "llm"]

class Base extends Effect.Service<Base>()("Test/DashboardBase", { succeed: { url: "" as string } }) {}

const demoMarket = Layer.unwrapScoped(Effect.map(
  Effect.acquireRelease(Effect.sync(() => mkdtempSync(join(tmpdir(), "gpu-market-dashboard-"))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))),
  (dir) => Layer.effectDiscard(Demo.seedDemo({ days: DAYS })).pipe(
    Layer.provideMerge(procurementLayer.pipe(Layer.provide(simulatedProviderLayer()))),
    Layer.provideMerge(marketLayer),
    Layer.provideMerge(SqliteStorage.layer({ filename: join(dir, "market.db") }))
  )))

const serverLayer = Layer.unwrapEffect(Effect.map(Effect.promise(freePort), (port) => {
  const url = `http://127.0.0.1:${port}/market`
  return Layer.merge(Server.layer({ port, host: "127.0.0.1", baseUrl: url }), Layer.succeed(Base, Base.make({ url })))
})).pipe(Layer.provide(demoMarket))

const launch = Effect.acquireRelease(
  Effect.suspend(() => existsSync(CHROMIUM)
    ? Effect.promise(() => chromium.launch({ executablePath: CHROMIUM, args: ARGS }))
    : Effect.die(new Error(`chromium not found at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`))),
  (b) => Effect.promise(() => b.close())
)

/** What a page did: every request, failures and answers of 400 or more, console errors, uncaught errors. */
interface Watched {
  readonly page: Page
  readonly requested: Array<string>
  readonly failed: Array<string>
  readonly consoleErrors: Array<string>
  readonly pageErrors: Array<string>
}

const watchedPage = (browser: Browser, width: number) => Effect.promise(async (): Promise<Watched> => {
  const page = await browser.newPage({ viewport: { width, height: 900 } })
  const w: Watched = { page, requested: [], failed: [], consoleErrors: [], pageErrors: [] }
  page.on("request", (r) => w.requested.push(r.url()))
  page.on("requestfailed", (r) => w.failed.push(r.url()))
  page.on("response", (r) => { if (r.status() >= 400) w.failed.push(`${r.status()} ${r.url()}`) })
  page.on("console", (m) => { if (m.type() === "error") w.consoleErrors.push(m.text()) })
  page.on("pageerror", (e) => w.pageErrors.push(e.message))
  return w
})

/**
 * Opens the dashboard, enters `token` as a user does, and waits until every panel has settled.
 * With `slowLibrary`, uPlot is held back until the rental prices have arrived, as on a slow
 * link: the charts must wait for it rather than fail.
 */
const signIn = (w: Watched, url: string, token: string, slowLibrary = false) => Effect.promise(async () => {
  const response = await w.page.goto(`${url}/dashboard`)
  assert.strictEqual(response?.status(), 200)
  if (slowLibrary) {
    const data = w.page.waitForResponse((r) => r.url().includes("/v2/gpu/rental/prices/latest?"))
    await w.page.route("**/uPlot.iife.min.js", async (route) => {
      await data
      await route.continue()
    })
  }
  await w.page.fill("#token", token)
  await Promise.all([w.page.waitForNavigation(), w.page.press("#token", "Enter")])
  await w.page.waitForSelector("body[data-ready]", { timeout: 30_000 })
})

/** Pixels of a section's chart canvas that are strongly coloured (series; the axes and grid are grey), or near `rgb`. */
const colouredPixels = (page: Page, section: string, rgb?: readonly [number, number, number]) =>
  Effect.promise(() => page.$eval(`#${section} .chart canvas`, (canvas: any, target) => {
    const { data } = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height)
    let n = 0
    for (let i = 0; i < data.length; i += 4) {
      const [r, g, b, a] = [data[i]!, data[i + 1]!, data[i + 2]!, data[i + 3]!]
      if (a < 200) continue
      if (target === undefined ? Math.max(r, g, b) - Math.min(r, g, b) > 80
        : Math.abs(r - target[0]) + Math.abs(g - target[1]) + Math.abs(b - target[2]) < 40) n++
    }
    return n
  }, rgb))

const stateOf = (page: Page, section: string) => Effect.promise(() => page.$eval(`#${section}`, (s: any) => s.dataset.state as string))
const textOf = (page: Page, selector: string) => Effect.promise(async () => (await page.textContent(selector)) ?? "")
const countOf = (page: Page, selector: string) => Effect.promise(() => page.$$eval(selector, (els) => els.length))

const api = (url: string, path: string, token = "demo-all") =>
  Effect.promise(() => fetch(`${url}${path}`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.json() as Promise<any>))

describe("/dashboard in headless Chromium", () => {
  layer(serverLayer, { timeout: "180 seconds", excludeTestServices: true })((it) => {
    it.effect("serves the page under a strict CSP and its assets versioned, cached for a year", () =>
      Effect.gen(function* () {
        const { url } = yield* Base
        const page = yield* Effect.promise(() => fetch(`${url}/dashboard`))
        assert.strictEqual(page.status, 200)
        const csp = page.headers.get("content-security-policy") ?? ""
        // Self only: nothing inline, nothing from elsewhere, no form posted anywhere.
        assert.sameMembers(csp.split(";").map((d) => d.trim()), [
          "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self'", "connect-src 'self'",
          "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'"
        ])
        const html = yield* Effect.promise(() => page.text())
        assert.notMatch(html, /<script>|<style|\sstyle=|\son[a-z]+=/, "no inline script or style")
        const assets = [...html.matchAll(/(?:src|href)="([^"]+\/dashboard\/assets\/[^"]+)"/g)].map((m) => m[1]!)
        assert.includeMembers(assets.map((a) => a.split("/").at(-1)), ["uPlot.iife.min.js", "main.js", "dashboard.css"])
        for (const asset of assets) {
          assert.isTrue(asset.startsWith("/market/dashboard/assets/"), asset)
          const r = yield* Effect.promise(() => fetch(new URL(asset, url)))
          assert.strictEqual(r.status, 200, asset)
          assert.strictEqual(r.headers.get("cache-control"), "public, max-age=31536000, immutable")
        }
        // An asset under another version is not today's file under yesterday's name.
        const stale = yield* Effect.promise(() => fetch(new URL(assets[0]!.replace(/assets\/[^/]+\//, "assets/0ld-version/"), url)))
        assert.strictEqual(stale.status, 404)
      }))

    it.effect("demo-all: every chart drawn with data, from this origin only, token never in a URL, a clean console", () =>
      Effect.gen(function* () {
        const { url } = yield* Base
        const browser = yield* launch
        const w = yield* watchedPage(browser, 1280)
        yield* signIn(w, url, "demo-all")
        const { page } = w

        for (const id of CHARTS) {
          assert.strictEqual(yield* stateOf(page, id), "drawn", `${id}: ${yield* textOf(page, `#${id} .summary`)}`)
          assert.isAbove(yield* colouredPixels(page, id), 150, `${id}: series drawn on the canvas`)
          assert.isAbove(yield* countOf(page, `#${id} .table tbody tr`), 0, `${id}: a table of the values`)
          const label = yield* Effect.promise(() => page.getAttribute(`#${id} .chart`, "aria-label"))
          assert.isAbove((label ?? "").length, 40, `${id}: the chart's summary is its accessible name`)
        }
        assert.include(yield* textOf(page, "#status"), "5 charts drawn")

        // The index with its band and the value as of today, from /as-of.
        assert.include(yield* textOf(page, "#index-history .summary"), "The shaded band runs from p5 to p95")
        assert.match(yield* textOf(page, "#index-history .headline"), /^As of \d{4}-\d{2}-\d{2}: \$\d/)
        // 30-minute values of the same index, then the daily ones as they stood at an earlier date.
        const drawnWith = (text: string, part = "summary") => Effect.promise(() => page.waitForFunction(([t, p]) =>
          (globalThis as any).document.querySelector("#index-history")?.getAttribute("data-state") === "drawn" &&
          (globalThis as any).document.querySelector(`#index-history .${p}`)?.textContent?.includes(t), [text, part] as const))
        yield* Effect.promise(() => page.check("#index-history input[value=intraday]"))
        yield* drawnWith("30-minute values")
        assert.isAbove(yield* colouredPixels(page, "index-history"), 150)
        yield* Effect.promise(() => page.check("#index-history input[value=daily]"))
        yield* drawnWith("daily values")
        const daysBack = new Date(Date.now() - 3 * 86_400_000).toISOString().slice(0, 10)
        yield* Effect.promise(() => page.fill("#index-history input[name=asof]", daysBack))
        yield* drawnWith(`As of ${daysBack}:`, "headline")
        assert.match(yield* textOf(page, "#index-history .headline"), new RegExp(`^As of ${daysBack}: \\$\\d`))
        const newest = yield* textOf(page, "#index-history tbody tr:first-child td:first-child")
        assert.isTrue(newest <= daysBack, `nothing after the as-of date: ${newest}`)

        // The reference price with the per-GPU indices it is the mean of.
        const referenceHeads = yield* Effect.promise(() => page.$$eval("#reference thead th", (ths) => ths.map((t) => t.textContent)))
        assert.includeMembers(referenceHeads, ["Reference price", "h100-sxm", "h200-sxm", "a100-sxm-80gb", "b200"])

        // The cheapest H100 offer is the API's cheapest, and its link shows its row.
        const cheapest = (yield* api(url, "/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm&sort_by=price_usd_per_gpu_hour&page_size=1")).data[0]
        const firstRow = yield* Effect.promise(() => page.$$eval("#rental .cheapest tbody tr:first-child td", (tds) => tds.map((t) => t.textContent)))
        assert.strictEqual(firstRow[0], cheapest.vendor)
        assert.strictEqual(firstRow[4], `$${cheapest.price_usd_per_gpu_hour.toFixed(4)}`)
        assert.strictEqual(yield* countOf(page, "#rental .cheapest tbody tr"), 10)
        assert.strictEqual(yield* Effect.promise(() => page.textContent("#rental .row")), "")
        yield* Effect.promise(() => page.click("#rental .cheapest tbody tr:first-child a"))
        yield* Effect.promise(() => page.waitForSelector("#rental .row pre"))
        const shownRow = JSON.parse(yield* textOf(page, "#rental .row pre"))
        assert.strictEqual(shownRow[0].price_usd_per_gpu_hour, cheapest.price_usd_per_gpu_hour)
        // Both contracts are drawn apart: spot among the on-demand prices.
        assert.include(yield* textOf(page, "#rental .summary"), "Spot median")

        // A model with a flagged price: the outlier is drawn in its own colour and named in the table.
        const models = (yield* api(url, "/v2/llm/token/prices/metadata")).data.models.map((m: any) => m.model)
        let flagged: { model: string; outliers: number } | undefined
        for (const model of models) {
          const rows = (yield* api(url, `/v2/llm/token/prices/latest?model=${model}&page_size=1000`)).data
          const outliers = rows.filter((r: any) => r.is_price_outlier).length
          if (outliers > 0) { flagged = { model, outliers }; break }
        }
        assert.isDefined(flagged, "the demo plants outliers")
        yield* Effect.promise(() => page.selectOption("#llm select", flagged!.model))
        yield* Effect.promise(() => page.waitForFunction((model) =>
          (globalThis as any).document.querySelector("#llm")?.getAttribute("data-state") === "drawn" &&
          (globalThis as any).document.querySelector("#llm .summary")?.textContent?.startsWith(`${model}:`), flagged!.model))
        assert.strictEqual(yield* countOf(page, "#llm .table .outlier"), flagged!.outliers)
        assert.include(yield* textOf(page, "#llm .summary"), "Outliers (marked)")
        assert.isAbove(yield* colouredPixels(page, "llm", [0xe0, 0x31, 0x31]), 20, "outliers drawn in red")

        // Keyboard: another GPU chosen with the arrow key redraws the rental chart.
        const before = yield* textOf(page, "#rental .summary")
        yield* Effect.promise(() => page.focus("#rental select"))
        yield* Effect.promise(() => page.keyboard.press("ArrowDown"))
        yield* Effect.promise(() => page.waitForFunction((old) =>
          (globalThis as any).document.querySelector("#rental")?.getAttribute("data-state") === "drawn" &&
          (globalThis as any).document.querySelector("#rental .summary")?.textContent !== old, before))

        // Offers for a token with the procurement grant.
        yield* Effect.promise(() => page.click("#offers button[type=submit]"))
        yield* Effect.promise(() => page.waitForSelector("#offers[data-state=answered]"))
        assert.isAbove(yield* countOf(page, "#offers tbody tr"), 0, yield* textOf(page, "#offers .summary"))

        mkdirSync(ARTIFACTS, { recursive: true })
        yield* Effect.promise(() => page.screenshot({ path: join(ARTIFACTS, "dashboard.png"), fullPage: true }))

        // A phone's width: one column, nothing wider than the screen, charts fitted to it.
        yield* Effect.promise(() => page.setViewportSize({ width: 390, height: 800 }))
        yield* Effect.promise(() => page.waitForFunction(() =>
          [...(globalThis as any).document.querySelectorAll(".chart canvas")].every((c) => c.getBoundingClientRect().width <= 370)))
        assert.isAtMost(yield* Effect.promise(() => page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth)), 390)

        const origin = new URL(url).origin
        assert.deepStrictEqual(w.failed, [])
        assert.deepStrictEqual(w.consoleErrors, [])
        assert.deepStrictEqual(w.pageErrors, [])
        for (const r of w.requested.filter((r) => !r.startsWith("data:"))) {
          assert.isTrue(r.startsWith(`${url}/`), `left the origin or the prefix: ${r}`)
          assert.notInclude(r, "demo-all", "the token is never in a URL")
        }
        assert.isTrue(w.requested.some((r) => r.startsWith(`${origin}/market/v2/gpu/hardware/prices/history?`)))
        assert.strictEqual(yield* Effect.promise(() => page.evaluate(() => (globalThis as any).sessionStorage.getItem("gpu-market-token"))), "demo-all")
      }).pipe(Effect.scoped))

    it.effect("demo-rental: what it may see is drawn (uPlot arriving after the data), what it may not is said in words", () =>
      Effect.gen(function* () {
        const { url } = yield* Base
        const browser = yield* launch
        const w = yield* watchedPage(browser, 1280)
        yield* signIn(w, url, "demo-rental", true)
        const { page } = w
        for (const id of ["index-history", "rental"]) {
          assert.strictEqual(yield* stateOf(page, id), "drawn", id)
          assert.isAbove(yield* colouredPixels(page, id), 150, id)
        }
        const said = {
          reference: "This token does not hold the GPU reference price index",
          hardware: "This token may not see hardware resale prices (this token is not granted gpu_hardware_prices)",
          llm: "This token may not see LLM token prices (this token is not granted llm_token_prices)"
        }
        for (const [id, text] of Object.entries(said)) {
          assert.strictEqual(yield* stateOf(page, id), "denied", id)
          assert.include(yield* textOf(page, `#${id} .summary`), text)
          assert.strictEqual(yield* countOf(page, `#${id} .chart canvas`), 0, `${id}: no empty chart`)
        }
        assert.include(yield* textOf(page, "#status"), "not visible to this token: Reference price")
        // Its index history starts at its history floor, 60 days back.
        const floor = (yield* api(url, "/v2/gpu/rental/indexes/metadata", "demo-rental")).history_starts_at
        assert.strictEqual(yield* Effect.promise(() => page.getAttribute("#index-history input[name=asof]", "min")), floor)

        yield* Effect.promise(() => page.click("#offers button[type=submit]"))
        yield* Effect.promise(() => page.waitForSelector("#offers[data-state=denied]"))
        assert.include(yield* textOf(page, "#offers .summary"), "This token may not see offers (this token is not granted the procurement service)")

        // The refusals are answers the page expected: the only errors are the browser's notes of the 403s.
        assert.deepStrictEqual(w.pageErrors, [])
        assert.isTrue(w.failed.every((f) => f.startsWith("403 ")), w.failed.join("\n"))
        assert.isTrue(w.consoleErrors.every((e) => e.includes("status of 403")), w.consoleErrors.join("\n"))

        // A token the server does not know: said so, forgotten, and no panel shown.
        yield* Effect.promise(() => page.fill("#token", "not-a-token"))
        yield* Effect.promise(() => Promise.all([page.waitForNavigation(), page.press("#token", "Enter")]))
        yield* Effect.promise(() => page.waitForFunction(() => (globalThis as any).document.querySelector("#status")?.textContent?.includes("not accepted")))
        assert.isTrue(yield* Effect.promise(() => page.$eval("#panels", (m: any) => m.hidden as boolean)))
        assert.isNull(yield* Effect.promise(() => page.evaluate(() => (globalThis as any).sessionStorage.getItem("gpu-market-token"))))
      }).pipe(Effect.scoped))
  })
})
