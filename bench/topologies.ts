import {
  type HardwarePrice, HardwarePrices, marketLayer, type Page, type RentalPrice, RentalPrices, type Storage, type StorageError
} from "@gpu-market/core"
import { HardwarePriceStore, MAX_ROWS_PER_WRITE, MemoryStorage, putVersions, rentalPriceKeys, RentalPriceStore } from "@gpu-market/core/storage"
import { pageCacheLayer, type QueryInput } from "@gpu-market/core/adapters"
import * as RedisStorage from "@gpu-market/storage-redis"
import { Effect, Layer, ManagedRuntime } from "effect"
import IORedis from "ioredis"
import { deepStrictEqual, ok } from "node:assert/strict"
import { pathToFileURL } from "node:url"
import { startRedis } from "../test/support/redis"
import { startCluster, startSentinelGroup } from "../test/support/redis-topologies"
import { POPULAR_GPU, SORT_BY } from "./config"
import { type Timing, timing } from "./core-bench"
import { hardwareConfig, hardwareDays } from "./hardware"
import { productRows } from "./market"
import { issueOn, origin, principal, type Runtime, runtimeOver } from "./redis"
import type { ServingResults } from "./serving"
import { interleavedAsync, median } from "./stats"

/**
 * (o) Redis topologies: the same rental `/latest` page and hardware `/history` scan as (f) and
 * (g), on a 3-master Redis Cluster against one redis-server holding the same rows (loopback,
 * started by the bench); what one request costs Redis (commands and server CPU) and the API
 * process (CPU), the inputs of the capacity sketch in BENCHMARKS.md; and the failover gap on
 * Sentinel: a primary with two replicas and three sentinels (`down-after-milliseconds` 1000),
 * the primary killed under a read every 20 ms, timed to the first page served again. Runs inside
 * `npm run bench`, or alone: `BENCH_ONLY=o npm run bench`.
 */

/** How many times slower than one server a Cluster may serve a page (or scan). */
export const CLUSTER_TARGET = 1.5
/** The longest a Sentinel failover may keep the service from answering. */
export const FAILOVER_TARGET_MS = 5000
/** Rental products loaded: enough for a full page of 100 of the popular GPU; a keyset page costs the same at any size. */
const PRODUCTS = 2000
/** Hardware listings loaded (about 25,000 observations over 180 days). */
const LISTINGS = 200
const HARDWARE_PAGE_SIZE = 1000

export interface TopologyBenchResults {
  readonly rentalRows: number
  readonly hardwareRows: number
  readonly latest: { readonly single: Timing; readonly cluster: Timing; readonly ratio: number }
  readonly history: { readonly pages: number; readonly single: ReadonlyArray<number>; readonly cluster: ReadonlyArray<number>; readonly ratio: number }
  /**
   * One `/latest` page through the core on one server: Redis commands and Redis CPU, and the
   * calling process's CPU; `cold` read from Redis, `hot` from the page cache (one version GET).
   */
  readonly cost: { readonly cold: Cost; readonly hot: Cost }
  readonly failover: { readonly promotedMs: number; readonly gapMs: number; readonly failedReads: number }
}

export interface Cost {
  readonly requests: number
  readonly commands: number
  readonly redisCpuUs: number
  readonly processCpuUs: number
}

/** The market over `storage` with no page cache: every page is read from Redis. */
const uncached = (storage: Layer.Layer<Storage, StorageError>): Runtime =>
  ManagedRuntime.make(marketLayer.pipe(Layer.provideMerge(storage), Layer.provide(pageCacheLayer(0))))

/** Loads the rental products and hardware days into `runtime`'s Redis; returns the rows of each and the hardware window. */
const load = (runtime: Runtime) =>
  runtime.runPromise(Effect.gen(function* () {
    const rental = yield* RentalPriceStore
    let batch: Array<RentalPrice> = []
    let rentalRows = 0
    for (let i = 0; i < PRODUCTS; i++) {
      batch.push(...productRows(i))
      if (batch.length >= MAX_ROWS_PER_WRITE || i === PRODUCTS - 1) {
        rentalRows += batch.length
        yield* putVersions(rental.transact, rentalPriceKeys, batch)
        batch = []
      }
    }
    const hardware = yield* HardwarePriceStore
    let hardwareRows = 0
    let first = "9999", last = ""
    for (const { batch: day } of hardwareDays({ ...hardwareConfig(true), listings: LISTINGS })) {
      for (let i = 0; i < day.length; i += MAX_ROWS_PER_WRITE) yield* hardware.put(day.slice(i, i + MAX_ROWS_PER_WRITE))
      for (const r of day) {
        if (r.observed_date < first) first = r.observed_date
        if (r.observed_date > last) last = r.observed_date
      }
      hardwareRows += day.length
    }
    const end = new Date(Date.parse(last) + 86_400_000).toISOString().slice(0, 10)
    return { rentalRows, hardwareRows, window: { start: first, end } }
  }))

const latestOn = async (runtime: Runtime) => {
  const rental = await runtime.runPromise(RentalPrices)
  const query = { gpu_canonical_name: POPULAR_GPU, sort_by: SORT_BY, page_size: "100" }
  return () => runtime.runPromise(rental.latest({ principal, query, origin }))
}

/** Every page of a hardware `/history` window; returns rows and pages seen. */
const walk = async (runtime: Runtime, first: QueryInput) => {
  const hardware = await runtime.runPromise(HardwarePrices)
  let query: QueryInput | null = first
  let rows = 0, pages = 0
  while (query !== null) {
    const page: Page<HardwarePrice> = await runtime.runPromise(hardware.history({ principal, query, origin }))
    rows += page.data.length
    pages++
    query = page.meta.next === null ? null : page.meta.next.query_params
  }
  return { rows, pages }
}

/** Server CPU (user + system, µs) and commands processed so far, from INFO. */
const serverCounters = async (admin: IORedis) => {
  const info = String(await admin.info())
  const field = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)![1])
  return { cpuUs: (field("used_cpu_user") + field("used_cpu_sys")) * 1e6, commands: field("total_commands_processed") }
}

/** (o) measured on this machine; `quick` takes fewer samples. */
export const runTopologyBench = async (quick: boolean, log: (line: string) => void): Promise<TopologyBenchResults> => {
  const server = await startRedis()
  const cluster = await startCluster(3)
  const single = uncached(Layer.merge(MemoryStorage.layer, RedisStorage.layer({ url: server.url, prefix: "bench" })))
  const clustered = uncached(Layer.merge(MemoryStorage.layer, RedisStorage.layer({ cluster: cluster.seeds, prefix: "bench" })))
  const cached = runtimeOver(Layer.merge(MemoryStorage.layer, RedisStorage.layer({ url: server.url, prefix: "bench" })))
  try {
    for (const runtime of [single, clustered]) await issueOn(runtime)
    log(`  (o) loading ${PRODUCTS} rental products and ${LISTINGS} hardware listings into one server and into a 3-master Cluster ...`)
    const [loaded] = await Promise.all([load(single), load(clustered)])

    const singleLatest = await latestOn(single)
    const clusterLatest = await latestOn(clustered)
    const [a, b] = [await singleLatest(), await clusterLatest()]
    ok(a.data.length === 100, `the page has ${a.data.length} rows`)
    deepStrictEqual(b.data, a.data, "the Cluster and the single server disagree on the page")
    const config = quick ? { iterations: 300, warmup: 50, rounds: 6 } : { iterations: 1500, warmup: 200, rounds: 10 }
    const samples = await interleavedAsync([{ name: "single", run: singleLatest }, { name: "cluster", run: clusterLatest }], config)
    const latest = { single: timing(samples.single!), cluster: timing(samples.cluster!), ratio: median(samples.cluster!) / median(samples.single!) }
    log(`  (o) /latest page of 100: one server ${latest.single.medianUs.toFixed(0)} µs, Cluster ${latest.cluster.medianUs.toFixed(0)} µs, ${latest.ratio.toFixed(2)}×`)

    const first = { ...loaded.window, page_size: String(HARDWARE_PAGE_SIZE) }
    const checked = await walk(clustered, first)
    ok(checked.rows === loaded.hardwareRows, `the Cluster walk saw ${checked.rows} rows of ${loaded.hardwareRows}`)
    const rates = { single: [] as Array<number>, cluster: [] as Array<number> }
    for (let round = 0; round < (quick ? 2 : 5); round++) {
      for (const subject of round % 2 === 0 ? ["single", "cluster"] as const : ["cluster", "single"] as const) {
        const started = performance.now()
        const { rows } = await walk(subject === "single" ? single : clustered, first)
        rates[subject].push(rows / ((performance.now() - started) / 1000))
      }
    }
    const history = { pages: checked.pages, single: rates.single, cluster: rates.cluster, ratio: median(rates.single) / median(rates.cluster) }
    log(`  (o) hardware /history: one server ${Math.round(median(rates.single))} rows/s, Cluster ${Math.round(median(rates.cluster))} rows/s, ${history.ratio.toFixed(2)}×`)

    // What one /latest page costs each side, on the single server.
    const admin = new IORedis(server.url)
    const requests = quick ? 500 : 3000
    const costOf = async (page: () => Promise<unknown>): Promise<Cost> => {
      const before = await serverCounters(admin)
      const cpu = process.cpuUsage()
      for (let i = 0; i < requests; i++) await page()
      const used = process.cpuUsage(cpu)
      const after = await serverCounters(admin)
      // INFO itself is one command.
      return { requests, commands: (after.commands - before.commands - 1) / requests, redisCpuUs: (after.cpuUs - before.cpuUs) / requests, processCpuUs: (used.user + used.system) / requests }
    }
    let cost: TopologyBenchResults["cost"]
    try {
      const hotLatest = await latestOn(cached)
      await hotLatest()
      cost = { cold: await costOf(singleLatest), hot: await costOf(hotLatest) }
    } finally {
      await admin.quit()
    }
    for (const [name, c] of Object.entries(cost)) {
      log(`  (o) per ${name} /latest page: ${c.commands.toFixed(1)} Redis commands, ${c.redisCpuUs.toFixed(0)} µs Redis CPU, ${c.processCpuUs.toFixed(0)} µs API process CPU`)
    }
    await Promise.all([single.dispose(), clustered.dispose(), cached.dispose()])
    const failover = await failoverGap(log)
    return { rentalRows: loaded.rentalRows, hardwareRows: loaded.hardwareRows, latest, history, cost, failover }
  } finally {
    await Promise.all([single.dispose(), clustered.dispose(), cached.dispose()])
    await cluster.stop()
    await server.stop()
  }
}

/**
 * Kills the primary of a Sentinel group while one reader asks for a page every 20 ms through the
 * core (no circuit breaker: what the client alone takes), and times the first page after.
 */
const failoverGap = async (log: (line: string) => void): Promise<TopologyBenchResults["failover"]> => {
  const group = await startSentinelGroup(2, 3, "bench")
  const runtime = runtimeOver(Layer.merge(MemoryStorage.layer, RedisStorage.layer({
    sentinels: group.sentinels, sentinelName: group.name, prefix: "bench", replicasToAck: 1
  })))
  try {
    await issueOn(runtime)
    await runtime.runPromise(Effect.flatMap(RentalPriceStore, (s) => putVersions(s.transact, rentalPriceKeys, productRows(0))))
    const rental = await runtime.runPromise(RentalPrices)
    const read = () => runtime.runPromise(Effect.either(rental.latest({ principal, query: { vendor: productRows(0)[0]!.vendor }, origin })))
    ok((await read())._tag === "Right", "a page before the failover")
    group.primary.kill()
    const killed = performance.now()
    let failed = 0, promotedMs = -1
    const promoted = (async () => {
      while (promotedMs < 0) {
        if ((await group.currentPrimary()) !== group.primary.address) promotedMs = performance.now() - killed
        else await new Promise((r) => setTimeout(r, 20))
      }
    })()
    for (;;) {
      if ((await read())._tag === "Right" && failed > 0) break
      failed++
      if (performance.now() - killed > 60_000) throw new Error("no page within 60 s of the kill")
      await new Promise((r) => setTimeout(r, 20))
    }
    const gapMs = performance.now() - killed
    await promoted
    log(`  (o) failover: replica promoted ${(promotedMs / 1000).toFixed(2)} s after the kill, pages again after ${(gapMs / 1000).toFixed(2)} s (${failed} reads failed)`)
    return { promotedMs, gapMs, failedReads: failed }
  } finally {
    await runtime.dispose()
    await group.stop()
  }
}

/** (o) as lines of the results table. */
export const topologyLines = (r: TopologyBenchResults) => [
  { name: "(o) rental /latest page of 100, 3-master Redis Cluster vs one server", figure: `${r.latest.cluster.medianUs.toFixed(0)} µs`, baseline: `${r.latest.single.medianUs.toFixed(0)} µs`, ratio: r.latest.ratio, target: `≤ ${CLUSTER_TARGET.toFixed(2)}×`, pass: r.latest.ratio <= CLUSTER_TARGET },
  { name: "(o) hardware /history scan, one server's rows/s over the Cluster's", figure: `${median(r.history.cluster).toFixed(0)} rows/s`, baseline: `${median(r.history.single).toFixed(0)} rows/s`, ratio: r.history.ratio, target: `≤ ${CLUSTER_TARGET.toFixed(2)}×`, pass: r.history.ratio <= CLUSTER_TARGET },
  { name: "(o) Sentinel failover: primary killed to first page served, vs replica promoted", figure: `${(r.failover.gapMs / 1000).toFixed(2)} s`, baseline: `${(r.failover.promotedMs / 1000).toFixed(2)} s`, ratio: r.failover.gapMs / r.failover.promotedMs, target: `≤ ${(FAILOVER_TARGET_MS / 1000).toFixed(1)} s`, pass: r.failover.gapMs <= FAILOVER_TARGET_MS }
]

/** What one request costs the API process, in CPU µs: served from the page cache, and read from Redis. */
export interface ApiCost {
  readonly hotUs: number
  readonly coldUs: number
  /** Where the figures come from, for the text. */
  readonly source: string
}

/** The API cost of (l)'s Redis server when (l) ran, else the core's alone from (o). */
export const apiCostOf = (r: TopologyBenchResults, serving?: ServingResults): ApiCost => {
  const hot = serving?.redis.hot.subject.cpuUsPerRequest
  const cold = serving?.redis.cold.subject.cpuUsPerRequest
  return hot !== undefined && cold !== undefined
    ? { hotUs: hot, coldUs: cold, source: "the `gpu-market serve` process on Redis of (l), HTTP included" }
    : { hotUs: r.cost.hot.processCpuUs, coldUs: r.cost.cold.processCpuUs, source: "the core alone (above; HTTP admission, serialisation and logging come on top, as (l) measures)" }
}

/** Share of one core a process is planned at, leaving room for bursts and GC. */
const PLANNED_LOAD = 0.7

/**
 * The capacity sketch: API processes and Redis topology for 10k and 100k requests/s, all hot and
 * all cold, from the per-request costs measured in this run.
 */
const capacityMarkdown = (r: TopologyBenchResults, api: ApiCost): string => {
  const n = (x: number) => Math.round(x).toLocaleString("en-US")
  const get = r.cost.hot.redisCpuUs
  const page = r.cost.cold.redisCpuUs
  const rows = [10_000, 100_000].flatMap((rate) => (["hot", "cold"] as const).map((kind) => {
    const processes = Math.ceil((rate * (kind === "hot" ? api.hotUs : api.coldUs)) / 1e6 / PLANNED_LOAD)
    // Per request: the token version (on {tokens}), the rate-limit hit (spread by client key), the
    // type's version (on the type's master) and, cold, the page's reads (the same master).
    const tokens = (rate * get) / 1e6
    const type = (rate * (get + (kind === "cold" ? page : 0))) / 1e6
    const limits = (rate * get) / 1e6
    const total = tokens + type + limits
    // The rate-limit keys hash evenly over the masters, the two fixed slots' too.
    const masters = Array.from({ length: 30 }, (_, i) => i + 1).find((m) =>
      m === 1 ? total <= PLANNED_LOAD : Math.max(tokens, type) + limits / m <= PLANNED_LOAD)
    const over = [tokens > PLANNED_LOAD ? "`{tokens}`" : undefined, type > PLANNED_LOAD ? "the type's slot" : undefined].filter((x) => x !== undefined)
    const topology = masters === 1
      ? "one server (or Sentinel)"
      : masters !== undefined
      ? `Cluster of ${Math.max(3, masters)} masters, \`{tokens}\` and the type on different masters`
      : over.length > 0
      ? `none as built: ${over.join(" and ")} alone would need ${Math.max(tokens, type).toFixed(1)} cores of one master`
      : "none as built: the fixed slots and the rate limits they share a master with exceed it"
    return `| ${n(rate)} | ${kind} | ${n(processes)} | ${tokens.toFixed(2)} | ${type.toFixed(2)} | ${limits.toFixed(2)} | ${topology} |`
  }))
  const typeLimit = (PLANNED_LOAD * 1e6) / (get + page)
  const keyLimit = (PLANNED_LOAD * 1e6) / get
  return `### (o) On paper: 10k and 100k requests/s

From the costs measured above, per request: the API process ${n(api.hotUs)} µs of CPU served from the page cache, ${n(api.coldUs)} µs read from Redis (${api.source}); Redis ${n(get)} µs of CPU per simple command (the hot page's one GET) and ${n(page)} µs for a cold page's reads. A request over HTTP in \`shared\` mode sends Redis the token version GET (slot \`{tokens}\`), one rate-limit script (slot \`{rl:<client>}\`, spread over every master; costed as a GET), the type's version GET (the type's slot) and, on a miss, the page's reads (the type's slot). Processes and masters are planned at ${PLANNED_LOAD * 100}% of a core; Redis runs commands on one thread per server. All requests to one data type (rental \`/latest\`), all hot or all cold:

| req/s | pages | API processes | \`{tokens}\` master (cores) | type's master (cores) | rate limits, spread (cores) | Redis topology |
| ---: | --- | ---: | ---: | ---: | ---: | --- |
${rows.join("\n")}

Where it breaks first: one data type lives in one slot, so cold pages of one type are served by one master at about ${n(typeLimit)} pages/s, and the two GETs every request makes on single keys (\`{tokens}:version\`, the type's \`version\`) cap every request of the service at about ${n(keyLimit)}/s per key, whatever the number of masters. Where a row says none, this design does not serve that load at these costs: it would need the per-request version reads off Redis (a short-lived copy in each process, or invalidation by pub/sub), pages of one type read from replicas, or a type split over several slots (giving up one-script writes of a type). The API processes scale out freely: they share nothing but Redis. These Redis costs are from this shared 2-core machine over loopback, one command per round trip; a dedicated Redis core serves simple commands several times faster, which moves the limits but not where they are.
`
}

/** (o) as its BENCHMARKS.md section; the capacity sketch from `api` (default: the core's own cost, from (o)). */
export const topologyMarkdown = (r: TopologyBenchResults, api: ApiCost = apiCostOf(r)): string => {
  const n = (x: number) => Math.round(x).toLocaleString("en-US")
  const us = (t: Timing) => `${n(t.medianUs)} µs (p10 ${n(t.p10Us)}, p90 ${n(t.p90Us)})`
  return `## (o) Redis topologies: Cluster vs one server, per-request cost, Sentinel failover

A 3-master Redis Cluster (\`redis-cli --cluster create\`, no replicas) and one redis-server, on loopback, started by the bench, each loaded through the stores' write paths with the same ${n(r.rentalRows)} rental rows (${n(PRODUCTS)} products) and ${n(r.hardwareRows)} hardware observations (${n(LISTINGS)} listings); a keyset page costs the same at any size, so the ratios carry over. Both run through the core (\`runPromise\`), so the difference is the topology.

(o) \`RentalPrices.latest\` (page cache off, so every call reads Redis) for \`gpu_canonical_name=${POPULAR_GPU}&sort_by=${SORT_BY}&page_size=100\` (the same 100 rows on both, checked), ${n(r.latest.single.samples)} timed calls each, alternating: one server ${us(r.latest.single)}; Cluster ${us(r.latest.cluster)}. Ratio ${r.latest.ratio.toFixed(2)}× (target ≤ ${CLUSTER_TARGET.toFixed(2)}×).

(o) \`HardwarePrices.history\` (page cache off) over every loaded day with \`page_size=${HARDWARE_PAGE_SIZE}\` (${n(r.history.pages)} pages, every row seen on the Cluster, checked): one server ${n(median(r.history.single))} rows/s (${r.history.single.map(n).join(", ")}), Cluster ${n(median(r.history.cluster))} rows/s (${r.history.cluster.map(n).join(", ")}). One server / Cluster ${r.history.ratio.toFixed(2)}× (target ≤ ${CLUSTER_TARGET.toFixed(2)}×).

(o) Cost of one such page on one server, over ${n(r.cost.cold.requests)} calls each, read from Redis (page cache off, as the two lines above): ${r.cost.cold.commands.toFixed(1)} Redis commands, ${n(r.cost.cold.redisCpuUs)} µs of Redis CPU, ${n(r.cost.cold.processCpuUs)} µs of the calling process's CPU (the core without HTTP); served from the page cache after its version check: ${r.cost.hot.commands.toFixed(1)} commands, ${n(r.cost.hot.redisCpuUs)} µs of Redis CPU, ${n(r.cost.hot.processCpuUs)} µs of process CPU. The capacity sketch below starts from these.

(o) Sentinel failover: a primary, two replicas and three sentinels (quorum 2, \`down-after-milliseconds\` 1000, \`failover-timeout\` 3000), writes acknowledged by a replica (\`replicasToAck: 1\`). The primary was killed (SIGKILL) while one reader asked for a page every 20 ms through the core: the sentinels named a new primary after ${(r.failover.promotedMs / 1000).toFixed(2)} s, and the first page was served again ${(r.failover.gapMs / 1000).toFixed(2)} s after the kill (${n(r.failover.failedReads)} reads answered \`StorageError\`, a 503 over HTTP; target ≤ ${(FAILOVER_TARGET_MS / 1000).toFixed(1)} s). Behind \`serve\`'s circuit breaker, which probes once a second while open, add up to a second.

${capacityMarkdown(r, api)}`
}

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href
if (isMain) {
  const log = (line: string) => console.log(line)
  runTopologyBench(process.env.BENCH_QUICK === "1", log).then((r) => console.log(topologyMarkdown(r))).catch((e: unknown) => {
    console.error(e)
    process.exitCode = 1
  })
}
