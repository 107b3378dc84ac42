import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { type Browser, chromium, type Page, type Request } from "playwright-core"
import { DATA_DIR, REPO_ROOT } from "./config"
import { type Server, startProcess } from "./http-bench"
import { median } from "./stats"

/**
 * (m) The dashboard's first load: headless Chromium opens `/dashboard` of `npm start` (the demo
 * market, `demo-all` already in the tab's session storage) in a fresh browser context, so nothing
 * is cached, and the clock runs from navigation to the page saying every panel is drawn. The
 * baseline, in the same run and the same way: `/docs` until Redoc has listed the operations.
 * Bytes are what crossed the wire (headers and compressed bodies). Runs inside `npm run bench`,
 * or alone: `BENCH_ONLY=m npm run bench`.
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"
const ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
  "--disable-component-update", "--disable-sync"]
const START = path.join(REPO_ROOT, "packages", "cli", "dist", "start.js")
/** The demo market `npm start` seeds, kept between runs (seeding it takes about 20 s; later runs only extend it to today). */
const DEMO_DB = path.join(DATA_DIR, "dashboard-demo.db")

/** The panels `demo-all` has drawn when the page is loaded. */
const DASHBOARD_PANELS = 8

/** The issue's bar: loaded in under a second from a local server. */
export const DASHBOARD_TARGET_MS = 1000

/** One page load. */
export interface Load {
  readonly ms: number
  readonly bytes: number
  readonly requests: number
  /** Bytes of the API's answers (the rest is the page and its files). */
  readonly apiBytes: number
}

export interface DashboardResults {
  readonly runs: number
  readonly dashboard: ReadonlyArray<Load>
  readonly docs: ReadonlyArray<Load>
  readonly medianMs: number
  readonly docsMedianMs: number
  readonly bytes: number
  readonly apiBytes: number
  readonly requests: number
  readonly docsBytes: number
  readonly charts: string
  /** 1-minute load average when the loads began. */
  readonly load: number
}

const loadOnce = async (browser: Browser, url: string, token: string | undefined, ready: (page: Page) => Promise<unknown>): Promise<Load> => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  try {
    if (token !== undefined) {
      await context.addInitScript({ content: `sessionStorage.setItem("gpu-market-token", ${JSON.stringify(token)})` })
    }
    const page = await context.newPage()
    const finished: Array<Request> = []
    page.on("requestfinished", (r) => finished.push(r))
    const started = performance.now()
    await page.goto(url)
    await ready(page)
    const ms = performance.now() - started
    const sized = await Promise.all(finished.filter((r) => !r.url().startsWith("data:")).map(async (r) => {
      const s = await r.sizes()
      return { api: /\/(v1|v2)\//.test(new URL(r.url()).pathname), bytes: s.responseHeadersSize + s.responseBodySize }
    }))
    const bytes = sized.reduce((a, s) => a + s.bytes, 0)
    return { ms, bytes, requests: sized.length, apiBytes: sized.filter((s) => s.api).reduce((a, s) => a + s.bytes, 0) }
  } finally {
    await context.close()
  }
}

export const runDashboardBench = async (quick: boolean, log: (line: string) => void): Promise<DashboardResults> => {
  fs.mkdirSync(DATA_DIR, { recursive: true })
  const runs = quick ? 3 : 9
  log(`  npm start over ${path.relative(REPO_ROOT, DEMO_DB)} (seeded on first use) ...`)
  const server: Server = await startProcess("npm start", (port) => ({
    args: [START],
    env: { PORT: String(port), HOST: "127.0.0.1", GPU_MARKET_DB: DEMO_DB, GPU_MARKET_LOG_LEVEL: "warning" }
  }), "/healthz")
  const base = server.url.replace(/\/healthz$/, "")
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS })
  try {
    let charts = ""
    const dashboard = () => loadOnce(browser, `${base}/dashboard`, "demo-all", async (page) => {
      await page.waitForSelector("body[data-ready]", { timeout: 30_000 })
      charts = (await page.textContent("#status")) ?? ""
      // demo-all sees every panel: eight drawn, and the offers form ready.
      if (!charts.startsWith(`${DASHBOARD_PANELS} panels drawn`)) {
        const panels = await page.$$eval("section", (ss) => ss.map((s) => `${s.id} ${s.getAttribute("data-state")}: ${s.querySelector(".summary")?.textContent}`))
        throw new Error(`the dashboard did not draw every panel: ${charts}\n${panels.join("\n")}`)
      }
    })
    const docs = () => loadOnce(browser, `${base}/docs`, undefined, (page) => page.waitForSelector("[data-section-id^='operation/']", { timeout: 30_000 }))
    // One of each first: the server reads its files and builds the OpenAPI document on first use.
    await dashboard()
    await docs()
    const load = os.loadavg()[0]!
    const d: Array<Load> = []
    const o: Array<Load> = []
    for (let i = 0; i < runs; i++) {
      d.push(await dashboard())
      o.push(await docs())
      log(`  run ${i + 1}: dashboard ${d[i]!.ms.toFixed(0)} ms, ${d[i]!.bytes} B; docs ${o[i]!.ms.toFixed(0)} ms, ${o[i]!.bytes} B`)
    }
    return {
      runs, dashboard: d, docs: o, charts, load,
      medianMs: median(d.map((l) => l.ms)), docsMedianMs: median(o.map((l) => l.ms)),
      bytes: median(d.map((l) => l.bytes)), apiBytes: median(d.map((l) => l.apiBytes)), requests: median(d.map((l) => l.requests)),
      docsBytes: median(o.map((l) => l.bytes))
    }
  } finally {
    await browser.close()
    await server.stop()
  }
}

const kb = (bytes: number) => `${(bytes / 1000).toFixed(0)} kB`

/** The line of (m). */
export const dashboardLine = (r: DashboardResults) => ({
  name: "(m) dashboard first load (demo-all, cold cache): navigation to every panel drawn, vs /docs listed",
  figure: `${(r.medianMs / 1000).toFixed(2)} s, ${kb(r.bytes)}`,
  baseline: `${(r.docsMedianMs / 1000).toFixed(2)} s, ${kb(r.docsBytes)}`,
  ratio: r.medianMs / r.docsMedianMs,
  target: `≤ ${(DASHBOARD_TARGET_MS / 1000).toFixed(1)} s`,
  pass: r.medianMs <= DASHBOARD_TARGET_MS
})

const md = (row: ReadonlyArray<string>) => `| ${row.join(" | ")} |`

/** The section of (m) in BENCHMARKS.md. */
export const dashboardMarkdown = (r: DashboardResults): string => `## (m) Dashboard first load

\`npm start\` over the demo market (180 days of every type) on 127.0.0.1; headless Chromium (Debian's \`chromium\`) at 1280 × 900 opens \`/dashboard\` in a fresh browser context each time (nothing cached), with \`demo-all\` already in the tab's session storage, and the clock runs from navigation until the page says every panel is drawn (${r.charts.split(" for ")[0]}): the page, its CSS and modules, uPlot, \`/v2/token\`, then the rental summaries, the four metadata reads and every chart's data. Baseline in the same run, loaded the same way: \`/docs\` until Redoc lists the operations. ${r.runs} loads of each after one of each to warm the server, alternating; figures are medians; the 1-minute load average was ${r.load.toFixed(2)} on ${os.cpus().length} cores when they began. Bytes are what crossed the wire: response headers and bodies as sent (brotli where the browser asks).

${md(["page", "time to drawn", "bytes", "requests", "runs (ms)"])}
${md(["---", "---:", "---:", "---:", "---"])}
${md(["/dashboard", `${r.medianMs.toFixed(0)} ms`, `${kb(r.bytes)} (API answers ${kb(r.apiBytes)})`, String(r.requests), r.dashboard.map((l) => l.ms.toFixed(0)).join(", ")])}
${md(["/docs", `${r.docsMedianMs.toFixed(0)} ms`, kb(r.docsBytes), String(median(r.docs.map((l) => l.requests))), r.docs.map((l) => l.ms.toFixed(0)).join(", ")])}

Ratio ${(r.medianMs / r.docsMedianMs).toFixed(2)}× of \`/docs\`; target: every panel drawn within ${(DASHBOARD_TARGET_MS / 1000).toFixed(1)} s.
`

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href
if (isMain) {
  runDashboardBench(process.env.BENCH_QUICK === "1", (line) => console.log(line)).then((r) => {
    console.log(JSON.stringify(dashboardLine(r)))
  }).catch((e: unknown) => {
    console.error(e)
    process.exitCode = 1
  })
}
