import { Auth, marketLayer } from "@gpu-market/core"
import { putVersions, rentalPriceKeys, RentalPriceStore } from "@gpu-market/core/storage"
import type { RentalPrice } from "@gpu-market/core"
import * as RedisStorage from "@gpu-market/storage-redis"
import { Effect, Layer, ManagedRuntime } from "effect"
import { deepStrictEqual, ok } from "node:assert/strict"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { startRedis } from "../test/support/redis"
import { BENCH_TOKEN, configFromEnv, DATA_DIR, REPO_ROOT } from "./config"
import { benchPrincipal, issueBenchToken, openMarket } from "./core-bench"
import { get, load, type LoadRun, type Server, startProcess, startServer } from "./http-bench"
import { ensureMarket, type MarketInfo, productRows } from "./market"
import { median } from "./stats"

/**
 * (l) Serving speed, on SQLite and on Redis, each pair loaded in turn by autocannon at
 * `CONNECTIONS` connections from a process of its own:
 * - hot: the same `/latest` page of 100 asked again and again, `gpu-market serve` itself (its
 *   request log, breaker and rate limits as deployed) against a bare `node:http` server
 *   answering that page's bytes from memory, the machine's ceiling;
 * - cold: every request a query no request asked before, so no cache can answer it, the real
 *   server against the hand-written node:http + better-sqlite3 baseline running the same query.
 * The Redis server holds the quick market (a million rows take too long to load); its cold
 * baseline reads the quick market's SQLite file, the same rows. Runs inside `npm run bench`, or
 * alone: `BENCH_ONLY=l npm run bench`.
 */

/** The command line's entry point: the server measured is `gpu-market serve` itself. */
const CLI = path.join(REPO_ROOT, "packages", "cli", "bin", "gpu-market.js")

/**
 * `gpu-market serve` as a deployment runs it over `storage` (its `--db` or `--redis` options):
 * without demo seeding, which would write demo rows into the market being measured, with its
 * defaults otherwise (rate limits, page cache, request log at info on stderr, circuit breaker).
 */
const startServe = (storage: ReadonlyArray<string>) =>
  startProcess("gpu-market", (port) => ({ args: [CLI, "serve", ...storage, "--port", String(port)], env: { GPU_MARKET_LOG_FORMAT: "json" } }))

/** The real server's hot page against the ceiling: at least this share of what the machine can do. */
export const HOT_TARGET = 0.5
/** The real server's cold pages against the hand-written baseline: at least this many times its rate. */
export const COLD_TARGET = 1.5
/** Connections autocannon keeps open, the load the issue sets for p99. */
export const CONNECTIONS = 32

/** One subject's runs, summarised. */
export interface Side {
  readonly name: string
  readonly runs: ReadonlyArray<LoadRun>
  readonly reqPerSec: number
  readonly cpuUsPerRequest: number | undefined
  readonly p99Ms: number
}

/** Two subjects loaded in turn: the ratio is the subject's median req/s over the reference's. */
export interface Pair {
  readonly subject: Side
  readonly reference: Side
  readonly ratio: number
}

export interface ServingResults {
  readonly sqlite: { readonly market: MarketInfo; readonly hot: Pair; readonly cold: Pair }
  readonly redis: { readonly market: MarketInfo; readonly loadSeconds: number; readonly hot: Pair; readonly cold: Pair }
  readonly bodyBytes: number
  readonly connections: number
  readonly seconds: number
  readonly runs: number
}

const side = (name: string, runs: ReadonlyArray<LoadRun>): Side => {
  const cpu = runs.map((r) => r.cpuUsPerRequest)
  return {
    name,
    runs,
    reqPerSec: median(runs.map((r) => r.reqPerSec)),
    cpuUsPerRequest: cpu.every((c): c is number => c !== undefined) ? median(cpu) : undefined,
    p99Ms: median(runs.map((r) => r.latencyP99Ms))
  }
}

export interface LoadPlan {
  readonly warmupSeconds: number
  readonly seconds: number
  readonly runs: number
}

/** Warms both up, then alternates who goes first run by run, so slow drifts fall on both. */
export const compare = async (subject: Server, reference: Server, vary: boolean, plan: LoadPlan, label: string, log: (line: string) => void): Promise<Pair> => {
  for (const s of [subject, reference]) await load(s, plan.warmupSeconds, CONNECTIONS, vary)
  const runs: Array<LoadRun> = []
  for (let i = 0; i < plan.runs; i++) {
    for (const s of i % 2 === 0 ? [subject, reference] : [reference, subject]) {
      const run = await load(s, plan.seconds, CONNECTIONS, vary)
      const cpu = run.cpuUsPerRequest === undefined ? "" : `  ${run.cpuUsPerRequest.toFixed(0)} µs CPU/req`
      log(`  ${label} run ${i + 1}/${plan.runs} ${s.name.padEnd(9)} ${run.reqPerSec.toFixed(0).padStart(6)} req/s  p99 ${run.latencyP99Ms} ms${cpu}`)
      runs.push(run)
    }
  }
  const a = side(subject.name, runs.filter((r) => r.server === subject.name))
  const b = side(reference.name, runs.filter((r) => r.server === reference.name))
  return { subject: a, reference: b, ratio: a.reqPerSec / b.reqPerSec }
}

type Body = { readonly data: ReadonlyArray<unknown>; readonly meta: Record<string, unknown> }

/** The page both answer to the first cold query: the same rows, or the comparison means nothing. */
const checkSameRows = async (subject: Server, baseline: Server, rows: number) => {
  const cold = "&max_price_usd_per_gpu_hour=100000"
  const [a, b] = [await get(subject.url + cold), await get(baseline.url + cold)]
  ok(a.status === 200 && b.status === 200, `cold page answered ${a.status} and ${b.status}: ${a.text.slice(0, 300)} ${b.text.slice(0, 300)}`)
  const [pa, pb] = [JSON.parse(a.text) as Body, JSON.parse(b.text) as Body]
  ok(pa.data.length === rows, `the cold page has ${pa.data.length} rows`)
  deepStrictEqual(pa.data, pb.data, `${subject.name} and ${baseline.name} disagree on the cold page`)
}

/** `server` asked for pages of `size` rows instead of its benchmark page's 100. */
const withPageSize = (server: Server, size: number): Server => ({ ...server, url: server.url.replace(/page_size=\d+/, `page_size=${size}`) })

/**
 * Hot against the ceiling (serving the subject's own page bytes), cold against the baseline over
 * `baselineDb`, both in pages of `size` rows.
 */
const hotAndCold = async (
  server: Server, baselineDb: string, label: string, plan: LoadPlan, log: (line: string) => void, servers: Array<Server>, size = 100
) => {
  const subject = withPageSize(server, size)
  const page = await get(subject.url)
  ok(page.status === 200, `${subject.name} answered ${page.status}: ${page.text.slice(0, 300)}`)
  const bodyFile = path.join(DATA_DIR, `serving-${label}.json`)
  fs.writeFileSync(bodyFile, page.text)
  const ceiling = await startServer("ceiling", "ceiling-server.ts", { BENCH_BODY_FILE: bodyFile })
  servers.push(ceiling)
  const baseline = withPageSize(await startServer("baseline", "baseline-server.ts", { BENCH_DB: baselineDb, BENCH_TOKEN_LENGTH: "0" }), size)
  servers.push(baseline)
  await checkSameRows(subject, baseline, size)
  const hot = await compare(subject, ceiling, false, plan, `${label} hot `, log)
  log(`  ${label} hot page: ${hot.subject.reqPerSec.toFixed(0)} req/s vs ceiling ${hot.reference.reqPerSec.toFixed(0)} req/s, ${hot.ratio.toFixed(2)}×`)
  const cold = await compare(subject, baseline, true, plan, `${label} cold`, log)
  log(`  ${label} cold pages: ${cold.subject.reqPerSec.toFixed(0)} req/s vs baseline ${cold.reference.reqPerSec.toFixed(0)} req/s, ${cold.ratio.toFixed(2)}×`)
  return { hot, cold, bodyBytes: Buffer.byteLength(page.text) }
}

/** Loads the quick market's rows into a Redis through the store's write, as (f) does, and registers the bench token. */
const loadRedis = async (url: string, products: number) => {
  const runtime = ManagedRuntime.make(RedisStorage.layer({ url, prefix: "bench" }))
  const started = performance.now()
  try {
    await runtime.runPromise(Effect.gen(function* () {
      const store = yield* RentalPriceStore
      let batch: Array<RentalPrice> = []
      for (let i = 0; i < products; i++) {
        batch.push(...productRows(i))
        if (batch.length >= 1000 || i === products - 1) {
          yield* putVersions(store.transact, rentalPriceKeys, batch)
          batch = []
        }
      }
    }))
  } finally {
    await runtime.dispose()
  }
  return (performance.now() - started) / 1000
}

export const runServingBench = async (quick: boolean, log: (line: string) => void): Promise<ServingResults> => {
  const config = configFromEnv(quick ? { BENCH_QUICK: "1" } : {})
  const plan: LoadPlan = { warmupSeconds: config.httpWarmupSeconds, seconds: config.httpSeconds, runs: config.httpRuns }
  const market = ensureMarket(config)
  const quickMarket = ensureMarket(configFromEnv({ BENCH_QUICK: "1" }))
  const servers: Array<Server> = []
  const stopAll = async () => {
    for (const s of servers.splice(0)) await s.stop()
  }
  const tokens = openMarket(market.file)
  try {
    await issueBenchToken(tokens)
  } finally {
    await tokens.dispose()
  }
  try {
    const adapter = await startServe(["--db", market.file])
    servers.push(adapter)
    const sqlite = await hotAndCold(adapter, market.file, "sqlite", plan, log, servers)
    await stopAll()

    const redisServer = await startRedis()
    try {
      log(`  loading ${quickMarket.rows.toLocaleString("en-US")} rental rows into Redis ...`)
      const loadSeconds = await loadRedis(redisServer.url, quickMarket.products)
      const auth = ManagedRuntime.make(marketLayer.pipe(Layer.provide(RedisStorage.layer({ url: redisServer.url, prefix: "bench" }))))
      try {
        await auth.runPromise(Effect.flatMap(Auth, (a) => a.issue(benchPrincipal, BENCH_TOKEN)))
      } finally {
        await auth.dispose()
      }
      log(`  loaded in ${loadSeconds.toFixed(1)} s`)
      const onRedis = await startServe(["--redis", redisServer.url, "--redis-prefix", "bench"])
      servers.push(onRedis)
      const redis = await hotAndCold(onRedis, quickMarket.file, "redis", plan, log, servers)
      await stopAll()
      return {
        sqlite: { market, hot: sqlite.hot, cold: sqlite.cold },
        redis: { market: quickMarket, loadSeconds, hot: redis.hot, cold: redis.cold },
        bodyBytes: sqlite.bodyBytes,
        connections: CONNECTIONS,
        seconds: plan.seconds,
        runs: plan.runs
      }
    } finally {
      await stopAll()
      await redisServer.stop()
    }
  } finally {
    await stopAll()
  }
}

/** Page sizes of (q): the small pages most requests ask for. */
export const SMALL_PAGE_SIZES = [10, 50] as const

/** What (r) measured: per page size, hot and cold on SQLite. */
export interface SmallPagesResults {
  readonly market: MarketInfo
  readonly pages: ReadonlyArray<{ readonly size: number; readonly bodyBytes: number; readonly hot: Pair; readonly cold: Pair }>
  readonly plan: LoadPlan
  readonly loadAverage: readonly [number, number]
}

/**
 * (r) Small pages: the quick market's (the demo market's size: about 2,000 current `h100-sxm`
 * rows) `/latest` sorted by price in pages of 10 and 50, hot against the bare server and cold
 * against the hand-written one, as (l) measures pages of 100. `BENCH_ONLY=q npm run bench`.
 */
export const runSmallPagesBench = async (log: (line: string) => void): Promise<SmallPagesResults> => {
  const market = ensureMarket(configFromEnv({ BENCH_QUICK: "1" }))
  const plan: LoadPlan = { warmupSeconds: 2, seconds: 5, runs: 3 }
  const tokens = openMarket(market.file)
  try {
    await issueBenchToken(tokens)
  } finally {
    await tokens.dispose()
  }
  const servers: Array<Server> = []
  const before = os.loadavg()[0]!
  try {
    const adapter = await startServe(["--db", market.file])
    servers.push(adapter)
    const pages = []
    for (const size of SMALL_PAGE_SIZES) {
      const { hot, cold, bodyBytes } = await hotAndCold(adapter, market.file, `page-${size}`, plan, log, servers, size)
      pages.push({ size, bodyBytes, hot, cold })
    }
    return { market, pages, plan, loadAverage: [before, os.loadavg()[0]!] }
  } finally {
    for (const s of servers.splice(0)) await s.stop()
  }
}

/** The CPU per request of `pair`'s subject over its reference's. */
const cpuRatio = (pair: Pair) =>
  pair.subject.cpuUsPerRequest === undefined || pair.reference.cpuUsPerRequest === undefined ? undefined : pair.subject.cpuUsPerRequest / pair.reference.cpuUsPerRequest

/** The hot CPU target of (q): at most this many times the bare server's CPU per request. */
export const HOT_CPU_TARGET = 2.5

/** The lines of (q): per page size, hot req/s, hot CPU and cold req/s. */
export const smallPagesLines = (r: SmallPagesResults) => r.pages.flatMap(({ size, hot, cold }) => {
  const hotCpu = cpuRatio(hot)
  return [
    { name: `(r) hot /latest page of ${size}, server vs bare node:http`, figure: `${n0(hot.subject.reqPerSec)} req/s`, baseline: `${n0(hot.reference.reqPerSec)} req/s`, ratio: hot.ratio, target: `≥ ${HOT_TARGET.toFixed(2)}×`, pass: hot.ratio >= HOT_TARGET },
    { name: `(r) hot /latest page of ${size}, CPU per request vs bare node:http`, figure: cpu(hot.subject), baseline: cpu(hot.reference), ratio: hotCpu ?? Number.NaN, target: `≤ ${HOT_CPU_TARGET.toFixed(2)}×`, pass: hotCpu !== undefined && hotCpu <= HOT_CPU_TARGET },
    { name: `(r) cold /latest pages of ${size}, server vs node:http + better-sqlite3`, figure: `${n0(cold.subject.reqPerSec)} req/s`, baseline: `${n0(cold.reference.reqPerSec)} req/s`, ratio: cold.ratio, target: `≥ ${COLD_TARGET.toFixed(2)}×`, pass: cold.ratio >= COLD_TARGET }
  ]
})

/** The section of (r) in BENCHMARKS.md. */
export const smallPagesMarkdown = (r: SmallPagesResults): string => {
  const rows = (label: string, pair: Pair) => [pair.subject, pair.reference].map((s) =>
    md([label, s.name, n0(s.reqPerSec), cpu(s), `${s.p99Ms} ms`, s.runs.map((run) => n0(run.reqPerSec)).join(", ")]))
  return `## (r) Small pages: hot and cold pages of 10 and 50 rows

As (l), on the quick market's SQLite file (${n0(r.market.rows)} rows; about 2,000 current rows of \`h100-sxm\`, the demo market's size): \`/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm&sort_by=price_usd_per_gpu_hour&page_size=<n>\`, ${r.plan.runs} × ${r.plan.seconds} s runs per server after ${r.plan.warmupSeconds} s of warm-up, alternating, medians. Hot against the bare \`node:http\` server answering the same bytes; cold (a new \`max_price_usd_per_gpu_hour\` each request) against the hand-written \`node:http\` + better-sqlite3 server. 1-minute load average ${r.loadAverage[0].toFixed(2)} before, ${r.loadAverage[1].toFixed(2)} after.

${md(["pages", "server", "req/s", "CPU/request", "p99 latency", "runs (req/s)"])}
${md(["---", "---", "---:", "---:", "---:", "---"])}
${r.pages.flatMap(({ size, bodyBytes, hot, cold }) => [...rows(`${size} rows (${n0(bodyBytes)} B), hot`, hot), ...rows(`${size} rows, cold`, cold)]).join("\n")}

${r.pages.map(({ size, hot, cold }) => `Pages of ${size}: hot ${hot.ratio.toFixed(2)}× the bare server's req/s (target ≥ ${HOT_TARGET.toFixed(2)}×) at ${(cpuRatio(hot) ?? Number.NaN).toFixed(2)}× its CPU per request (target ≤ ${HOT_CPU_TARGET.toFixed(2)}×); cold ${cold.ratio.toFixed(2)}× the hand-written server (target ≥ ${COLD_TARGET.toFixed(2)}×).`).join("\n")}
`
}

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href
if (isMain) {
  runServingBench(process.env.BENCH_QUICK === "1", (line) => console.log(line)).then((r) => {
    console.log(JSON.stringify({ sqlite: { hot: r.sqlite.hot.ratio, cold: r.sqlite.cold.ratio }, redis: { hot: r.redis.hot.ratio, cold: r.redis.cold.ratio } }))
  }).catch((e: unknown) => {
    console.error(e)
    process.exitCode = 1
  })
}

const n0 = (x: number) => Math.round(x).toLocaleString("en-US")
const cpu = (s: Side) => (s.cpuUsPerRequest === undefined ? "n/a" : `${n0(s.cpuUsPerRequest)} µs`)

/** The four lines of (l): hot and cold, on SQLite and on Redis. */
export const servingLines = (r: ServingResults) => {
  const line = (name: string, pair: Pair, target: number) => ({
    name,
    figure: `${n0(pair.subject.reqPerSec)} req/s`,
    baseline: `${n0(pair.reference.reqPerSec)} req/s`,
    ratio: pair.ratio,
    target: `≥ ${target.toFixed(2)}×`,
    pass: pair.ratio >= target
  })
  return [
    line("(l) hot /latest page, SQLite server vs bare node:http from memory", r.sqlite.hot, HOT_TARGET),
    line("(l) cold /latest pages, SQLite server vs node:http + better-sqlite3", r.sqlite.cold, COLD_TARGET),
    line("(l) hot /latest page, Redis server vs bare node:http from memory", r.redis.hot, HOT_TARGET),
    line("(l) cold /latest pages, Redis server vs node:http + better-sqlite3", r.redis.cold, COLD_TARGET)
  ]
}

const md = (row: ReadonlyArray<string>) => `| ${row.join(" | ")} |`

/** The section of (l) in BENCHMARKS.md. */
export const servingMarkdown = (r: ServingResults): string => {
  const rows = (label: string, pair: Pair) => [pair.subject, pair.reference].map((s) =>
    md([label, s.name, n0(s.reqPerSec), cpu(s), `${s.p99Ms} ms`, s.runs.map((run) => n0(run.reqPerSec)).join(", ")]))
  return `## (l) Serving speed: hot and cold pages

Each server in a child process of its own, loaded in turn by autocannon in a third (${r.connections} connections, no pipelining), ${r.runs} × ${r.seconds} s runs per server after a warm-up, alternating; figures are medians over runs. The served page is \`/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm&sort_by=price_usd_per_gpu_hour&page_size=100\` (${n0(r.bodyBytes)} bytes).

- **Hot**: that page again and again, \`gpu-market serve\` itself (rate limits in the process on SQLite, shared on Redis; the response cache on; its JSON request log at info, one line per request to a pipe), against a bare \`node:http\` server answering the same bytes from memory with no routing, auth or rate limit: the machine's ceiling.
- **Cold**: every request a query no request asked before (\`max_price_usd_per_gpu_hour\` above every price, a new value each time: the same 100 rows, nothing any cache can answer), against the hand-written \`node:http\` + better-sqlite3 server running the same query with object rows and \`JSON.stringify\` (no auth, no rate limit, no signing). Both answer the first cold query with the same rows (checked).
- **Redis**: the server over a redis-server started by the bench and loaded with the quick market (${n0(r.redis.market.rows)} rows, loaded in ${r.redis.loadSeconds.toFixed(0)} s; a million rows take too long to load), against the same ceiling and a baseline over the quick market's SQLite file (the same rows).

${md(["pages", "server", "req/s", "CPU/request", "p99 latency", "runs (req/s)"])}
${md(["---", "---", "---:", "---:", "---:", "---"])}
${[...rows("SQLite, hot", r.sqlite.hot), ...rows("SQLite, cold", r.sqlite.cold), ...rows("Redis, hot", r.redis.hot), ...rows("Redis, cold", r.redis.cold)].join("\n")}

Ratios of req/s: SQLite hot ${r.sqlite.hot.ratio.toFixed(2)}× of the ceiling (target ≥ ${HOT_TARGET.toFixed(2)}×), cold ${r.sqlite.cold.ratio.toFixed(2)}× of the baseline (target ≥ ${COLD_TARGET.toFixed(2)}×); Redis hot ${r.redis.hot.ratio.toFixed(2)}×, cold ${r.redis.cold.ratio.toFixed(2)}×. CPU per request is the server process's user + system time (from /proc) over the requests it answered: on a shared machine it moves less than req/s.
`
}
