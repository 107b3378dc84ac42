import {
  Auth, type HardwarePrice, HardwarePrices, marketLayer, type MarketServices, type Page, type Principal, type RentalPrice, RentalPrices, type Storage, type StorageError
} from "@gpu-market/core"
import { HardwarePriceStore, MAX_ROWS_PER_WRITE, MemoryStorage, putVersions, rentalPriceKeys, RentalPriceStore } from "@gpu-market/core/storage"
import { type QueryInput, requestOrigin } from "@gpu-market/core/adapters"
import * as RedisStorage from "@gpu-market/storage-redis"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Effect, Layer, ManagedRuntime } from "effect"
import IORedis from "ioredis"
import { deepStrictEqual, ok } from "node:assert/strict"
import { pathToFileURL } from "node:url"
import { startRedis } from "../test/support/redis"
import { configFromEnv, POPULAR_GPU, SORT_BY } from "./config"
import { benchPrincipal, type Timing, timing } from "./core-bench"
import { ensureHardwareMarket, hardwareConfig, hardwareDays, type HardwareMarketInfo } from "./hardware"
import { ensureMarket, type MarketInfo, productRows } from "./market"
import { interleavedAsync, median } from "./stats"

/**
 * (f) a rental `/latest` page of 100 and (g) a hardware `/history` scan, each on Redis and on
 * SQLite holding the same rows, side by side in one run. The bench starts its own redis-server
 * (the test harness's) and loads it through the stores' write paths. Both sides use the quick
 * markets (about 100,000 rows each); a keyset page costs the same at any depth and any size, so
 * the per-page ratio is what is compared. Then (j): the longest single command while the whole
 * rental market (a million rows) loads. Runs inside `npm run bench`, or alone:
 * `npx tsx bench/redis.ts` (`BENCH_QUICK=1` for fewer calls and the quick market in (j)).
 */

/** How many times slower than SQLite a Redis page may be. */
export const REDIS_TARGET = 3
const HARDWARE_PAGE_SIZE = 1000
/** Rows per write while loading Redis: one Lua batch each, as many as core's write paths send. */
const LOAD_BATCH = MAX_ROWS_PER_WRITE
/** The longest a single Redis command may run while loading: every other client of the server waits for it. */
export const LONGEST_COMMAND_TARGET_MS = 50
/** Commands slower than this (µs) are kept by SLOWLOG while loading, so the longest is among them. */
const SLOWLOG_THRESHOLD_US = 1000

/** The longest single command Redis ran while the bench loaded its rows, from SLOWLOG. */
export interface LongestCommand {
  readonly rows: number
  readonly seconds: number
  /** Redis' `used_memory_human` once loaded. */
  readonly memory: string
  readonly micros: number
  readonly command: string
  /** Commands over `SLOWLOG_THRESHOLD_US`. */
  readonly slow: number
  /** Commands over the target, `LONGEST_COMMAND_TARGET_MS`. */
  readonly overTarget: number
}

export interface RedisBenchResults {
  readonly longest: LongestCommand
  readonly rental: {
    readonly market: MarketInfo
    readonly loadSeconds: number
    readonly redis: Timing
    readonly sqlite: Timing
    readonly ratio: number
  }
  readonly hardware: {
    readonly market: HardwareMarketInfo
    readonly loadSeconds: number
    readonly pages: number
    /** Rows per second of each timed walk. */
    readonly redis: ReadonlyArray<number>
    readonly sqlite: ReadonlyArray<number>
    readonly redisMedian: number
    readonly sqliteMedian: number
    /** SQLite's rows per second over Redis's: how many times slower the Redis scan is. */
    readonly ratio: number
  }
}

/** The principal every Redis bench reads as: all grants, hardware history unrestricted. */
export const principal: Principal = {
  ...benchPrincipal,
  grants: { ...benchPrincipal.grants, gpu_hardware_prices: { history: { _tag: "unrestricted" } } }
}
export const origin = requestOrigin("http://127.0.0.1:8787")

export type Runtime = ManagedRuntime.ManagedRuntime<MarketServices | Storage, StorageError>
/** The market's services over `storage`, as a runtime the bench calls. */
export const runtimeOver = (storage: Layer.Layer<Storage, StorageError>): Runtime =>
  ManagedRuntime.make(marketLayer.pipe(Layer.provideMerge(storage)))

/** Issues the bench's token in `runtime`'s storage. */
export const issueOn = (runtime: Runtime) => runtime.runPromise(Effect.flatMap(Auth, (auth) => auth.issue(principal, "bench-redis-token")))

const seconds = async (f: () => Promise<void>) => {
  const started = performance.now()
  await f()
  return (performance.now() - started) / 1000
}

/** Every page of a hardware `/history` window through the core, following `meta.next`; returns rows and pages seen. */
const walkHardware = async (runtime: Runtime, first: QueryInput, ids?: Array<string>) => {
  const hardware = await runtime.runPromise(HardwarePrices)
  let query: QueryInput | null = first
  let rows = 0
  let pages = 0
  while (query !== null) {
    const page: Page<HardwarePrice> = await runtime.runPromise(hardware.history({ principal, query, origin }))
    rows += page.data.length
    pages++
    if (ids !== undefined) for (const r of page.data) ids.push(r.observation_id)
    query = page.meta.next === null ? null : page.meta.next.query_params
  }
  return { rows, pages }
}

export const runRedisBench = async (quick: boolean, log: (line: string) => void): Promise<RedisBenchResults> => {
  const rentalConfig = configFromEnv({ BENCH_QUICK: "1" })
  const rentalMarket = ensureMarket(rentalConfig)
  const hardwareMarket = ensureHardwareMarket(hardwareConfig(true), log)
  const server = await startRedis()
  const redis = runtimeOver(Layer.merge(MemoryStorage.layer, RedisStorage.layer({ url: server.url, prefix: "bench" })))
  const sqliteRental = runtimeOver(SqliteStorage.layer({ filename: rentalMarket.file }))
  const sqliteHardware = runtimeOver(SqliteStorage.layer({ filename: hardwareMarket.file }))
  try {
    for (const runtime of [redis, sqliteRental, sqliteHardware]) await issueOn(runtime)

    log(`  loading ${rentalMarket.rows.toLocaleString("en-US")} rental rows into Redis ...`)
    const rentalLoad = await seconds(() => redis.runPromise(Effect.gen(function* () {
      const store = yield* RentalPriceStore
      let batch: Array<RentalPrice> = []
      for (let i = 0; i < rentalConfig.products; i++) {
        batch.push(...productRows(i))
        if (batch.length >= LOAD_BATCH || i === rentalConfig.products - 1) {
          yield* putVersions(store.transact, rentalPriceKeys, batch)
          batch = []
        }
      }
    })))
    log(`  loaded in ${rentalLoad.toFixed(1)} s`)

    const query = { gpu_canonical_name: POPULAR_GPU, sort_by: SORT_BY, page_size: "100" }
    const latestOn = async (runtime: Runtime) => {
      const rental = await runtime.runPromise(RentalPrices)
      return () => runtime.runPromise(rental.latest({ principal, query, origin }))
    }
    const redisLatest = await latestOn(redis)
    const sqliteLatest = await latestOn(sqliteRental)
    const [redisPage, sqlitePage] = [await redisLatest(), await sqliteLatest()]
    ok(redisPage.data.length === 100, `the Redis page has ${redisPage.data.length} rows`)
    deepStrictEqual(redisPage.data, sqlitePage.data, "Redis and SQLite disagree on the page")
    const config = quick ? { iterations: 300, warmup: 50, rounds: 6 } : { iterations: 1500, warmup: 200, rounds: 10 }
    const samples = await interleavedAsync([{ name: "redis", run: redisLatest }, { name: "sqlite", run: sqliteLatest }], config)
    const rental = {
      market: rentalMarket, loadSeconds: rentalLoad, redis: timing(samples.redis!), sqlite: timing(samples.sqlite!),
      ratio: median(samples.redis!) / median(samples.sqlite!)
    }
    log(`  (f) /latest page of 100: Redis ${rental.redis.medianUs.toFixed(0)} µs, SQLite ${rental.sqlite.medianUs.toFixed(0)} µs, ${rental.ratio.toFixed(2)}×`)

    log(`  loading ${hardwareMarket.rows.toLocaleString("en-US")} hardware rows into Redis ...`)
    const hardwareLoad = await seconds(() => redis.runPromise(Effect.gen(function* () {
      const store = yield* HardwarePriceStore
      for (const { batch } of hardwareDays(hardwareConfig(true))) {
        for (let i = 0; i < batch.length; i += LOAD_BATCH) yield* store.put(batch.slice(i, i + LOAD_BATCH))
      }
    })))
    log(`  loaded in ${hardwareLoad.toFixed(1)} s`)
    const first = { start: hardwareMarket.firstDate, end: hardwareMarket.endDate, page_size: String(HARDWARE_PAGE_SIZE) }
    const redisIds: Array<string> = []
    const sqliteIds: Array<string> = []
    const checked = await walkHardware(redis, first, redisIds)
    await walkHardware(sqliteHardware, first, sqliteIds)
    ok(checked.rows === hardwareMarket.rows, `the Redis walk saw ${checked.rows} rows of ${hardwareMarket.rows}`)
    ok(redisIds.length === sqliteIds.length && redisIds.every((id, i) => id === sqliteIds[i]), "Redis and SQLite disagree on the rows or their order")
    const rates = { redis: [] as Array<number>, sqlite: [] as Array<number> }
    for (let round = 0; round < (quick ? 2 : 3); round++) {
      for (const subject of round % 2 === 0 ? ["redis", "sqlite"] as const : ["sqlite", "redis"] as const) {
        const started = performance.now()
        const { rows } = await walkHardware(subject === "redis" ? redis : sqliteHardware, first)
        const rate = rows / ((performance.now() - started) / 1000)
        rates[subject].push(rate)
        log(`  ${subject.padEnd(6)} round ${round + 1}: ${Math.round(rate).toLocaleString("en-US")} rows/s`)
      }
    }
    const hardware = {
      market: hardwareMarket, loadSeconds: hardwareLoad, pages: checked.pages, redis: rates.redis, sqlite: rates.sqlite,
      redisMedian: median(rates.redis), sqliteMedian: median(rates.sqlite), ratio: median(rates.sqlite) / median(rates.redis)
    }
    log(`  (g) hardware /history: Redis ${Math.round(hardware.redisMedian).toLocaleString("en-US")} rows/s, SQLite ${Math.round(hardware.sqliteMedian).toLocaleString("en-US")} rows/s, ${hardware.ratio.toFixed(2)}×`)
    await Promise.all([redis.dispose(), sqliteRental.dispose(), sqliteHardware.dispose()])
    const longest = await longestCommandOfLoad(server.url, quick ? rentalConfig : configFromEnv({}), log)
    return { longest, rental, hardware }
  } finally {
    await Promise.all([redis.dispose(), sqliteRental.dispose(), sqliteHardware.dispose()])
    await server.stop()
  }
}

/** Writers loading at once in (j), as several importers or seeding processes would. */
const LOAD_WRITERS = 4

/**
 * (j): the longest single command Redis runs while a whole rental market (a million rows in the
 * full run) loads into an empty server through the store's write, `LOAD_WRITERS` writers at
 * once, each write whole products of at most `LOAD_BATCH` rows, as core chunks them. SLOWLOG keeps
 * every command over `SLOWLOG_THRESHOLD_US`, so the longest is among them. The server is
 * emptied before and after.
 */
const longestCommandOfLoad = async (
  url: string,
  config: { readonly products: number },
  log: (line: string) => void
): Promise<LongestCommand> => {
  const admin = new IORedis(url)
  const runtime = ManagedRuntime.make(RedisStorage.layer({ url, prefix: "load" }))
  try {
    await admin.call("FLUSHALL")
    await admin.call("CONFIG", "SET", "slowlog-log-slower-than", String(SLOWLOG_THRESHOLD_US))
    await admin.call("CONFIG", "SET", "slowlog-max-len", "1000000")
    await admin.call("SLOWLOG", "RESET")
    log(`  (j) loading ${config.products.toLocaleString("en-US")} rental products into an empty Redis, ${LOAD_WRITERS} writers ...`)
    let rows = 0
    const started = performance.now()
    const writer = (w: number) => Effect.gen(function* () {
      const store = yield* RentalPriceStore
      let batch: Array<RentalPrice> = []
      const flush = Effect.suspend(() => {
        const sent = batch
        batch = []
        rows += sent.length
        return putVersions(store.transact, rentalPriceKeys, sent)
      })
      for (let i = w; i < config.products; i += LOAD_WRITERS) {
        const product = productRows(i)
        // As core chunks a write: whole products, at most `LOAD_BATCH` rows unless one product has more.
        if (batch.length > 0 && batch.length + product.length > LOAD_BATCH) yield* flush
        batch.push(...product)
      }
      if (batch.length > 0) yield* flush
    })
    await runtime.runPromise(Effect.all(Array.from({ length: LOAD_WRITERS }, (_, w) => writer(w)), { concurrency: "unbounded", discard: true }))
    const seconds = (performance.now() - started) / 1000
    const entries = (await admin.call("SLOWLOG", "GET", "-1")) as Array<[number, number, number, Array<string>]>
    const memory = String(await admin.call("INFO", "memory")).match(/used_memory_human:(\S+)/)?.[1] ?? "?"
    const slowest = entries.reduce<[number, number, number, Array<string>] | undefined>((a, e) => (a === undefined || e[2] > a[2] ? e : a), undefined)
    const longest: LongestCommand = {
      rows,
      seconds,
      memory,
      micros: slowest?.[2] ?? 0,
      command: slowest === undefined ? "(none over 1 ms)" : `${slowest[3][0]} ${slowest[3][3] ?? ""}`.trim(),
      slow: entries.length,
      overTarget: entries.filter((e) => e[2] > LONGEST_COMMAND_TARGET_MS * 1000).length
    }
    log(`  (j) longest Redis command while loading ${rows.toLocaleString("en-US")} rows (${seconds.toFixed(0)} s, ${memory}): ${(longest.micros / 1000).toFixed(1)} ms (${longest.command}); ${longest.slow} commands over ${SLOWLOG_THRESHOLD_US / 1000} ms, ${longest.overTarget} over ${LONGEST_COMMAND_TARGET_MS} ms`)
    return longest
  } finally {
    await runtime.dispose()
    await admin.call("FLUSHALL").catch(() => undefined)
    await admin.quit()
  }
}

/** The result as markdown for BENCHMARKS.md. */
export const redisMarkdown = (r: RedisBenchResults): string => {
  const n = (x: number) => Math.round(x).toLocaleString("en-US")
  const us = (t: Timing) => `${n(t.medianUs)} µs (p10 ${n(t.p10Us)}, p90 ${n(t.p90Us)}, mean ${n(t.meanUs)})`
  return `## (f), (g) Redis vs SQLite on the same rows

A redis-server started by the bench on loopback (no persistence), loaded through the stores' write paths, against the SQLite files of the quick markets. Loading a million rows into Redis takes minutes, so both sides hold the quick markets: the same ${n(r.rental.market.rows)} rental rows (${n(r.rental.market.products)} products; loaded in ${r.rental.loadSeconds.toFixed(0)} s) and ${n(r.hardware.market.rows)} hardware observations (loaded in ${r.hardware.loadSeconds.toFixed(0)} s). A keyset page costs the same at any depth, so the per-page ratio carries over to the full-size market. Both sides run through the core (\`runPromise\` on a \`ManagedRuntime\`), so the difference is the store.

(f) \`RentalPrices.latest\` for \`gpu_canonical_name=${POPULAR_GPU}&sort_by=${SORT_BY}&page_size=100\`, the same 100 rows on both (checked), ${n(r.rental.redis.samples)} timed calls each, alternating: Redis ${us(r.rental.redis)}; SQLite ${us(r.rental.sqlite)}. Ratio ${r.rental.ratio.toFixed(2)}× (target ≤ ${REDIS_TARGET.toFixed(2)}×).

(g) \`HardwarePrices.history\` over the whole window with \`page_size=${HARDWARE_PAGE_SIZE}\`, following \`meta.next\` (${n(r.hardware.pages)} pages; the same observation ids in the same order on both, checked): Redis ${n(r.hardware.redisMedian)} rows/s (${r.hardware.redis.map(n).join(", ")}), SQLite ${n(r.hardware.sqliteMedian)} rows/s (${r.hardware.sqlite.map(n).join(", ")}). SQLite / Redis ${r.hardware.ratio.toFixed(2)}× (target ≤ ${REDIS_TARGET.toFixed(2)}×).

(j) Bounded work per write: afterwards the server was emptied and the whole rental market, ${n(r.longest.rows)} rows, loaded into it through the store's write (\`RentalPriceStore.transact\`, each write whole products of at most ${LOAD_BATCH} rows, as core's write paths chunk them), ${LOAD_WRITERS} writers at once, in ${r.longest.seconds.toFixed(0)} s (${r.longest.memory} of Redis memory). Redis' SLOWLOG kept every command over ${SLOWLOG_THRESHOLD_US / 1000} ms: ${n(r.longest.slow)} of them, ${n(r.longest.overTarget)} over ${LONGEST_COMMAND_TARGET_MS} ms; the longest ran ${(r.longest.micros / 1000).toFixed(1)} ms (\`${r.longest.command}\`; target ≤ ${LONGEST_COMMAND_TARGET_MS} ms). Every other client of the server waits that long at most behind a write.
`
}

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href
if (isMain) {
  const log = (line: string) => console.log(line)
  runRedisBench(process.env.BENCH_QUICK === "1", log).then((r) => {
    if (process.env.BENCH_STRICT === "1" && (r.rental.ratio > REDIS_TARGET || r.hardware.ratio > REDIS_TARGET)) process.exitCode = 1
  }).catch((e: unknown) => {
    console.error(e)
    process.exitCode = 1
  })
}
