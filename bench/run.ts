import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { configFromEnv, DATA_DIR, REPO_ROOT } from "./config"
import { dashboardLine, dashboardMarkdown, runDashboardBench } from "./dashboard"
import { issueBenchToken, openMarket, runCoreBench } from "./core-bench"
import { hardwareConfig, runHardwareBench } from "./hardware"
import { importConfig, importMarkdown, runImportBench } from "./import"
import { exportLines, exportMarkdown, runExportBench } from "./export"
import { feedLines, feedMarkdown, runFeedBench } from "./feed"
import { runIndexBench } from "./indexes"
import { runHttpBench } from "./http-bench"
import { runRedisBench } from "./redis"
import { runServingBench, runSmallPagesBench, servingLines, servingMarkdown, smallPagesLines, smallPagesMarkdown } from "./serving"
import { runStartupBench } from "./startup"
import { runSummaryBench, SUMMARY_RUNS, summaryLines, summaryMarkdown } from "./summaries"
import { runSyncBench, syncLines, syncMarkdown } from "./sync"
import { runTopologyBench, topologyLines, topologyMarkdown } from "./topologies"
import { runWorkersBench, workersLines, workersMarkdown } from "./workers"
import { ensureMarket } from "./market"
import { consoleTable, importLine, type Line, lines, machine, markdown, skypilotImportLine } from "./report"

/**
 * `npm run bench`: builds or reuses the market, runs the three benchmarks, prints the table and
 * rewrites BENCHMARKS.md. `BENCH_QUICK=1` is a smoke run on a small market whose report goes to
 * bench/.data instead, so it never replaces real figures. `BENCH_STRICT=1` exits 1 when a
 * target is missed. `BENCH_ONLY=k` (or `l`, `m`, `n`, `o`, `p`, `q`, `r`) runs that section alone and writes it to bench/.data, leaving
 * BENCHMARKS.md alone; the other sections run alone as `npx tsx bench/<section>.ts`.
 */

const log = (line: string) => console.log(line)

/**
 * The section of BENCHMARKS.md that no run measures: figures taken by hand when a choice in the
 * code was made, which its comments point to. A run rewrites the rest of the file and keeps it.
 */
const handMeasurements = (): string => {
  const file = path.join(REPO_ROOT, "BENCHMARKS.md")
  const text = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : ""
  const start = text.indexOf("\n## Measurements behind code choices\n")
  if (start < 0) return ""
  const end = text.indexOf("\n## ", start + 1)
  return `\n${text.slice(start, end < 0 ? undefined : end).trimEnd()}\n`
}

/**
 * A hash of the library sources measured. The packages change under active development and the
 * repository may have no commit to name, so this ties a figure to the code that produced it.
 */
const sourceFingerprint = (): { readonly hash: string; readonly files: number } => {
  const files: Array<string> = []
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name)
      if (e.isDirectory()) walk(p)
      else if (e.name.endsWith(".ts")) files.push(p)
    }
  }
  for (const pkg of fs.readdirSync(path.join(REPO_ROOT, "packages"))) {
    const src = path.join(REPO_ROOT, "packages", pkg, "src")
    if (fs.existsSync(src)) walk(src)
  }
  const hash = createHash("sha256")
  for (const f of files.sort()) hash.update(path.relative(REPO_ROOT, f)).update("\0").update(fs.readFileSync(f)).update("\0")
  return { hash: hash.digest("hex").slice(0, 12), files: files.length }
}

/**
 * One section alone (`BENCH_ONLY=<letter>`): its lines on the console, its section (and, with
 * `raw`, its figures as JSON, to write the section again later) in bench/.data.
 */
const sectionOnly = async <R>(
  letter: string,
  quick: boolean,
  run: Promise<R>,
  linesOf: (r: R) => ReadonlyArray<Line>,
  section: (r: R) => string,
  raw = false
) => {
  const result = await run
  const ls = linesOf(result)
  log("")
  log(consoleTable(ls))
  fs.mkdirSync(DATA_DIR, { recursive: true })
  const out = path.join(DATA_DIR, `BENCHMARKS.${letter}${quick ? ".quick" : ""}.md`)
  fs.writeFileSync(out, section(result))
  if (raw) fs.writeFileSync(out.replace(/\.md$/, ".json"), JSON.stringify(result, null, 2))
  log(`\nWrote ${path.relative(REPO_ROOT, out)}.`)
  if (process.env.BENCH_STRICT === "1" && ls.some((l) => !l.pass)) process.exitCode = 1
}

const main = async () => {
  const started = performance.now()
  const config = configFromEnv()
  const m = machine()
  log(`gpu-market benchmarks${config.quick ? " (quick mode)" : ""}: ${m.cpu}, ${m.cores} cores, ${m.memory}, Node ${m.node}`)
  const only = process.env.BENCH_ONLY
  if (only !== undefined && only !== "") {
    const q = config.quick
    if (only === "k") return sectionOnly("k", q, runImportBench(importConfig(q), log), (r) => [importLine(r), skypilotImportLine(r)], importMarkdown)
    if (only === "l") return sectionOnly("l", q, runServingBench(q, log), servingLines, servingMarkdown)
    if (only === "m") return sectionOnly("m", q, runDashboardBench(q, log), (r) => [dashboardLine(r)], dashboardMarkdown)
    if (only === "n") return sectionOnly("n", q, runFeedBench(q, log), feedLines, feedMarkdown)
    if (only === "o") return sectionOnly("o", q, runTopologyBench(q, log), topologyLines, (r) => topologyMarkdown(r), true)
    if (only === "p") return sectionOnly("p", q, runSyncBench(log), syncLines, syncMarkdown)
    if (only === "q") return sectionOnly("q", q, runWorkersBench(q, log), workersLines, workersMarkdown, true)
    if (only === "r") return sectionOnly("r", q, runSmallPagesBench(log), smallPagesLines, smallPagesMarkdown)
    if (only === "s") return sectionOnly("s", q, runSummaryBench(ensureMarket(config).file, SUMMARY_RUNS(q)), summaryLines, summaryMarkdown)
    if (only === "t") return sectionOnly("t", q, Promise.resolve(runExportBench(q, log)), exportLines, exportMarkdown, true)
    throw new Error(`BENCH_ONLY supports k, l, m, n, o, p, q, r, s and t; run another section alone with npx tsx bench/<section>.ts`)
  }

  const loadBefore = os.loadavg()[0]!
  if (loadBefore > 0.5 * m.cores) log(`Warning: 1-minute load average is ${loadBefore.toFixed(2)} on ${m.cores} cores; other work will skew the figures.`)
  const market = ensureMarket(config)
  log(market.builtNow
    ? `Built the market in ${market.buildSeconds.toFixed(1)} s: ${market.rows.toLocaleString("en-US")} rows, ${(market.bytes / 2 ** 20).toFixed(0)} MiB`
    : `Reusing ${path.relative(REPO_ROOT, market.file)} (${market.rows.toLocaleString("en-US")} rows, ${(market.bytes / 2 ** 20).toFixed(0)} MiB; built in ${market.buildSeconds.toFixed(1)} s on ${market.builtAt.slice(0, 10)})`)

  log("(a), (b): core direct calls ...")
  const runtime = openMarket(market.file)
  let core
  try {
    await issueBenchToken(runtime)
    core = await runCoreBench(config, market.file, runtime)
  } finally {
    // Closed before the load runs, so this process holds no connection the servers compete with.
    await runtime.dispose()
  }

  const loadBeforeHttp = os.loadavg()[0]!
  log("(c): HTTP load ...")
  const http = await runHttpBench(config, market.file, core.pageTokenLength, log)
  log("(l): serving speed, hot and cold pages ...")
  const serving = await runServingBench(config.quick, log)
  log("(q): serve --workers 2 vs one process, cold pages ...")
  const workers = await runWorkersBench(config.quick, log)
  log("(r): small pages, hot and cold ...")
  const smallPages = await runSmallPagesBench(log)
  log("(d): hardware /history paging ...")
  const hardware = await runHardwareBench(hardwareConfig(config.quick), log)
  log("(e): index computation from scratch ...")
  const indexes = await runIndexBench(config.quick, log)
  log("(f), (g): Redis vs SQLite ...")
  const redis = await runRedisBench(config.quick, log)
  log("(o): Redis Cluster vs one server, Sentinel failover ...")
  const topologies = await runTopologyBench(config.quick, log)
  log("(h), (i): start-up ...")
  const startup = await runStartupBench(config, log)
  log("(k): CLI import throughput on SQLite ...")
  const importResults = await runImportBench(importConfig(config.quick), log)
  log("(m): dashboard first load in headless Chromium ...")
  const dashboard = await runDashboardBench(config.quick, log)
  log("(n): change-feed fan-out ...")
  const feed = await runFeedBench(config.quick, log)
  log("(p): sync of the public preset ...")
  const sync = await runSyncBench(log)
  log("(s): rental summaries ...")
  const summaries = await runSummaryBench(market.file, SUMMARY_RUNS(config.quick))

  log("(t): exports of the whole rental history ...")
  const exports = runExportBench(config.quick, log)

  const results = {
    config, market, core, http, serving, workers, smallPages, hardware, indexes, redis, topologies, startup, import: importResults, dashboard, feed, sync, summaries, exports,
    date: new Date(),
    wallSeconds: (performance.now() - started) / 1000,
    load: { start: loadBefore, beforeHttp: loadBeforeHttp },
    sources: sourceFingerprint()
  }
  const ls = lines(results)
  log("")
  log(consoleTable(ls))
  const out = config.quick ? path.join(DATA_DIR, "BENCHMARKS.quick.md") : path.join(REPO_ROOT, "BENCHMARKS.md")
  fs.writeFileSync(out, markdown(results) + handMeasurements())
  log(`\nWrote ${path.relative(REPO_ROOT, out)} (${results.wallSeconds.toFixed(0)} s in all).`)
  if (process.env.BENCH_STRICT === "1" && ls.some((l) => !l.pass)) process.exitCode = 1
}

main().catch((e: unknown) => {
  console.error(e)
  process.exitCode = 1
})
