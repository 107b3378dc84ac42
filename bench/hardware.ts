import { Auth, type HardwarePrice, HardwarePrices, marketLayer, type Page, type Principal } from "@gpu-market/core"
import { type QueryInput, requestOrigin } from "@gpu-market/core/adapters"
import * as SqliteStorage from "../packages/storage-sqlite/src/internal"
import Database from "better-sqlite3"
import { Effect, Layer, ManagedRuntime } from "effect"
import { spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import { deepStrictEqual, ok } from "node:assert/strict"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

/**
 * Hardware `/history` throughput: a client pages through every observation of a market of over a
 * million listing-days with `page_size=1000`, following `meta.next`, through the core; the
 * baseline is one hand-written better-sqlite3 scan of the same rows in the same order on its own
 * connection. Runs inside `npm run bench`, or alone: `npx tsx bench/hardware.ts` (`BENCH_QUICK=1`
 * for a small market).
 */

/** Bump when the generator's output changes, so a stale cache is never measured. */
const GENERATOR_VERSION = 1
const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url))
const DATA_DIR = path.join(BENCH_DIR, ".data")
const HISTORY_DAYS = 180
/** Epoch day of 2025-11-01, the market's last day. */
const LAST_DAY = Date.UTC(2025, 10, 1) / 86_400_000
const PAGE_SIZE = 1000

/** The ratio of the core's rows per second to the bare scan's that the run must reach. */
export const HARDWARE_TARGET = 0.6

export interface HardwareConfig {
  readonly quick: boolean
  readonly dbFile: string
  /** Listings generated; each is seen on most days of its life (about 120 days). */
  readonly listings: number
  /** Timed walks of each subject, alternating. */
  readonly rounds: number
}

export const hardwareConfig = (quick: boolean): HardwareConfig => ({
  quick,
  dbFile: path.join(DATA_DIR, `hardware-v${GENERATOR_VERSION}${quick ? "-quick" : ""}.db`),
  listings: quick ? 900 : 9_000,
  rounds: quick ? 2 : 3
})

/** What a run knows of the market it measures. */
export interface HardwareMarketInfo {
  readonly file: string
  readonly listings: number
  readonly rows: number
  readonly firstDate: string
  readonly endDate: string
  readonly buildSeconds: number
  readonly builtAt: string
  readonly builtNow: boolean
  readonly bytes: number
}

export interface HardwareResults {
  readonly market: HardwareMarketInfo
  readonly rows: number
  readonly pages: number
  /** Rows per second of each timed walk. */
  readonly core: ReadonlyArray<number>
  readonly bare: ReadonlyArray<number>
  readonly coreMedian: number
  readonly bareMedian: number
  readonly ratio: number
  readonly plan: string
}

// A fixed PRNG rather than Math.random: the cached file must be the same market on every machine.
const mulberry32 = (seed: number) => {
  let a = seed >>> 0
  return (): number => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
const pick = <T>(items: ReadonlyArray<T>, u: number): T => items[Math.min(items.length - 1, Math.floor(u * items.length))]!
const dateOf = (day: number) => new Date(day * 86_400_000).toISOString().slice(0, 10)

const GPUS = [["h100-sxm", 26_000], ["h100-pcie", 23_000], ["h200-sxm", 32_000], ["b200", 38_000], ["a100-sxm-80gb", 11_000],
  ["a100-pcie-40gb", 6_000], ["l40s", 8_000], ["rtx-4090", 1_900], ["mi300x", 16_000], ["gh200", 42_000]] as const
const COUNTRIES = [["US", "north_america"], ["CA", "north_america"], ["DE", "europe"], ["NL", "europe"], ["GB", "europe"],
  ["JP", "apac"], ["SG", "apac"], ["KR", "apac"], ["TW", "apac"], ["AE", "middle_east"]] as const

interface Listing {
  readonly key: string
  readonly first: number
  readonly last: number
  readonly seen: number
  readonly row: (day: number, u: number) => HardwarePrice
}

/** Listing `l`: its life, how often it is seen, and its row on a day (`u` varies the price). */
const listing = (l: number): Listing => {
  const rng = mulberry32(0x4a7d_0001 ^ Math.imul(l + 1, 0x9e3779b1))
  const key = createHash("sha256").update(`bench-hardware/${l}`).digest("hex").slice(0, 32)
  const [gpu, base] = pick(GPUS, rng())
  const condition = pick([null, "new_sealed", "new_sealed", "refurbished", "used"], rng())
  const channel = pick(["var_reseller", "marketplace", "broker", "retailer"], rng())
  const level = pick(["bare_module", "bare_module", "server", "rack"], rng())
  const units = level === "bare_module" ? 1 : level === "server" ? 8 : 32
  const [country, group] = pick(COUNTRIES, rng())
  const factor = (condition === "used" ? 0.62 : condition === "refurbished" ? 0.8 : 1) * (0.9 + rng() * 0.2)
  const first = LAST_DAY - HISTORY_DAYS + 1 + Math.floor(rng() * 40)
  const last = rng() < 0.3 ? first + 60 + Math.floor(rng() * 60) : LAST_DAY
  const system = level !== "bare_module"
  return {
    key, first, last, seen: 0.8 + rng() * 0.15,
    row: (day, u) => {
      const price = Math.round(base * units * factor * (1 + (u - 0.5) * 0.06) * (system ? 1.1 : 1))
      const observed_date = dateOf(day)
      return {
        observation_id: `${key}:${observed_date}`, listing_key: key, gpu_canonical_name: gpu, observed_date,
        listing_last_updated_date: observed_date, price_amount: price, currency: "USD", price_usd: price,
        price_usd_low: null, price_usd_high: null, price_type: channel === "broker" ? "estimate" : "ask",
        price_per_gpu_system_attach: system ? Math.round(price / units) : null,
        price_basis: level === "bare_module" ? "per_gpu" : `per_${level}`, taxes_included: group === "europe" ? true : null,
        payment_terms: "net-30", stock_status: u < 0.8 ? "in_stock" : "limited", units_available: 1 + Math.floor(u * 20),
        min_order_quantity: 1, lead_time_weeks: u < 0.8 ? 1 : 6, market: condition === "new_sealed" ? "primary" : "secondary",
        channel, source_type: channel === "marketplace" ? "marketplace_listing" : "reseller_quote", confidence: "high",
        counterparty_class: "dealer", transaction_level: level, gpu_count_in_unit: units, includes_host_cpus: system ? units / 4 : 0,
        includes_dram_gb: system ? units * 256 : null, includes_storage_tb: system ? units * 3.84 : null,
        includes_nics: system ? "connectx-7, 400gbe" : null, includes_nvswitch: system ? true : null,
        includes_scaleout_fabric: level === "rack", includes_chassis_psu: system, includes_cooling_hw: level === "rack" ? "liquid" : null,
        software_entitlements: null, support_years: system ? 3 : null, warranty_months: condition === "new_sealed" ? 36 : null,
        services_included: level === "rack" ? ["installation", "burn-in-testing"] : null, condition,
        module_packaging: gpu.includes("pcie") || gpu.startsWith("rtx") || gpu === "l40s" ? "pcie_card" : "sxm",
        unit_age_months: condition === "used" ? 18 : null, unit_age_basis: condition === "used" ? "seller_stated" : null,
        warranty_remaining_months: null, hours_used: condition === "used" ? 9_000 : null,
        warranty_transferable: condition === "new_sealed" ? true : null, firmware_region_lock: false, country,
        country_group: group, export_control_regime: "ECCN 3A090"
      }
    }
  }
}

const infoFile = (dbFile: string) => dbFile.replace(/\.db$/, ".json")
const removeDb = (file: string) => {
  for (const f of [file, `${file}-wal`, `${file}-shm`]) fs.rmSync(f, { force: true })
}
type Stored = Omit<HardwareMarketInfo, "builtNow" | "bytes" | "file">

const readCached = (config: HardwareConfig): Stored | undefined => {
  try {
    if (!fs.existsSync(config.dbFile)) return undefined
    const info = JSON.parse(fs.readFileSync(infoFile(config.dbFile), "utf8")) as Stored & { readonly generatorVersion: number }
    return info.generatorVersion === GENERATOR_VERSION && info.listings === config.listings ? info : undefined
  } catch {
    return undefined
  }
}

/** The market's observations, one batch per day, oldest day first: what daily ingest writes. */
export function* hardwareDays(config: HardwareConfig): Generator<{ readonly day: number; readonly batch: Array<HardwarePrice> }> {
  const listings = Array.from({ length: config.listings }, (_, l) => listing(l))
  for (let day = LAST_DAY - HISTORY_DAYS + 1; day <= LAST_DAY; day++) {
    const batch: Array<HardwarePrice> = []
    listings.forEach((x, l) => {
      if (day < x.first || day > x.last) return
      const u = mulberry32(Math.imul(l + 1, 0x85ebca6b) ^ day)()
      if (u < x.seen) batch.push(x.row(day, u / x.seen))
    })
    yield { day, batch }
  }
}

/** Writes the market day by day through `HardwarePriceStore.put`, as daily ingest does. */
const build = (config: HardwareConfig, log: (line: string) => void): void => {
  fs.mkdirSync(DATA_DIR, { recursive: true })
  const tmp = `${config.dbFile}.building`
  removeDb(tmp)
  const started = performance.now()
  let rows = 0
  Effect.runSync(Effect.scoped(Effect.gen(function* () {
    const client = yield* SqliteStorage.makeClient({ filename: tmp })
    yield* SqliteStorage.migrate(client)
    // A half-built file is thrown away, never reused, so durability while building buys nothing.
    client.db.pragma("synchronous = OFF")
    const store = SqliteStorage.makeHardwarePriceStore(client)
    for (const { day, batch } of hardwareDays(config)) {
      yield* store.put(batch)
      rows += batch.length
      if ((LAST_DAY - day) % 30 === 0) log(`  ${dateOf(day)}  ${rows.toLocaleString("en-US")} rows  ${((performance.now() - started) / 1000).toFixed(1)} s`)
    }
    client.db.pragma("wal_checkpoint(TRUNCATE)")
  })))
  removeDb(config.dbFile)
  fs.renameSync(tmp, config.dbFile)
  const stored = {
    generatorVersion: GENERATOR_VERSION,
    listings: config.listings,
    rows,
    firstDate: dateOf(LAST_DAY - HISTORY_DAYS + 1),
    endDate: dateOf(LAST_DAY + 1),
    buildSeconds: (performance.now() - started) / 1000,
    builtAt: new Date().toISOString()
  }
  fs.writeFileSync(infoFile(config.dbFile), `${JSON.stringify(stored, null, 2)}\n`)
}

/** The cached hardware market, built first in a child process (a large build fragments the heap) when missing. */
export const ensureHardwareMarket = (config: HardwareConfig, log: (line: string) => void): HardwareMarketInfo => {
  let stored = readCached(config)
  const builtNow = stored === undefined
  if (stored === undefined) {
    log(`Building the hardware market (${config.listings.toLocaleString("en-US")} listings over ${HISTORY_DAYS} days) at ${config.dbFile} ...`)
    const child = spawnSync(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), "build", config.quick ? "quick" : "full"], {
      cwd: path.resolve(BENCH_DIR, ".."), env: process.env, stdio: "inherit"
    })
    if (child.status !== 0) throw new Error(`building the hardware market failed (exit ${child.status ?? child.signal})`)
    stored = readCached(config)
    if (stored === undefined) throw new Error("the hardware market build finished but left no usable cache")
  }
  return { ...stored, file: config.dbFile, builtNow, bytes: fs.statSync(config.dbFile).size }
}

/** The hand-written baseline: every column of the window's rows, newest day first, ties by id descending. */
const BARE_SQL = `SELECT observation_id, listing_key, gpu_canonical_name, observed_date, listing_last_updated_date, price_amount,
  currency, price_usd, price_usd_low, price_usd_high, price_type, price_per_gpu_system_attach, price_basis, taxes_included,
  payment_terms, stock_status, units_available, min_order_quantity, lead_time_weeks, market, channel, source_type, confidence,
  counterparty_class, transaction_level, gpu_count_in_unit, includes_host_cpus, includes_dram_gb, includes_storage_tb,
  includes_nics, includes_nvswitch, includes_scaleout_fabric, includes_chassis_psu, includes_cooling_hw, software_entitlements,
  support_years, warranty_months, services_included, condition, module_packaging, unit_age_months, unit_age_basis,
  warranty_remaining_months, hours_used, warranty_transferable, firmware_region_lock, country, country_group,
  export_control_regime
FROM hardware_prices
WHERE observed_date >= ? AND observed_date < ?
ORDER BY observed_date DESC, observation_id DESC`

const BOOLEANS = ["taxes_included", "includes_nvswitch", "includes_scaleout_fabric", "includes_chassis_psu", "warranty_transferable", "firmware_region_lock"]
/** A bare row as the API publishes it: booleans from 0/1, the services list from its JSON text. */
const published = (r: Record<string, unknown>) => {
  const out: Record<string, unknown> = { ...r }
  for (const f of BOOLEANS) out[f] = r[f] === null ? null : r[f] === 1
  out.services_included = r.services_included === null ? null : JSON.parse(r.services_included as string)
  return out
}

const principal: Principal = {
  id: "bench-hardware" as Principal["id"], name: "hardware benchmark",
  grants: { gpu_hardware_prices: { history: { _tag: "unrestricted" } } }, indices: "all", legacy_custom_index: false,
  procurement: false, rate_limit_per_minute: 1_000_000_000
}

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 === 1 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}

/** Times the core walk and the bare scan, alternating, after one untimed walk of each that also checks they agree. */
export const runHardwareBench = async (config: HardwareConfig, log: (line: string) => void): Promise<HardwareResults> => {
  const market = ensureHardwareMarket(config, log)
  const runtime = ManagedRuntime.make(marketLayer.pipe(Layer.provide(SqliteStorage.layer({ filename: market.file }))))
  const bareDb = new Database(market.file, { fileMustExist: true, readonly: true })
  // The library's client uses the same page cache; neither side wins by holding more in memory.
  bareDb.pragma("cache_size = -65536")
  try {
    await runtime.runPromise(Effect.flatMap(Auth, (auth) => auth.issue(principal, "bench-hardware-token")))
    const hardware = await runtime.runPromise(HardwarePrices)
    const origin = requestOrigin("http://127.0.0.1:8787")
    const history = (query: QueryInput): Page<HardwarePrice> => runtime.runSync(hardware.history({ principal, query, origin }))
    const first = { start: market.firstDate, end: market.endDate, page_size: String(PAGE_SIZE) }
    const bare = bareDb.prepare(BARE_SQL)
    const bounds = [market.firstDate, market.endDate] as const

    /** Pages through the window as a client does; returns rows seen (and ids when asked). */
    const walkCore = (ids?: Array<string>) => {
      let page = history(first)
      let rows = page.data.length
      let pages = 1
      if (ids !== undefined) for (const r of page.data) ids.push(r.observation_id)
      while (page.meta.next !== null) {
        page = history(page.meta.next.query_params)
        rows += page.data.length
        pages++
        if (ids !== undefined) for (const r of page.data) ids.push(r.observation_id)
      }
      return { rows, pages }
    }
    const walkBare = (ids?: Array<string>) => {
      let rows = 0
      for (const r of bare.iterate(...bounds) as IterableIterator<Record<string, unknown>>) {
        rows++
        if (ids !== undefined) ids.push(r.observation_id as string)
      }
      return rows
    }

    const coreIds: Array<string> = []
    const bareIds: Array<string> = []
    const checked = walkCore(coreIds)
    walkBare(bareIds)
    ok(checked.rows === market.rows, `the core walked ${checked.rows} rows of ${market.rows}`)
    ok(coreIds.length === bareIds.length && coreIds.every((id, i) => id === bareIds[i]), "core and bare scan disagree on the rows or their order")
    const firstPage = history(first).data
    const firstBare = (bareDb.prepare(`${BARE_SQL} LIMIT ${PAGE_SIZE}`).all(...bounds) as Array<Record<string, unknown>>).map(published)
    deepStrictEqual(firstPage, firstBare, "the first page differs from the bare rows")
    coreIds.length = 0
    bareIds.length = 0

    const core: Array<number> = []
    const bareRates: Array<number> = []
    for (let round = 0; round < config.rounds; round++) {
      const order = round % 2 === 0 ? ["core", "bare"] : ["bare", "core"]
      for (const subject of order) {
        const started = performance.now()
        const rows = subject === "core" ? walkCore().rows : walkBare()
        const rate = rows / ((performance.now() - started) / 1000)
        ;(subject === "core" ? core : bareRates).push(rate)
        log(`  ${subject.padEnd(4)} round ${round + 1}: ${Math.round(rate).toLocaleString("en-US")} rows/s`)
      }
    }
    const plan = SqliteStorage.compileHardwarePage({
      scope: { _tag: "window", start: `${market.firstDate}T00:00:00.000000Z`, end: `${market.endDate}T00:00:00.000000Z` },
      predicates: [], sort: { by: "observed_date", order: "desc" }, after: { value: market.firstDate, tie: "f" }, limit: PAGE_SIZE + 1
    })
    const explain = (sql: string, params: ReadonlyArray<unknown>) =>
      (bareDb.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>).map((r) => r.detail).join("; ")
    const coreMedian = median(core)
    const bareMedian = median(bareRates)
    return {
      market, rows: checked.rows, pages: checked.pages, core, bare: bareRates, coreMedian, bareMedian,
      ratio: coreMedian / bareMedian,
      plan: `core page: ${explain(plan.sql, plan.params)} | bare scan: ${explain(BARE_SQL, bounds)}`
    }
  } finally {
    bareDb.close()
    await runtime.dispose()
  }
}

/** The result as a few markdown paragraphs for BENCHMARKS.md. */
export const hardwareMarkdown = (r: HardwareResults): string => {
  const n = (x: number) => Math.round(x).toLocaleString("en-US")
  const built = r.market.builtNow
    ? `built in this run in ${r.market.buildSeconds.toFixed(0)} s`
    : `reused from the cache (built ${r.market.builtAt.slice(0, 10)} in ${r.market.buildSeconds.toFixed(0)} s)`
  return `## (d) Hardware /history paging vs a bare scan

A client reads every hardware price observation of a ${n(r.market.rows)}-row market (${n(r.market.listings)} listings seen on most days of 180; SQLite file ${(r.market.bytes / 2 ** 20).toFixed(0)} MiB, ${built}) through \`HardwarePrices.history\` with \`page_size=${PAGE_SIZE}\` and the default sort (\`observed_date desc\`), following \`meta.next\` page tokens: ${n(r.pages)} pages, each one keyset statement. The baseline is one hand-written better-sqlite3 statement on its own connection that scans the same rows in the same order (\`.iterate()\`, object rows). Both were checked to return the same ${n(r.rows)} observation ids in the same order, and the first page to equal the bare rows with booleans and the services list decoded. ${r.core.length} timed walks of each, alternating.

| | rows/s (median) | walks |
| --- | ---: | --- |
| core, ${n(r.pages)} pages | ${n(r.coreMedian)} | ${r.core.map(n).join(", ")} |
| bare scan | ${n(r.bareMedian)} | ${r.bare.map(n).join(", ")} |

Ratio ${r.ratio.toFixed(2)}× (target ≥ ${HARDWARE_TARGET.toFixed(2)}×). Query plans: ${r.plan}.
`
}

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href
if (isMain) {
  const log = (line: string) => console.log(line)
  if (process.argv[2] === "build") build(hardwareConfig(process.argv[3] === "quick"), log)
  else {
    runHardwareBench(hardwareConfig(process.env.BENCH_QUICK === "1"), log).then((r) => {
      log(`hardware /history: core ${Math.round(r.coreMedian).toLocaleString("en-US")} rows/s, bare ${Math.round(r.bareMedian).toLocaleString("en-US")} rows/s, ratio ${r.ratio.toFixed(2)}× (target ≥ ${HARDWARE_TARGET}×) over ${r.rows.toLocaleString("en-US")} rows`)
      if (process.env.BENCH_STRICT === "1" && r.ratio < HARDWARE_TARGET) process.exitCode = 1
    }).catch((e: unknown) => {
      console.error(e)
      process.exitCode = 1
    })
  }
}
