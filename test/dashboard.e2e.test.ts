import { assert, describe, layer } from "@effect/vitest"
import { Auth, type DataType, FormatImport, marketLayer, procurementLayer, simulatedProviderLayer } from "@gpu-market/core"
import * as Demo from "@gpu-market/demo"
import * as Server from "@gpu-market/http-adapter"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Effect, Layer } from "effect"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { type Browser, chromium, type Page } from "playwright-core"
import { freePort } from "./support/process"

/**
 * The dashboard in a real browser: headless Chromium opens `/dashboard` of a server on a real
 * port behind a base-URL prefix, over a small demo market (every data type, the demo tokens,
 * procurement) and over a market imported from the real SkyPilot and LiteLLM catalogs. With each
 * token every panel is drawn (its canvas holds the series' pixels, its table the rows) or says
 * why not; no request is refused (the page asks `/v2/token` first), nothing leaves the server's
 * origin, the token never appears in a URL, and the console stays clean; every "Download CSV"
 * saves exactly the rows its table shows; at 1440 px and 390 px nothing runs off the screen or
 * is clipped. Screenshots are kept in test-artifacts/dashboard-*.png.
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"
const ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
  "--disable-component-update", "--disable-sync"]
const ARTIFACTS = resolve(import.meta.dirname, "../test-artifacts")
/** Days of demo history: enough for every chart to have a line, few enough to seed in seconds. */
const DAYS = 10
/** The panels with a chart. */
const CHARTS = ["trend", "spread", "rental", "index-history", "reference", "hardware", "llm"]
/** Every panel. */
const PANELS = ["grid", ...CHARTS, "offers"]

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

const FIXTURES = resolve(import.meta.dirname, "fixtures/real")
const DATA_TYPES: ReadonlyArray<DataType> = ["gpu_rental_prices", "gpu_rental_indexes", "gpu_rental_transactions", "gpu_hardware_prices", "llm_token_prices"]
const everyType = (history: boolean) =>
  Object.fromEntries(DATA_TYPES.map((t) => [t, { history: history ? { _tag: "unrestricted" as const } : { _tag: "none" as const } }]))

/**
 * A market imported from the real catalogs (test/fixtures/real/SOURCES.md): every SkyPilot
 * catalog and LiteLLM's prices, as listed 8 days ago and again today, so a week's change is
 * there to report; `real-all` reads every type with history, `real-current` current values only.
 */
const realMarket = Layer.unwrapScoped(Effect.map(
  Effect.acquireRelease(Effect.sync(() => mkdtempSync(join(tmpdir(), "gpu-market-dashboard-real-"))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))),
  (dir) => Layer.effectDiscard(Effect.gen(function* () {
    const formats = yield* FormatImport
    for (const at of [Date.now() - 8 * 86_400_000, Date.now()]) {
      const observedAt = new Date(at).toISOString()
      for (const file of readdirSync(join(FIXTURES, "skypilot"))) {
        yield* formats.skypilot(readFileSync(join(FIXTURES, "skypilot", file), "utf8"), { vendor: file.replace(/-vms\.csv$/, ""), observedAt })
      }
      yield* formats.litellm(readFileSync(join(FIXTURES, "litellm", "model_prices.json"), "utf8"), { observedAt })
    }
    const auth = yield* Auth
    yield* auth.issue({ name: "Real catalogs, every type with history", grants: everyType(true), indices: "all" }, "real-all")
    yield* auth.issue({ name: "Real catalogs, current values only", grants: everyType(false), indices: "all" }, "real-current")
  })).pipe(
    Layer.provideMerge(marketLayer),
    Layer.provideMerge(SqliteStorage.layer({ filename: join(dir, "market.db") }))
  )))

const realServerLayer = Layer.unwrapEffect(Effect.map(Effect.promise(freePort), (port) => {
  const url = `http://127.0.0.1:${port}/market`
  return Layer.merge(Server.layer({ port, host: "127.0.0.1", baseUrl: url }), Layer.succeed(Base, Base.make({ url })))
})).pipe(Layer.provide(realMarket))

/** The states a panel may settle in: drawn with data, or saying in words why it shows none. */
type Settled = "drawn" | "denied" | "empty" | "ready"

/**
 * Every panel settled as `expected` says, each that is not drawn saying why in a sentence, each
 * drawn chart holding the series' pixels beside a table of its rows.
 */
const settledAs = (page: Page, expected: Readonly<Record<string, Settled>>) => Effect.gen(function* () {
  assert.sameMembers(Object.keys(expected), PANELS)
  for (const [id, state] of Object.entries(expected)) {
    const said = yield* textOf(page, `#${id} .summary`)
    assert.strictEqual(yield* stateOf(page, id), state, `${id}: ${said}`)
    assert.isAbove(said.length, 20, `${id} says what it shows or why not`)
    if (state === "drawn" && CHARTS.includes(id)) {
      assert.isAbove(yield* colouredPixels(page, id), 150, `${id}: series drawn on the canvas`)
      assert.isAbove(yield* countOf(page, `#${id} .table tbody tr`), 0, `${id}: a table of the values`)
    }
    if (state === "denied" && id !== "index-history" && id !== "reference") assert.strictEqual(yield* countOf(page, `#${id} canvas`), 0, `${id}: no empty chart`)
  }
})

/** A CSV file's records (RFC 4180: quoted fields, doubled quotes, CRLF). */
const parseCsv = (text: string): Array<Array<string>> => {
  const records: Array<Array<string>> = []
  let field = ""
  let record: Array<string> = []
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (quoted) {
      if (c === "\"" && text[i + 1] === "\"") { field += "\""; i++ } else if (c === "\"") quoted = false
      else field += c
    } else if (c === "\"") quoted = true
    else if (c === ",") { record.push(field); field = "" } else if (c === "\n") { record.push(field); records.push(record); record = []; field = "" } else if (c !== "\r") field += c
  }
  return records
}

/** How the page writes a price, a count, a change and an instant, as a reader sees them. */
const fixed = (v: number, digits: number) => v.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits })
const usdOf = (v: number, digits = v >= 1000 ? 0 : v >= 10 ? 2 : 4) => `$${fixed(v, digits)}`
const pctOf = (v: number) => `${v > 0 ? "+" : v < 0 ? "−" : ""}${fixed(Math.abs(v), 1)}%`
const shownAs = (value: string): ReadonlyArray<string> => {
  if (value === "") return ["—", ""]
  if (/^-?\d+(\.\d+)?(e-?\d+)?$/.test(value)) {
    const v = Number(value)
    return [usdOf(v), usdOf(v, 2), v.toLocaleString("en-US"), pctOf(v), value]
  }
  if (/^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(value)) return [`${value.slice(0, 10)} ${value.slice(11, 16)} UTC`]
  // A text a spreadsheet would run as a formula is saved with a quote before it.
  return [/^'[=+\-@]/.test(value) ? value.slice(1) : value]
}

/** The rows of the table a download button is for: each cell's text, and whether it is a control (a button) or a mark. */
const shownRows = (page: Page, button: string) => Effect.promise(() => page.$eval(button, (b: any) => {
  const section = b.closest("section")
  const table = b.closest(".cheapest")?.querySelector("table") ?? section.querySelector(".table table")
  const head = [...table.querySelectorAll("thead th")].map((th: any) => th.textContent)
  const body = [...table.querySelectorAll("tbody tr")].map((tr: any) => [...tr.children].map((td: any) => ({
    text: td.textContent as string, node: td.querySelector("button, .outlier") !== null
  })))
  return { grid: table.classList.contains("grid") as boolean, head: head as Array<string>, body: body as Array<Array<{ text: string; node: boolean }>> }
}))

/**
 * Presses every "Download CSV" of the page and checks that each saves exactly the rows its table
 * shows, value for value as written on screen; returns how many files were checked.
 */
const everyDownloadMatches = (page: Page) => Effect.gen(function* () {
  const buttons = yield* Effect.promise(() => page.$$eval("button.download", (bs) => bs.map((_, i) => i)))
  for (const i of buttons) {
    const selector = `:nth-match(button.download, ${i + 1})`
    const [download] = yield* Effect.promise(() => Promise.all([page.waitForEvent("download"), page.click(selector)]))
    const file = yield* Effect.promise(() => download.path())
    assert.match(download.suggestedFilename(), /^gpu-market-[a-z0-9.-]+-\d{4}-\d\d-\d\d\.csv$/)
    const [header, ...records] = parseCsv(readFileSync(file, "utf8"))
    const shown = yield* shownRows(page, selector)
    assert.strictEqual(records.length, shown.body.length, `${download.suggestedFilename()}: one line per row shown`)
    if (shown.grid) {
      // The grid: a GPU per row, for each vendor its cheapest price and (with history) its 7-day change.
      const vendors = shown.head.slice(1)
      const perVendor = (header!.length - 1) / vendors.length
      records.forEach((record, r) => {
        assert.strictEqual(record[0], shown.body[r]![0]!.text)
        vendors.forEach((_, k) => {
          const [price, change] = record.slice(1 + k * perVendor, 1 + (k + 1) * perVendor)
          const text = shown.body[r]![k + 1]!.text
          if (price === "") return assert.strictEqual(text, "")
          assert.isTrue(text.startsWith(usdOf(Number(price))), `${text} shows ${price}`)
          if (perVendor === 2) assert.strictEqual(text.slice(usdOf(Number(price)).length), change === "" ? "new" : pctOf(Number(change)))
        })
      })
      continue
    }
    assert.deepStrictEqual(header, shown.head, download.suggestedFilename())
    records.forEach((record, r) => record.forEach((value, c) => {
      const cell = shown.body[r]![c]!
      if (!cell.node) assert.include(shownAs(value), cell.text, `${download.suggestedFilename()} row ${r + 1} ${header![c]}: ${value}`)
    }))
  }
  return buttons.length
})

/**
 * What runs off the screen or is cut off at the page's width: elements reaching past the
 * viewport, and elements whose content is wider than their box (scrolled or hidden), every
 * `details` opened first; a visually hidden element (table headers on a phone) is left out.
 */
const clipped = (page: Page) => Effect.promise(() => page.evaluate(() => {
  const d = (globalThis as any).document
  for (const details of d.querySelectorAll("details")) details.open = true
  const width = d.documentElement.clientWidth
  const out: Array<string> = []
  if (d.documentElement.scrollWidth > width) out.push(`the page is ${d.documentElement.scrollWidth} px wide`)
  for (const e of d.querySelectorAll("body *")) {
    if (e.closest("thead") !== null && (globalThis as any).getComputedStyle(e.closest("thead")).position === "absolute") continue
    const r = e.getBoundingClientRect()
    if (r.width === 0 && r.height === 0) continue
    const name = `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ""}${e.className && typeof e.className === "string" ? `.${e.className}` : ""} in #${e.closest("section")?.id}`
    if (r.right > width + 0.5) out.push(`${name} reaches ${Math.round(r.right)} px`)
    else if (e.scrollWidth > e.clientWidth + 1 && (globalThis as any).getComputedStyle(e).overflowX !== "visible") out.push(`${name} holds ${e.scrollWidth} px in ${e.clientWidth}`)
  }
  return out
}))

/** At 1440 px and at 390 px: nothing clipped; a screenshot of each kept. */
const fitsBothWidths = (page: Page, name: string) => Effect.gen(function* () {
  mkdirSync(ARTIFACTS, { recursive: true })
  for (const width of [1440, 390]) {
    yield* Effect.promise(() => page.setViewportSize({ width, height: 900 }))
    // Charts follow their box: wait until every canvas fits its panel again.
    yield* Effect.promise(() => page.waitForFunction(() => [...(globalThis as any).document.querySelectorAll(".chart canvas")]
      .every((c: any) => c.getBoundingClientRect().right <= (globalThis as any).document.documentElement.clientWidth)))
    assert.deepStrictEqual(yield* clipped(page), [], `${name} at ${width} px`)
    yield* Effect.promise(() => page.screenshot({ path: join(ARTIFACTS, `dashboard-${name}-${width}.png`), fullPage: true }))
  }
})

/** Nothing refused, nothing failed, nothing said in the console, every request to this server under its prefix, the token in none. */
const clean = (w: Watched, url: string, token: string) => {
  assert.deepStrictEqual(w.failed, [], "no request refused or failed")
  assert.deepStrictEqual(w.consoleErrors, [])
  assert.deepStrictEqual(w.pageErrors, [])
  for (const r of w.requested.filter((r) => !r.startsWith("data:") && !r.startsWith("blob:"))) {
    assert.isTrue(r.startsWith(`${url}/`), `left the origin or the prefix: ${r}`)
    assert.notInclude(r, token, "the token is never in a URL")
  }
}

const drawnFor = (page: Page, id: string, text: string, part = "summary") => Effect.promise(() => page.waitForFunction(([id, t, p]) =>
  (globalThis as any).document.querySelector(`#${id}`)?.getAttribute("data-state") === "drawn" &&
  (globalThis as any).document.querySelector(`#${id} .${p}`)?.textContent?.includes(t), [id, text, part] as const))

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

    it.effect("demo-all: every panel drawn with data, its CSV the rows shown, nothing clipped, from this origin only, a clean console", () =>
      Effect.gen(function* () {
        const { url } = yield* Base
        const browser = yield* launch
        const w = yield* watchedPage(browser, 1440)
        yield* signIn(w, url, "demo-all")
        const { page } = w

        yield* settledAs(page, {
          grid: "drawn", trend: "drawn", spread: "drawn", rental: "drawn", "index-history": "drawn", reference: "drawn",
          hardware: "drawn", llm: "drawn", offers: "ready"
        })
        assert.match(yield* textOf(page, "#status"), /^8 panels drawn for Demo: every data type/)
        for (const id of CHARTS) {
          const label = yield* Effect.promise(() => page.getAttribute(`#${id} .chart`, "aria-label"))
          assert.isAbove((label ?? "").length, 40, `${id}: the chart's summary is its accessible name`)
        }
        // Legends name the series; no "—" waits for a cursor.
        assert.notInclude(yield* Effect.promise(() => page.$$eval(".u-legend", (ls) => ls.map((l) => l.textContent).join(" "))), "—")

        // The grid: each GPU's cheapest vendor is the summary's, with its 7-day change.
        const summary = (yield* api(url, "/v2/gpu/rental/prices/summary?gpu_canonical_name=h100-sxm")).data[0]
        const h100 = yield* Effect.promise(() => page.$eval("#grid tbody tr:has(th:text-is('h100-sxm')) strong", (s) => s.textContent))
        assert.strictEqual(h100, usdOf(summary.price_min))
        assert.include(yield* textOf(page, "#grid .summary"), "the change against 7 days before")
        assert.isAbove(yield* countOf(page, "#grid td small"), 0)

        // The trend over 7 days, then all the token may see: the table holds one row per day drawn.
        assert.include(yield* textOf(page, "#trend .summary"), "The shaded band runs from p10 to p90")
        yield* Effect.promise(() => page.check("#trend input[value='7']"))
        yield* drawnFor(page, "trend", "daily from")
        assert.isAtMost(yield* countOf(page, "#trend .table tbody tr"), 7)
        yield* Effect.promise(() => page.check("#trend input[value=all]"))
        yield* Effect.promise(() => page.waitForFunction(() => (globalThis as any).document.querySelectorAll("#trend .table tbody tr").length > 7))
        yield* drawnFor(page, "trend", "daily from")
        assert.match(yield* textOf(page, "#spread .summary"), /Spot (ran from|was) .+ on-demand\./)

        // The cheapest H100 offer is the API's cheapest, and its details open in a readable panel.
        const cheapest = (yield* api(url, "/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm&sort_by=price_usd_per_gpu_hour&page_size=1")).data[0]
        const firstRow = yield* Effect.promise(() => page.$$eval("#rental .cheapest tbody tr:first-child td", (tds) => tds.map((t) => t.textContent)))
        assert.strictEqual(firstRow[0], cheapest.vendor)
        assert.strictEqual(firstRow[4], usdOf(cheapest.price_usd_per_gpu_hour))
        assert.strictEqual(yield* countOf(page, "#rental .cheapest tbody tr"), 10)
        yield* Effect.promise(() => page.click("#rental .cheapest tbody tr:first-child button"))
        const facts = yield* Effect.promise(() => page.$$eval("#rental .offer-details dt", (dts) =>
          Object.fromEntries(dts.map((dt) => [dt.textContent, dt.nextElementSibling?.textContent]))))
        assert.strictEqual(facts["Price per GPU-hour"], usdOf(cheapest.price_usd_per_gpu_hour))
        assert.strictEqual(facts["Product key"], cheapest.product_key)
        assert.strictEqual(facts.Vendor, cheapest.vendor)
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
        yield* drawnFor(page, "llm", `${flagged!.model}:`)
        assert.strictEqual(yield* countOf(page, "#llm .table .outlier"), flagged!.outliers)
        assert.include(yield* textOf(page, "#llm .summary"), "Outliers (marked)")
        assert.isAbove(yield* colouredPixels(page, "llm", [0xe0, 0x31, 0x31]), 20, "outliers drawn in red")

        // The index: 30-minute values, then the daily ones as they stood at an earlier date.
        assert.match(yield* textOf(page, "#index-history .headline"), /^As of \d{4}-\d{2}-\d{2}: \$\d/)
        yield* Effect.promise(() => page.check("#index-history input[value=intraday]"))
        yield* drawnFor(page, "index-history", "30-minute values")
        yield* Effect.promise(() => page.check("#index-history input[value=daily]"))
        yield* drawnFor(page, "index-history", "daily values")
        const daysBack = new Date(Date.now() - 3 * 86_400_000).toISOString().slice(0, 10)
        yield* Effect.promise(() => page.fill("#index-history input[name=asof]", daysBack))
        yield* drawnFor(page, "index-history", `As of ${daysBack}:`, "headline")
        const newest = yield* textOf(page, "#index-history tbody tr:first-child td:first-child")
        assert.isTrue(newest <= daysBack, `nothing after the as-of date: ${newest}`)
        const referenceHeads = yield* Effect.promise(() => page.$$eval("#reference thead th", (ths) => ths.map((t) => t.textContent)))
        assert.includeMembers(referenceHeads, ["Reference price", "h100-sxm", "h200-sxm", "a100-sxm-80gb", "b200"])

        // Keyboard: another GPU chosen with the arrow key redraws the rental chart.
        const before = yield* textOf(page, "#rental .summary")
        yield* Effect.promise(() => page.focus("#rental select"))
        yield* Effect.promise(() => page.keyboard.press("ArrowDown"))
        yield* Effect.promise(() => page.waitForFunction((old) =>
          (globalThis as any).document.querySelector("#rental")?.getAttribute("data-state") === "drawn" &&
          (globalThis as any).document.querySelector("#rental .summary")?.textContent !== old, before))

        // Offers for a token with the procurement grant, and their CSV.
        yield* Effect.promise(() => page.click("#offers button[type=submit]"))
        yield* Effect.promise(() => page.waitForSelector("#offers[data-state=answered]"))
        assert.isAbove(yield* countOf(page, "#offers tbody tr"), 0, yield* textOf(page, "#offers .summary"))

        // Every table and chart: its download is the rows it shows.
        assert.strictEqual(yield* everyDownloadMatches(page), 10)
        yield* fitsBothWidths(page, "demo-all")

        clean(w, url, "demo-all")
        assert.isTrue(w.requested.some((r) => r.includes("/market/v2/gpu/hardware/prices/history?")))
        assert.strictEqual(yield* Effect.promise(() => page.evaluate(() => (globalThis as any).sessionStorage.getItem("gpu-market-token"))), "demo-all")
      }).pipe(Effect.scoped))

    it.effect("demo-rental: what it may see is drawn (uPlot arriving after the data), what it may not is said without asking", () =>
      Effect.gen(function* () {
        const { url } = yield* Base
        const browser = yield* launch
        const w = yield* watchedPage(browser, 1440)
        yield* signIn(w, url, "demo-rental", true)
        const { page } = w
        yield* settledAs(page, {
          grid: "drawn", trend: "drawn", spread: "drawn", rental: "drawn", "index-history": "drawn", reference: "denied",
          hardware: "denied", llm: "denied", offers: "denied"
        })
        const said = {
          reference: "This token does not hold the GPU reference price index",
          hardware: "This token may not see hardware resale prices (this token is not granted gpu_hardware_prices)",
          llm: "This token may not see LLM token prices (this token is not granted llm_token_prices)",
          offers: "This token may not see offers (this token is not granted the procurement service)"
        }
        for (const [id, text] of Object.entries(said)) assert.include(yield* textOf(page, `#${id} .summary`), text)
        assert.include(yield* textOf(page, "#status"), "not visible to this token: Reference price")
        // Its history starts at its floor, 60 days back: the index's as-of date and the trend's "all".
        const floor = (yield* api(url, "/v2/token", "demo-rental")).data.grants.gpu_rental_prices.history_starts_at
        assert.strictEqual(yield* Effect.promise(() => page.getAttribute("#index-history input[name=asof]", "min")), floor)
        yield* Effect.promise(() => Promise.all([
          page.waitForRequest((r) => r.url().includes("/summary/history?") && r.url().includes(`start=${floor}&`)),
          page.check("#trend input[value=all]")
        ]))
        yield* drawnFor(page, "trend", "daily from")
        assert.isTrue(yield* Effect.promise(() => page.$eval("#offers button[type=submit]", (b: any) => b.disabled as boolean)))

        yield* everyDownloadMatches(page)
        yield* fitsBothWidths(page, "demo-rental")
        clean(w, url, "demo-rental")

        // A token the server does not know: said so, forgotten, and no panel shown.
        yield* Effect.promise(() => page.fill("#token", "not-a-token"))
        yield* Effect.promise(() => Promise.all([page.waitForNavigation(), page.press("#token", "Enter")]))
        yield* Effect.promise(() => page.waitForFunction(() => (globalThis as any).document.querySelector("#status")?.textContent?.includes("not accepted")))
        assert.isTrue(yield* Effect.promise(() => page.$eval("#panels", (m: any) => m.hidden as boolean)))
        assert.isNull(yield* Effect.promise(() => page.evaluate(() => (globalThis as any).sessionStorage.getItem("gpu-market-token"))))
      }).pipe(Effect.scoped))

    it.effect("demo-current: today's prices drawn (hardware too), history panels say why not, and nothing refused", () =>
      Effect.gen(function* () {
        const { url } = yield* Base
        const browser = yield* launch
        const w = yield* watchedPage(browser, 1440)
        yield* signIn(w, url, "demo-current")
        const { page } = w
        yield* settledAs(page, {
          grid: "drawn", trend: "denied", spread: "denied", rental: "drawn", "index-history": "denied", reference: "denied",
          hardware: "drawn", llm: "drawn", offers: "denied"
        })
        assert.include(yield* textOf(page, "#trend .summary"), "This token reads current gpu_rental_prices only, not their history")
        assert.include(yield* textOf(page, "#grid .summary"), "this token reads current prices only, so no change is shown")
        assert.strictEqual(yield* countOf(page, "#grid td small"), 0)
        assert.match(yield* textOf(page, "#spread .headline"), /^h100-sxm today: spot from \$/)
        assert.match(yield* textOf(page, "#index-history .headline"), /^Latest: \$\d/)
        assert.include(yield* textOf(page, "#hardware .summary"), "the latest price of")
        yield* everyDownloadMatches(page)
        yield* fitsBothWidths(page, "demo-current")
        clean(w, url, "demo-current")
        assert.isFalse(w.requested.some((r) => /\/(history|as-of)\?/.test(r)), "no history asked for")
      }).pipe(Effect.scoped))
  })

  layer(realServerLayer, { timeout: "300 seconds", excludeTestServices: true })((it) => {
    it.effect("a market imported from the real catalogs: every panel drawn or saying why, $0 prices kept off the log scale, CSVs, nothing clipped", () =>
      Effect.gen(function* () {
        const { url } = yield* Base
        const browser = yield* launch
        for (const [token, expected] of [
          ["real-all", { grid: "drawn", trend: "drawn", spread: "drawn", rental: "drawn", "index-history": "drawn", reference: "drawn", hardware: "empty", llm: "drawn", offers: "denied" }],
          ["real-current", { grid: "drawn", trend: "denied", spread: "denied", rental: "drawn", "index-history": "denied", reference: "denied", hardware: "empty", llm: "drawn", offers: "denied" }]
        ] as const) {
          const w = yield* watchedPage(browser, 1440)
          yield* signIn(w, url, token)
          const { page } = w
          yield* settledAs(page, expected)
          // A real catalog lists free models: a $0 price is named, not drawn on the log scale.
          const free = (yield* api(url, "/v2/llm/token/prices/latest?max_price_usd_per_1m_tokens=0&page_size=1", token)).data[0]
          assert.isDefined(free, "LiteLLM lists $0 prices")
          yield* Effect.promise(() => page.selectOption("#llm select", free.model))
          yield* Effect.promise(() => page.waitForFunction((m) => (globalThis as any).document.querySelector("#llm .summary")?.textContent?.startsWith(`${m}:`) &&
            ["drawn", "empty"].includes((globalThis as any).document.querySelector("#llm")?.getAttribute("data-state")), free.model))
          assert.include(yield* textOf(page, "#llm .summary"), "$0 has no place on a log scale")
          assert.isAbove(yield* countOf(page, "#rental .cheapest tbody tr"), 0)
          yield* everyDownloadMatches(page)
          yield* fitsBothWidths(page, token)
          clean(w, url, token)
          yield* Effect.promise(() => page.close())
        }
      }).pipe(Effect.scoped))
  })
})
