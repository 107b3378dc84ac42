import {
  Auth, type HardwarePrice, HardwarePrices, marketLayer, type MarketServices, type Page, type Principal, type RentalPrice, RentalPrices, type Storage, type StorageError
} from "@gpu-market/core"
import { HardwarePriceStore, MemoryStorage, RentalPriceStore } from "@gpu-market/core/storage"
import { type QueryInput, requestOrigin } from "@gpu-market/core/adapters"
import * as RedisStorage from "@gpu-market/storage-redis"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Effect, Layer, ManagedRuntime } from "effect"
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
 * (the test harness's) and loads it through the stores' write paths. A million rows take long to
 * load into Redis, so both sides use the quick markets (about 100,000 rows each); a keyset page
 * costs the same at any depth and any size, so the per-page ratio is what is compared. Runs
 * inside `npm run bench`, or alone: `npx tsx bench/redis.ts` (`BENCH_QUICK=1` for fewer calls).
 */

/** How many times slower than SQLite a Redis page may be. */
export const REDIS_TARGET = 3
const HARDWARE_PAGE_SIZE = 1000
/** Rows per write while loading Redis: one Lua batch each. */
const LOAD_BATCH = 1000
/** A loading batch is one long script; the fail-fast default timeout is for requests, not for loading. */
const LOAD_TIMEOUT_MS = 60_000

export interface RedisBenchResults {
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

const principal: Principal = {
  ...benchPrincipal,
  grants: { ...benchPrincipal.grants, gpu_hardware_prices: { history: { _tag: "unrestricted" } } }
}
const origin = requestOrigin("http://127.0.0.1:8787")

type Runtime = ManagedRuntime.ManagedRuntime<MarketServices | Storage, StorageError>
const runtimeOver = (storage: Layer.Layer<Storage, StorageError>): Runtime =>
  ManagedRuntime.make(marketLayer.pipe(Layer.provideMerge(storage)))

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
  const redis = runtimeOver(Layer.merge(MemoryStorage.layer, RedisStorage.layer({ url: server.url, prefix: "bench", commandTimeoutMs: LOAD_TIMEOUT_MS })))
  const sqliteRental = runtimeOver(SqliteStorage.layer({ filename: rentalMarket.file }))
  const sqliteHardware = runtimeOver(SqliteStorage.layer({ filename: hardwareMarket.file }))
  try {
    for (const runtime of [redis, sqliteRental, sqliteHardware]) {
      await runtime.runPromise(Effect.flatMap(Auth, (auth) => auth.issue(principal, "bench-redis-token")))
    }

    log(`  loading ${rentalMarket.rows.toLocaleString("en-US")} rental rows into Redis ...`)
    const rentalLoad = await seconds(() => redis.runPromise(Effect.gen(function* () {
      const store = yield* RentalPriceStore
      let batch: Array<RentalPrice> = []
      for (let i = 0; i < rentalConfig.products; i++) {
        batch.push(...productRows(i))
        if (batch.length >= LOAD_BATCH || i === rentalConfig.products - 1) {
          yield* store.apply({ close: [], open: batch })
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
      for (const { batch } of hardwareDays(hardwareConfig(true))) yield* store.put(batch)
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
    return { rental, hardware }
  } finally {
    await Promise.all([redis.dispose(), sqliteRental.dispose(), sqliteHardware.dispose()])
    await server.stop()
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
