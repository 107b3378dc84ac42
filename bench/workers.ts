import { deepStrictEqual, ok } from "node:assert/strict"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { configFromEnv, DATA_DIR, POPULAR_GPU, REPO_ROOT, SORT_BY } from "./config"
import { issueBenchToken, openMarket } from "./core-bench"
import { get, type Server, startProcess } from "./http-bench"
import { processCpuSeconds } from "./processes"
import { compare, CONNECTIONS, type LoadPlan, type Pair } from "./serving"

/**
 * (q) `gpu-market serve --workers 2` against `--workers 1` on the cold line of (l): every request
 * a query no request asked before, on the demo market `npm start` seeds, with autocannon (32
 * connections) in a process of its own on the same machine. Both count rate limits in memory
 * (`process`, the default on SQLite: the workers' primary counts for them); a second pair
 * measures what counting in the SQLite file instead (`shared`, a write per request) costs one
 * process. Runs inside `npm run bench`, or alone: `BENCH_ONLY=q npm run bench`.
 */

const BIN = path.join(REPO_ROOT, "packages", "cli", "bin", "gpu-market.js")
const CLI = BIN
const DEMO_DB = path.join(DATA_DIR, "demo-workers.db")
/** Ten rows: a small page, where a request's own cost, not its rows, is what a core spends. */
const PAGE = `/v2/gpu/rental/prices/latest?gpu_canonical_name=${POPULAR_GPU}&sort_by=${SORT_BY}&page_size=10`

/** How many times (l)'s warm-up each server gets before the timed runs. */
const WARMUP_TIMES = 3

/** `--workers 2` against one process loses to this little, at most, on this line. */
export const WORKERS_TARGET = 1.0

export interface WorkersResults {
  /** Two workers against one process, both with `process` rate limits. */
  readonly workers: Pair
  /** One process with shared rate limits against one with process rate limits. */
  readonly shared: Pair
  readonly cores: number
  /** 1-minute load average before the first run and after the last. */
  readonly load: { readonly before: number; readonly after: number }
  readonly connections: number
  readonly warmupSeconds: number
  readonly seconds: number
  readonly runs: number
}

/** User + system seconds of `pid` and of every process whose parent it is (a cluster's workers), from /proc. */
const treeCpuSeconds = (pid: number | undefined): number | undefined => {
  const own = processCpuSeconds(pid)
  if (own === undefined) return undefined
  let total = own
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8")
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid) total += processCpuSeconds(Number(entry)) ?? 0
    } catch {
      // Gone since the listing.
    }
  }
  return total
}

/** `gpu-market serve` over the demo file with `args`, once each of its `workers` listens; its CPU is the whole tree's. */
const startServe = async (name: string, args: ReadonlyArray<string>, workers: number): Promise<Server> => {
  const server = await startProcess(name, (port) => ({
    args: [CLI, "serve", "--db", DEMO_DB, "--port", String(port), ...args], env: { GPU_MARKET_LOG_FORMAT: "json", GPU_MARKET_RATE_LIMITS: "" }
  }), PAGE, workers)
  return { ...server, cpuSeconds: () => treeCpuSeconds(server.pid) }
}

export const runWorkersBench = async (quick: boolean, log: (line: string) => void): Promise<WorkersResults> => {
  const config = configFromEnv(quick ? { BENCH_QUICK: "1" } : {})
  // Three times (l)'s warm-up: each worker sees only its share of the warm-up's requests, and warms its JIT and caches on them.
  const plan: LoadPlan = { warmupSeconds: WARMUP_TIMES * config.httpWarmupSeconds, seconds: config.httpSeconds, runs: config.httpRuns }
  if (!fs.existsSync(DEMO_DB)) {
    log("  seeding the demo market ...")
    fs.mkdirSync(DATA_DIR, { recursive: true })
    execFileSync(process.execPath, [BIN, "seed", "--db", DEMO_DB], { cwd: REPO_ROOT, stdio: ["ignore", "ignore", "inherit"] })
  }
  const tokens = openMarket(DEMO_DB)
  try {
    await issueBenchToken(tokens)
  } finally {
    await tokens.dispose()
  }
  const servers: Array<Server> = []
  const before = os.loadavg()[0]!
  try {
    const one = await startServe("1 process", [], 1)
    servers.push(one)
    const two = await startServe("2 workers", ["--workers", "2"], 2)
    servers.push(two)
    const [a, b] = [await get(one.url), await get(two.url)]
    ok(a.status === 200 && b.status === 200, `the page answered ${a.status} and ${b.status}: ${a.text.slice(0, 300)} ${b.text.slice(0, 300)}`)
    deepStrictEqual((JSON.parse(b.text) as { data: unknown }).data, (JSON.parse(a.text) as { data: unknown }).data, "2 workers and 1 process disagree on the page")
    const workers = await compare(two, one, true, plan, "workers", log)
    log(`  (q) 2 workers: ${workers.subject.reqPerSec.toFixed(0)} req/s vs 1 process ${workers.reference.reqPerSec.toFixed(0)} req/s, ${workers.ratio.toFixed(2)}×`)
    await two.stop()
    const shared = await startServe("1 shared", ["--rate-limits", "shared"], 1)
    servers.push(shared)
    const sharedPair = await compare(shared, one, true, plan, "shared ", log)
    log(`  (q) 1 process, shared rate limits: ${sharedPair.subject.reqPerSec.toFixed(0)} req/s vs process ${sharedPair.reference.reqPerSec.toFixed(0)} req/s, ${sharedPair.ratio.toFixed(2)}×`)
    return {
      workers, shared: sharedPair, cores: os.availableParallelism(), load: { before, after: os.loadavg()[0]! },
      connections: CONNECTIONS, warmupSeconds: plan.warmupSeconds, seconds: plan.seconds, runs: plan.runs
    }
  } finally {
    for (const s of servers) await s.stop()
  }
}

const n0 = (x: number) => Math.round(x).toLocaleString("en-US")
const md = (row: ReadonlyArray<string>) => `| ${row.join(" | ")} |`

/** The line of (q): two workers against one process on cold pages. */
export const workersLines = (r: WorkersResults) => [{
  name: `(q) cold /latest pages of 10, serve --workers 2 vs one process, on ${r.cores} cores shared with the load generator`,
  figure: `${n0(r.workers.subject.reqPerSec)} req/s`,
  baseline: `${n0(r.workers.reference.reqPerSec)} req/s`,
  ratio: r.workers.ratio,
  target: `≥ ${WORKERS_TARGET.toFixed(2)}×`,
  pass: r.workers.ratio >= WORKERS_TARGET
}]

/** The section of (q) in BENCHMARKS.md. */
export const workersMarkdown = (r: WorkersResults): string => {
  const rows = (label: string, pair: Pair) => [pair.subject, pair.reference].map((s) => md([
    label, s.name, n0(s.reqPerSec), s.cpuUsPerRequest === undefined ? "n/a" : `${n0(s.cpuUsPerRequest)} µs`, `${s.p99Ms} ms`, s.runs.map((run) => n0(run.reqPerSec)).join(", ")
  ]))
  return `## (q) serve --workers 2 vs one process

\`gpu-market serve --workers 2\` and \`gpu-market serve\` over one copy of the demo market \`npm start\` seeds (\`bench/.data/demo-workers.db\`), loaded in turn by autocannon in a process of its own on the same ${r.cores} cores (${r.connections} connections, no pipelining, ${r.runs} × ${r.seconds} s runs per server after a warm-up of ${r.warmupSeconds} s each, three times (l)'s since each worker warms on its share of it, alternating; medians over runs). Every request is \`${PAGE}\` with a \`max_price_usd_per_gpu_hour\` no request asked before, the cold line of (l): nothing any cache can answer. Both count rate limits in memory (\`process\`, the default on SQLite; the workers' primary holds the counters for both, a message there and back per request). The second pair is one process counting them in the SQLite file (\`shared\`, a write per request) against the same one with \`process\`: what counting in the storage costs. CPU per request is the whole process tree's (primary and workers) user + system time from /proc. Load average ${r.load.before.toFixed(1)} before, ${r.load.after.toFixed(1)} after.

${md(["pair", "server", "req/s", "CPU/request", "p99 latency", "runs (req/s)"])}
${md(["---", "---", "---:", "---:", "---:", "---"])}
${[...rows("workers", r.workers), ...rows("rate limits", r.shared)].join("\n")}

Ratios of req/s: 2 workers ${r.workers.ratio.toFixed(2)}× of one process (target ≥ ${WORKERS_TARGET.toFixed(2)}×: a second worker must not cost throughput); one process with shared rate limits ${r.shared.ratio.toFixed(2)}× of one with process rate limits.
`
}
