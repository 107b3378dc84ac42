import { type Principal, RentalPrices, type RentalPriceSummary } from "@gpu-market/core"
import { requestOrigin } from "@gpu-market/core/adapters"
import { deepStrictEqual, ok } from "node:assert/strict"
import type { Line } from "./report"
import * as os from "node:os"
import { pathToFileURL } from "node:url"
import { openBare } from "./bare"
import { configFromEnv, POPULAR_GPU } from "./config"
import { openMarket, timing, type Timing } from "./core-bench"
import { ensureMarket } from "./market"

/**
 * (s) Rental summaries on the bench market: `/summary` grouped by GPU and vendor through the core
 * against a bare SQL query over the same file whose rows are summarised by a hand-written loop;
 * and a 180-day daily `/summary/history` of one GPU, its first call in a fresh runtime (cold) and
 * repeated (warm). Run alone: `npx tsx bench/summaries.ts` (`BENCH_QUICK=1` on the small market).
 */

const current: Principal = {
  id: "bench-current" as Principal["id"], name: "benchmark, current only", indices: "all", legacy_custom_index: false, procurement: false,
  rate_limit_per_minute: 1_000_000_000, grants: { gpu_rental_prices: { history: { _tag: "none" } } }
}
const historical: Principal = { ...current, id: "bench-history" as Principal["id"], grants: { gpu_rental_prices: { history: { _tag: "unrestricted" } } } }
const origin = requestOrigin("http://127.0.0.1:8787")

/** The bench market's history ends 2025-11-01 and spans 180 days. */
const SERIES = { gpu_canonical_name: POPULAR_GPU, start: "2025-05-05", end: "2025-11-01", interval: "1d", page_size: "1000" }

const BARE_SUMMARY = `SELECT gpu_canonical_name, vendor, contract_type, price_usd_per_gpu_hour, product_key, base_product_key
FROM rental_prices WHERE valid_to IS NULL ORDER BY gpu_canonical_name, vendor`

const percentile = (sorted: ReadonlyArray<number>, q: number) => {
  const h = (sorted.length - 1) * q
  const f = Math.floor(h)
  return f === h ? sorted[f]! : sorted[f]! + (h - f) * (sorted[f + 1]! - sorted[f]!)
}

type BareRow = [gpu: string, vendor: string, contract: string, price: number, product: string, base: string]

/** The summary's numbers from the bare rows: one pass grouping by GPU and vendor, then each group's percentiles. */
const summariseBare = (rows: ReadonlyArray<BareRow>) => {
  const out: Array<Record<string, unknown>> = []
  let i = 0
  while (i < rows.length) {
    const [gpu, vendor] = rows[i]!
    const prices: Array<number> = []
    let cheapest = rows[i]!
    let spot: number | null = null
    let ondemand: number | null = null
    for (; i < rows.length && rows[i]![0] === gpu && rows[i]![1] === vendor; i++) {
      const r = rows[i]!
      prices.push(r[3])
      if (r[3] < cheapest[3] || (r[3] === cheapest[3] && r[4] < cheapest[4])) cheapest = r
      if (r[2] === "spot") spot = spot === null ? r[3] : Math.min(spot, r[3])
      else if (r[2] === "ondemand") ondemand = ondemand === null ? r[3] : Math.min(ondemand, r[3])
    }
    prices.sort((a, b) => a - b)
    out.push({
      gpu_canonical_name: gpu, vendor, offers: prices.length, price_min: prices[0], price_p10: percentile(prices, 0.1),
      price_median: percentile(prices, 0.5), price_p90: percentile(prices, 0.9), price_max: prices[prices.length - 1],
      cheapest: cheapest[4], spot_min: spot, ondemand_min: ondemand
    })
  }
  return out
}

/** Timed calls per subject: a summary of the whole market takes seconds on a loaded machine. */
export const SUMMARY_RUNS = (quick: boolean) => (quick ? 3 : 5)

export interface SummaryBenchResults {
  readonly groups: number
  readonly currentRows: number
  readonly core: Timing
  readonly coreWithChange: Timing
  readonly bare: Timing
  readonly series: { readonly points: number; readonly coldMs: number; readonly warm: Timing }
  readonly load: ReadonlyArray<number>
}

const elapsedUs = async (f: () => Promise<unknown>) => {
  const t = process.hrtime.bigint()
  await f()
  return Number(process.hrtime.bigint() - t) / 1000
}

export const runSummaryBench = async (filename: string, runs: number): Promise<SummaryBenchResults> => {
  const load = os.loadavg()
  // Cold: the first series in a fresh runtime, before anything else read the file through it.
  const cold = openMarket(filename)
  const coldRental = await cold.runPromise(RentalPrices)
  const series = () => cold.runPromise(coldRental.summaryHistory({ principal: historical, query: SERIES, origin }))
  const coldUs = await elapsedUs(series)
  const points = (await series()).data.length
  const warm: Array<number> = []
  for (let i = 0; i < runs; i++) warm.push(await elapsedUs(series))
  await cold.dispose()

  const runtime = openMarket(filename)
  const rental = await runtime.runPromise(RentalPrices)
  const summary = (principal: Principal) => () =>
    runtime.runPromise(rental.summary({ principal, query: { group_by: "vendor", page_size: "1000" }, origin }))
  const db = openBare(filename)
  const bare = db.prepare(BARE_SUMMARY).raw(true)
  try {
    const bareAnswer = () => Promise.resolve(summariseBare(bare.all() as Array<BareRow>))
    // The same numbers both ways, for the first page of groups.
    const page = await summary(current)()
    const reference = await bareAnswer()
    deepStrictEqual(page.data.map((r: RentalPriceSummary) => ({
      gpu_canonical_name: r.gpu_canonical_name, vendor: r.vendor, offers: r.offers, price_min: r.price_min, price_p10: r.price_p10,
      price_median: r.price_median, price_p90: r.price_p90, price_max: r.price_max, cheapest: r.cheapest.product_key, spot_min: r.spot_min, ondemand_min: r.ondemand_min
    })), reference.slice(0, page.data.length))
    ok(page.data.length > 0)
    const samples = { core: [] as Array<number>, change: [] as Array<number>, bare: [] as Array<number> }
    for (let i = 0; i < runs; i++) {
      samples.bare.push(await elapsedUs(bareAnswer))
      samples.core.push(await elapsedUs(summary(current)))
      samples.change.push(await elapsedUs(summary(historical)))
    }
    return {
      groups: reference.length,
      currentRows: reference.reduce((n, g) => n + (g.offers as number), 0),
      core: timing(samples.core),
      coreWithChange: timing(samples.change),
      bare: timing(samples.bare),
      series: { points, coldMs: coldUs / 1000, warm: timing(warm) },
      load
    }
  } finally {
    db.close()
    await runtime.dispose()
  }
}

const ms = (us: number) => `${(us / 1000).toFixed(1)} ms`

/** The summary against the bare query (target ≤ 1.5×), and the series' cold first call beside its warm median. */
export const summaryLines = (r: SummaryBenchResults): ReadonlyArray<Line> => [
  {
    name: "(s) /summary of the market grouped by GPU and vendor, core vs bare SQL + loop",
    figure: ms(r.core.medianUs), baseline: ms(r.bare.medianUs), ratio: r.core.medianUs / r.bare.medianUs, target: "≤ 1.50×",
    pass: r.core.medianUs / r.bare.medianUs <= 1.5
  },
  {
    name: `(s) 180-day daily /summary/history of ${POPULAR_GPU}: warm median vs cold first call`,
    figure: ms(r.series.warm.medianUs), baseline: `${r.series.coldMs.toFixed(0)} ms`, ratio: r.series.warm.medianUs / 1000 / r.series.coldMs,
    target: "warm ≤ 10 ms", pass: r.series.warm.medianUs <= 10_000
  }
]

/** The section of BENCHMARKS.md. */
export const summaryMarkdown = (r: SummaryBenchResults): string => [
  "## (s) Rental summaries",
  "",
  `\`RentalPrices.summary\` with \`group_by=vendor\` (${r.groups.toLocaleString("en-US")} GPU × vendor groups over ${r.currentRows.toLocaleString("en-US")} current rows; the first page of 1,000 groups, which computes every group) against a bare better-sqlite3 statement in raw mode reading the same current rows, summarised by a hand-written loop (the same numbers, checked first). Then a 180-day daily \`/summary/history\` of ${POPULAR_GPU} (${r.series.points} points): its first call in a fresh runtime, and repeated. Load average at the start: ${r.load.map((l) => l.toFixed(2)).join(", ")} (1, 5, 15 min) on ${os.cpus().length} cores.`,
  "",
  "|  | median | p10 | p90 | mean |",
  "| --- | ---: | ---: | ---: | ---: |",
  `| core, current-only token | ${ms(r.core.medianUs)} | ${ms(r.core.p10Us)} | ${ms(r.core.p90Us)} | ${ms(r.core.meanUs)} |`,
  `| core, token with history (1/7/30-day change: the market before read in one sweep) | ${ms(r.coreWithChange.medianUs)} | ${ms(r.coreWithChange.p10Us)} | ${ms(r.coreWithChange.p90Us)} | ${ms(r.coreWithChange.meanUs)} |`,
  `| bare SQL + loop | ${ms(r.bare.medianUs)} | ${ms(r.bare.p10Us)} | ${ms(r.bare.p90Us)} | ${ms(r.bare.meanUs)} |`,
  `| 180-day daily series, warm | ${ms(r.series.warm.medianUs)} | ${ms(r.series.warm.p10Us)} | ${ms(r.series.warm.p90Us)} | ${ms(r.series.warm.meanUs)} |`,
  "",
  `Summary: core / bare ${(r.core.medianUs / r.bare.medianUs).toFixed(2)}× (target ≤ 1.5×). Series: cold ${r.series.coldMs.toFixed(0)} ms, warm median ${ms(r.series.warm.medianUs)}.`
].join("\n")

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const config = configFromEnv()
  ensureMarket(config)
  const result = await runSummaryBench(config.dbFile, SUMMARY_RUNS(config.quick))
  console.log(summaryMarkdown(result))
}
