import { type ExportBenchResults, exportLines, exportMarkdown } from "./export"
import { type FeedBenchResults, feedLines, feedMarkdown } from "./feed"
import { type SummaryBenchResults, summaryLines, summaryMarkdown } from "./summaries"
import { type SyncBenchResults, syncLines, syncMarkdown } from "./sync"
import * as os from "node:os"
import type { BenchConfig } from "./config"
import type { CoreResults, Timing } from "./core-bench"
import { dashboardLine, dashboardMarkdown, type DashboardResults } from "./dashboard"
import type { HttpResults } from "./http-bench"
import { HARDWARE_TARGET, hardwareMarkdown, type HardwareResults } from "./hardware"
import { IMPORT_TARGET, importFigure, importMarkdown, type ImportBenchResults, SKYPILOT_FLOOR_TARGET, SKYPILOT_RSS_TARGET } from "./import"
import { type IndexBenchResults, indexMarkdown } from "./indexes"
import type { MarketInfo } from "./market"
import { LONGEST_COMMAND_TARGET_MS, REDIS_TARGET, type RedisBenchResults, redisMarkdown } from "./redis"
import { servingLines, servingMarkdown, type ServingResults, smallPagesLines, smallPagesMarkdown, type SmallPagesResults } from "./serving"
import { apiCostOf, type TopologyBenchResults, topologyLines, topologyMarkdown } from "./topologies"
import { STARTUP_TARGET_SECONDS, type StartupResults, startupMarkdown } from "./startup"
import { workersLines, workersMarkdown, type WorkersResults } from "./workers"

/** The run's figures as a console table and as the whole of BENCHMARKS.md. */

export interface RunResults {
  readonly config: BenchConfig
  readonly market: MarketInfo
  readonly core: CoreResults
  readonly http: HttpResults
  readonly serving: ServingResults
  readonly workers: WorkersResults
  readonly smallPages: SmallPagesResults
  readonly hardware: HardwareResults
  readonly indexes: IndexBenchResults
  readonly redis: RedisBenchResults
  readonly topologies: TopologyBenchResults
  readonly startup: StartupResults
  readonly import: ImportBenchResults
  readonly dashboard: DashboardResults
  readonly feed: FeedBenchResults
  readonly sync: SyncBenchResults
  readonly summaries: SummaryBenchResults
  readonly exports: ExportBenchResults
  readonly date: Date
  readonly wallSeconds: number
  /** 1-minute load averages: at the start, and before the HTTP load (after (a) and (b)). */
  readonly load: { readonly start: number; readonly beforeHttp: number }
  readonly sources: { readonly hash: string; readonly files: number }
}

export interface Line {
  readonly name: string
  readonly figure: string
  readonly baseline: string
  readonly ratio: number
  readonly target: string
  readonly pass: boolean
}

const us = (n: number) => `${n.toFixed(0)} µs`
const rps = (n: number) => `${n.toFixed(0)} req/s`
const times = (n: number) => `${n.toFixed(2)}×`
const thousands = (n: number) => n.toLocaleString("en-US")
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`

/** (k): the CLI's rows per second of new products after start-up, against bare inserts; the target is absolute. */
export const importLine = (r: ImportBenchResults): Line => ({
  name: `(k) CLI import of ${r.config.rows.toLocaleString("en-US")} new rental rows on SQLite, rows/s after start-up (peak RSS), vs bare inserts`,
  figure: importFigure(r),
  baseline: `${r.bare.rate.toFixed(0)} rows/s`,
  ratio: r.fresh.rate / r.bare.rate,
  target: `≥ ${IMPORT_TARGET.toLocaleString("en-US")} rows/s`,
  pass: r.fresh.rate >= IMPORT_TARGET
})

/** The streamed SkyPilot import of (k): stored rows per second against the floor's, and its peak RSS. */
export const skypilotImportLine = (r: ImportBenchResults): Line => {
  const ratio = (2 * r.skypilot.rate) / r.floor.rate
  return {
    name: `(k) streamed SkyPilot import of ${r.config.rows.toLocaleString("en-US")} GPU rows (two observations each) on SQLite, observations/s after start-up (peak RSS), vs the floor`,
    figure: `${Math.round(2 * r.skypilot.rate).toLocaleString("en-US")} obs/s, peak RSS ${((r.skypilot.peakRssBytes ?? NaN) / 2 ** 20).toFixed(0)} MiB`,
    baseline: `${r.floor.rate.toFixed(0)} rows/s`,
    ratio,
    target: `≥ ${SKYPILOT_FLOOR_TARGET}×, ≤ ${SKYPILOT_RSS_TARGET / 2 ** 20} MiB`,
    pass: ratio >= SKYPILOT_FLOOR_TARGET && (r.skypilot.peakRssBytes ?? Infinity) <= SKYPILOT_RSS_TARGET
  }
}

export const lines = (r: RunResults): ReadonlyArray<Line> => {
  const { direct, deep } = r.core
  const a = direct.core.medianUs / direct.bare.medianUs
  const b = deep.deep.medianUs / deep.first.medianUs
  const c = r.http.adapterMedian / r.http.baselineMedian
  const { server, bareServer, poolAnswer, bareWorkers } = r.startup
  const startupTarget = `≤ ${STARTUP_TARGET_SECONDS.toFixed(1)} s`
  return [
    { name: "(a) core /latest page of 100 vs bare statement", figure: us(direct.core.medianUs), baseline: us(direct.bare.medianUs), ratio: a, target: "≤ 1.50×", pass: a <= 1.5 },
    { name: `(b) page ${thousands(deep.page)} vs page 1 (page_size ${deep.pageSize}), core`, figure: us(deep.deep.medianUs), baseline: us(deep.first.medianUs), ratio: b, target: "≤ 1.20×", pass: b <= 1.2 },
    { name: "(c) HTTP req/s, adapter vs node:http baseline", figure: rps(r.http.adapterMedian), baseline: rps(r.http.baselineMedian), ratio: c, target: "≥ 0.80×", pass: c >= 0.8 },
    ...servingLines(r.serving),
    ...workersLines(r.workers),
    ...smallPagesLines(r.smallPages),
    { name: "(d) hardware /history rows/s, core paging vs bare scan", figure: `${r.hardware.coreMedian.toFixed(0)} rows/s`, baseline: `${r.hardware.bareMedian.toFixed(0)} rows/s`, ratio: r.hardware.ratio, target: `≥ ${HARDWARE_TARGET.toFixed(2)}×`, pass: r.hardware.ratio >= HARDWARE_TARGET },
    { name: "(f) rental /latest page of 100, Redis vs SQLite", figure: us(r.redis.rental.redis.medianUs), baseline: us(r.redis.rental.sqlite.medianUs), ratio: r.redis.rental.ratio, target: `≤ ${REDIS_TARGET.toFixed(2)}×`, pass: r.redis.rental.ratio <= REDIS_TARGET },
    { name: "(g) hardware /history scan, SQLite rows/s over Redis rows/s", figure: `${r.redis.hardware.redisMedian.toFixed(0)} rows/s`, baseline: `${r.redis.hardware.sqliteMedian.toFixed(0)} rows/s`, ratio: r.redis.hardware.ratio, target: `≤ ${REDIS_TARGET.toFixed(2)}×`, pass: r.redis.hardware.ratio <= REDIS_TARGET },
    { name: `(j) longest Redis command while loading ${r.redis.longest.rows.toLocaleString("en-US")} rows`, figure: `${(r.redis.longest.micros / 1000).toFixed(1)} ms`, baseline: `${LONGEST_COMMAND_TARGET_MS} ms`, ratio: r.redis.longest.micros / 1000 / LONGEST_COMMAND_TARGET_MS, target: `≤ ${LONGEST_COMMAND_TARGET_MS} ms`, pass: r.redis.longest.micros <= LONGEST_COMMAND_TARGET_MS * 1000 },
    ...topologyLines(r.topologies),
    { name: "(h) npm start, existing database: spawn to listening, vs bare node:http", figure: seconds(server.medianMs), baseline: seconds(bareServer.medianMs), ratio: server.medianMs / bareServer.medianMs, target: startupTarget, pass: server.medianMs <= STARTUP_TARGET_SECONDS * 1000 },
    { name: "(i) worker pool of 2: createWorkerMarket to first answer, vs 2 bare Workers online", figure: seconds(poolAnswer.medianMs), baseline: seconds(bareWorkers.medianMs), ratio: poolAnswer.medianMs / bareWorkers.medianMs, target: startupTarget, pass: poolAnswer.medianMs <= STARTUP_TARGET_SECONDS * 1000 },
    importLine(r.import),
    skypilotImportLine(r.import),
    dashboardLine(r.dashboard),
    ...feedLines(r.feed),
    ...syncLines(r.sync),
    ...summaryLines(r.summaries),
    ...exportLines(r.exports)
  ]
}

export const consoleTable = (ls: ReadonlyArray<Line>): string => {
  const rows = [["benchmark", "median", "baseline", "ratio", "target", "result"], ...ls.map((l) => [
    l.name, l.figure, l.baseline, times(l.ratio), l.target, l.pass ? "pass" : "FAIL"
  ])]
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)))
  const fmt = (row: ReadonlyArray<string>) => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join("  ")
  return [fmt(rows[0]!), widths.map((w) => "-".repeat(w)).join("  "), ...rows.slice(1).map(fmt)].join("\n")
}

export const machine = () => {
  const cpus = os.cpus()
  return {
    cpu: cpus[0]?.model.trim() ?? "unknown",
    cores: cpus.length,
    memory: `${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`,
    node: process.version,
    os: `${os.type()} ${os.release()} ${os.arch()}`
  }
}

const md = (row: ReadonlyArray<string>) => `| ${row.join(" | ")} |`
const cpuUs = (n: number | undefined) => (n === undefined ? "n/a" : us(n))
const timingRow = (name: string, t: Timing) => md([name, us(t.medianUs), us(t.p10Us), us(t.p90Us), us(t.meanUs)])

export const markdown = (r: RunResults): string => {
  const m = machine()
  const { direct, deep } = r.core
  const { http, market, config } = r
  const ls = lines(r)
  const build = market.builtNow
    ? `built in this run in ${market.buildSeconds.toFixed(0)} s`
    : `reused from the cache (built ${market.builtAt.slice(0, 10)} in ${market.buildSeconds.toFixed(0)} s)`
  return `# Benchmarks

Generated by \`npm run bench\` (\`bench/run.ts\`) on ${r.date.toISOString().slice(0, 16).replace("T", " ")} UTC${config.quick ? " in quick mode (BENCH_QUICK=1)" : ""}; the whole run took ${r.wallSeconds.toFixed(0)} s. Each run rewrites this file. \`BENCH_QUICK=1 npm run bench\` is a one-minute smoke run on a small market; it leaves this file alone.

## Machine

${md(["CPU", "cores", "memory", "Node", "OS"])}
${md(["---", "---", "---", "---", "---"])}
${md([m.cpu, String(m.cores), m.memory, m.node, m.os])}

The machine is shared and noisy; ratios are steadier than absolute figures. 1-minute load average ${r.load.start.toFixed(2)} at the start, ${r.load.beforeHttp.toFixed(2)} before (c). Library sources measured: ${r.sources.files} files under \`packages/*/src\`, sha256 \`${r.sources.hash}\`.

## Market

${thousands(market.rows)} rental rows: ${thousands(market.products)} products over 40 vendors and 30 GPUs, 6 to 11 versions each (closed history rows plus one current row), written through \`RentalPriceStore.transact\` (\`putVersions\`) in batches of ${thousands(config.batchRows)} rows. SQLite file ${mib(market.bytes)}, ${build}, cached at \`${market.file.slice(market.file.indexOf("bench/"))}\`. Every query anchors on \`gpu_canonical_name=h100-sxm\` (${thousands(market.popularCurrentRows)} current rows) sorted by \`price_usd_per_gpu_hour\`.

## Results

${md(["benchmark", "median", "baseline", "ratio", "target", "result"])}
${md(["---", "---:", "---:", "---:", "---:", "---"])}
${ls.map((l) => md([l.name, l.figure, l.baseline, times(l.ratio), l.target, l.pass ? "pass" : "**FAIL**"])).join("\n")}

## (a) Core direct call vs bare statement

\`RentalPrices.latest\` for \`gpu_canonical_name=h100-sxm&sort_by=price_usd_per_gpu_hour&page_size=100\`, run synchronously on a prebuilt \`ManagedRuntime\` over the SQLite layer, against a hand-written better-sqlite3 statement on its own connection returning the same 101 rows (\`.all()\`). Both return the same first 100 rows (checked before timing). ${thousands(direct.core.samples)} timed calls each after ${thousands(config.warmup)} warm-up calls, in ${config.rounds} alternating rounds.

${md(["", "median", "p10", "p90", "mean"])}
${md(["---", "---:", "---:", "---:", "---:"])}
${timingRow("core", direct.core)}
${timingRow("bare statement", direct.bare)}
${timingRow("bare statement, raw mode + literal rows (informational)", direct.bareRaw)}

The baseline is better-sqlite3's default object rows (\`.all()\`), which cost more than the query itself; the raw-mode line shows the cheapest hand-written read of the same rows, for scale (core / raw-mode: ${times(direct.core.medianUs / direct.bareRaw.medianUs)}). Medians leave out GC pauses; the mean column keeps them, and it is the mean that bounds throughput.

Query plans: ${direct.plan}.

## (b) Page 1 vs page ${thousands(deep.page)}

The same query with \`page_size=${deep.pageSize}\` (no GPU has the ${thousands(100 * deep.page)} current rows page ${thousands(deep.page)} of 100 would need). The page-${thousands(deep.page)} token was reached by walking \`meta.next\` from page 1 (${(deep.walkMs / 1000).toFixed(1)} s for ${thousands(deep.page - 1)} pages); page ${thousands(deep.page)} was checked against rows ${thousands((deep.page - 1) * deep.pageSize + 1)}..${thousands(deep.page * deep.pageSize)} of the bare statement. Both through the core, ${thousands(deep.first.samples)} timed calls each.

${md(["", "median", "p10", "p90", "mean"])}
${md(["---", "---:", "---:", "---:", "---:"])}
${timingRow("page 1", deep.first)}
${timingRow(`page ${thousands(deep.page)}`, deep.deep)}

Query plan of a continued page: ${deep.plan}.

## (c) HTTP requests per second

The page of (a) over HTTP. Subject: the http-adapter \`layer\` (the standalone @effect/platform-node server) on 127.0.0.1 with bearer auth and the per-token rate limit (the bench token's limit is never reached). Baseline: \`node:http\` with the bare statement on its own connection, returning \`{ data, meta }\` with the same fields and a stand-in page token of the real token's length; it authenticates, rate-limits and signs nothing. Each server runs in its own child process; autocannon runs in a third (${http.connections} connections, no pipelining). Both servers were checked to answer 200 with the same \`data\` (bodies of ${thousands(http.adapterBodyBytes)} and ${thousands(http.baselineBodyBytes)} bytes). ${config.httpWarmupSeconds} s warm-up each, then ${http.adapter.length} × ${http.seconds} s runs per server, alternating; the figure is the median run.

${md(["run", "adapter req/s", "baseline req/s", "adapter p50 / p99 latency", "baseline p50 / p99 latency", "adapter CPU/req", "baseline CPU/req"])}
${md(["---", "---:", "---:", "---:", "---:", "---:", "---:"])}
${http.adapter.map((a, i) => {
  const b = http.baseline[i]!
  return md([
    String(i + 1), a.reqPerSec.toFixed(0), b.reqPerSec.toFixed(0), `${a.latencyP50Ms} / ${a.latencyP99Ms} ms`,
    `${b.latencyP50Ms} / ${b.latencyP99Ms} ms`, cpuUs(a.cpuUsPerRequest), cpuUs(b.cpuUsPerRequest)
  ])
}).join("\n")}
${http.adapterCpuUsMedian === undefined || http.baselineCpuUsMedian === undefined ? "" : `
Server CPU time per request (user + system, from /proc), median run: adapter ${us(http.adapterCpuUsMedian)}, baseline ${us(http.baselineCpuUsMedian)} (${times(http.baselineCpuUsMedian / http.adapterCpuUsMedian)}). Unlike req/s it hardly moves when a neighbour takes the core, so it is the steadier view of the same gap.
`}
${servingMarkdown(r.serving)}
${workersMarkdown(r.workers)}
${smallPagesMarkdown(r.smallPages)}
${hardwareMarkdown(r.hardware)}
${indexMarkdown(r.indexes)}
${redisMarkdown(r.redis)}
${topologyMarkdown(r.topologies, apiCostOf(r.topologies, r.serving))}
${startupMarkdown(r.startup)}
${importMarkdown(r.import)}
${dashboardMarkdown(r.dashboard)}
${feedMarkdown(r.feed)}
${syncMarkdown(r.sync)}

${summaryMarkdown(r.summaries)}

${exportMarkdown(r.exports)}`
}
