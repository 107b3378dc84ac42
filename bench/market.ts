import { baseProductKey, formatInstant, productKey, type RentalPrice } from "@gpu-market/core"
import { putVersions, rentalPriceKeys } from "@gpu-market/core/storage"
import { makeClient, makeRentalPriceStore, migrate } from "../packages/storage-sqlite/src/internal"
import { Effect } from "effect"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { type Gpu, GPUS, REGIONS, type Vendor, VENDORS } from "./catalog"
import { type BenchConfig, BENCH_DIR, GENERATOR_VERSION, POPULAR_GPU, REPO_ROOT } from "./config"

/**
 * The benchmark market: a deterministic rental market of `products` offers, each with 6 to 11
 * price versions over 180 days (closed rows plus one current row), written through the store's
 * bulk path and cached on disk under the generator version.
 */

/** What a run needs to know about the market it measures. */
export interface MarketInfo {
  readonly file: string
  readonly generatorVersion: number
  readonly products: number
  readonly rows: number
  /** Current rows of `POPULAR_GPU`: how deep its pages go. */
  readonly popularCurrentRows: number
  readonly buildSeconds: number
  readonly builtAt: string
  /** Whether this run built it (false: reused from the cache). */
  readonly builtNow: boolean
  readonly bytes: number
}

const HISTORY_END_MS = Date.UTC(2025, 10, 1)
const HISTORY_DAYS = 180
const SEED = 0x5eed_0001

// A fixed PRNG rather than Math.random: the cached file must be the same market on every machine.
export const mulberry32 = (seed: number) => {
  let a = seed >>> 0
  return (): number => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const hashUnit = (text: string): number => mulberry32([...text].reduce((h, c) => Math.imul(h ^ c.charCodeAt(0), 16777619), 2166136261))()

export const weighted = <T>(items: ReadonlyArray<T>, weight: (t: T) => number) => {
  const cumulative: Array<number> = []
  let total = 0
  for (const item of items) cumulative.push((total += weight(item)))
  return (u: number): T => {
    const x = u * total
    let lo = 0
    let hi = cumulative.length - 1
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (cumulative[mid]! > x) hi = mid
      else lo = mid + 1
    }
    return items[lo]!
  }
}

export const pick = <T>(items: ReadonlyArray<T>, u: number): T => items[Math.min(items.length - 1, Math.floor(u * items.length))]!
const round = (n: number, places: number) => Math.round(n * 10 ** places) / 10 ** places

interface VendorPlan {
  readonly vendor: Vendor
  readonly regions: ReadonlyArray<readonly [vendorRegion: string, region: string]>
  readonly pickGpu: (u: number) => Gpu
  readonly spelling: ReadonlyMap<string, string>
}

const regionCode = (vendor: Vendor, region: string, i: number): string => {
  switch (vendor.kind) {
    case "hyperscaler": return `${region}-${1 + (i % 3)}`
    case "neocloud": return `${region.toUpperCase()}-0${1 + (i % 4)}`
    case "marketplace": return `${region.split("-")[0]!.toUpperCase()}-${i + 1}`
  }
}

const planVendor = (vendor: Vendor): VendorPlan => {
  const regions = [...REGIONS]
    .sort((a, b) => hashUnit(`${vendor.slug}/${a}`) - hashUnit(`${vendor.slug}/${b}`))
    .slice(0, vendor.regionCount)
    .map((r, i) => [regionCode(vendor, r, i), r] as const)
  // Everyone lists the flagship; the long tail is patchy, and hyperscalers skip consumer cards.
  const carried = GPUS.filter((g) => {
    if (g.slug === POPULAR_GPU) return true
    const consumerCard = g.slug.startsWith("rtx-")
    const p = vendor.kind === "hyperscaler" && consumerCard ? 0.1 : g.weight >= 5 ? 0.9 : 0.55
    return hashUnit(`${vendor.slug}/${g.slug}/carries`) < p
  })
  return {
    vendor,
    regions,
    pickGpu: weighted(carried, (g) => g.weight),
    spelling: new Map(carried.map((g) => [g.slug, pick(g.spellings, hashUnit(`${vendor.slug}/${g.slug}/spelling`))]))
  }
}

const CONTRACT_WEIGHT: Readonly<Record<string, number>> = { ondemand: 0.55, spot: 0.3, reserved: 0.15 }
const CONTRACT_FACTOR: Readonly<Record<string, number>> = { ondemand: 1, spot: 0.55, reserved: 0.72 }
const INTERCONNECT: Readonly<Record<string, string>> = { nvidia: "nvlink", amd: "infinity-fabric", intel: "roce" }

const plans = VENDORS.map(planVendor)
const pickPlan = weighted(plans, (p) => p.vendor.weight)

/** Every version of product `i`, oldest first; the last is current. */
export const productRows = (i: number): Array<RentalPrice> => {
  const rng = mulberry32(SEED ^ Math.imul(i + 1, 0x9e3779b1))
  const plan = pickPlan(rng())
  const { vendor } = plan
  const gpu = plan.pickGpu(rng())
  const [vendorRegion, region] = pick(plan.regions, rng())
  const contract = weighted(vendor.contracts, (c) => CONTRACT_WEIGHT[c] ?? 0.1)(rng())
  const count = pick(gpu.counts, rng())
  const offer = i.toString(36)
  const marketplace = vendor.kind === "marketplace"
  const term = contract === "ondemand" ? "hourly" : contract === "spot" ? "interruptible" : pick(["1 month", "1 year", "3 years"], rng())
  const vcpu = marketplace && rng() < 0.3 ? null : count * pick([8, 12, 16, 24, 32], rng())
  const ram = marketplace && rng() < 0.3 ? null : count * pick([32, 64, 120, 240], rng())
  const osRoll = rng()
  const identity = {
    vendor: vendor.slug,
    vendor_sku: `${vendor.slug}-${gpu.slug}-${count}x-${offer}`,
    vendor_gpu_name: plan.spelling.get(gpu.slug)!,
    vendor_region: vendorRegion,
    region,
    gpu_canonical_name: gpu.slug,
    gpu_count: count,
    instance_type: marketplace ? null : `${gpu.slug.replace(/-/g, "")}.${count}x${pick(["", ".large", ".xlarge", ".metal"], rng())}`,
    instance_variant: marketplace ? pick([null, "community", "secure"], rng()) : rng() < 0.2 ? "high-mem" : null,
    os: osRoll < 0.8 ? "linux" : osRoll < 0.95 ? "ubuntu-22.04" : null,
    contract_type: contract,
    contract_term: term
  }
  const base = baseProductKey(identity)
  const monthly = contract === "reserved"
  const versions = 6 + Math.floor(rng() * 6)
  const startMs = HISTORY_END_MS - HISTORY_DAYS * 86_400_000
  const slotMs = (HISTORY_DAYS * 86_400_000) / versions
  let price = gpu.base * vendor.level * CONTRACT_FACTOR[contract]! * (0.9 + 0.2 * rng()) * (count === 8 ? 0.98 : 1)
  const rows: Array<RentalPrice> = []
  for (let v = 0; v < versions; v++) {
    if (v > 0) price *= 1 + (rng() - 0.5) * (contract === "spot" ? 0.2 : 0.08)
    const perGpu = Math.max(0.01, round(price, 4))
    // Whole seconds inside the version's own slot, so valid_from strictly increases.
    const fromMs = Math.floor((startMs + slotMs * (v + 0.1 + 0.8 * rng())) / 1000) * 1000
    const from = formatInstant(fromMs * 1000)
    const availability = rng()
    const row: RentalPrice = {
      vendor: identity.vendor,
      vendor_gpu_name: identity.vendor_gpu_name,
      vendor_sku: identity.vendor_sku,
      vendor_region: identity.vendor_region,
      region: identity.region,
      gpu_canonical_name: identity.gpu_canonical_name,
      gpu_manufacturer: gpu.manufacturer,
      gpu_model: gpu.model,
      gpu_count: count,
      gpu_memory_gb: gpu.memory,
      vcpu,
      ram_gb: ram,
      os: identity.os,
      form_factor: gpu.formFactor,
      interconnect: count === 1 ? null : gpu.formFactor === "pcie" ? "pcie" : INTERCONNECT[gpu.manufacturer] ?? null,
      instance_type: identity.instance_type,
      instance_variant: identity.instance_variant,
      contract_type: contract,
      contract_term: term,
      contract_details: monthly ? `billed monthly, ${term} commitment` : null,
      availability: availability < 0.75 ? "available" : availability < 0.95 ? "limited" : "sold_out",
      price_usd_per_gpu_hour: perGpu,
      raw_price: round(perGpu * count * (monthly ? 730 : 1), 4),
      raw_price_unit: monthly ? "usd_per_instance_month" : "usd_per_instance_hour",
      valid_from: from,
      valid_to: null,
      extracted_at: from,
      base_product_key: base,
      product_key: ""
    }
    rows.push({ ...row, product_key: productKey(base, from, row) })
    if (v > 0) rows[v - 1] = { ...rows[v - 1]!, valid_to: from }
  }
  return rows
}

const infoFile = (dbFile: string) => dbFile.replace(/\.db$/, ".json")

const removeDb = (file: string) => {
  for (const f of [file, `${file}-wal`, `${file}-shm`]) fs.rmSync(f, { force: true })
}

type Stored = Omit<MarketInfo, "builtNow" | "bytes" | "file">

const readCached = (config: BenchConfig): Stored | undefined => {
  try {
    if (!fs.existsSync(config.dbFile)) return undefined
    const info = JSON.parse(fs.readFileSync(infoFile(config.dbFile), "utf8")) as Stored
    return info.generatorVersion === GENERATOR_VERSION && info.products === config.products ? info : undefined
  } catch {
    return undefined
  }
}

const build = (config: BenchConfig, log: (line: string) => void): Stored => {
  const tmp = `${config.dbFile}.building`
  removeDb(tmp)
  const started = performance.now()
  let rows = 0
  let popularCurrentRows = 0
  Effect.runSync(Effect.scoped(Effect.gen(function* () {
    const client = yield* makeClient({ filename: tmp })
    yield* migrate(client)
    // A half-built file is thrown away, never reused, so durability while building buys nothing.
    client.db.pragma("synchronous = OFF")
    const store = makeRentalPriceStore(client)
    let batch: Array<RentalPrice> = []
    let reported = 0
    for (let i = 0; i < config.products; i++) {
      const product = productRows(i)
      for (const r of product) batch.push(r)
      if (product[0]!.gpu_canonical_name === POPULAR_GPU) popularCurrentRows++
      if (batch.length >= config.batchRows || i === config.products - 1) {
        yield* putVersions(store.transact, rentalPriceKeys, batch)
        rows += batch.length
        batch = []
        const pct = Math.floor(((i + 1) / config.products) * 10)
        if (pct > reported) {
          reported = pct
          log(`  ${String(pct * 10).padStart(3)}%  ${rows.toLocaleString("en-US")} rows  ${((performance.now() - started) / 1000).toFixed(1)} s`)
        }
      }
    }
    client.db.pragma("wal_checkpoint(TRUNCATE)")
  })))
  removeDb(config.dbFile)
  fs.renameSync(tmp, config.dbFile)
  const stored: Stored = {
    generatorVersion: GENERATOR_VERSION,
    products: config.products,
    rows,
    popularCurrentRows,
    buildSeconds: (performance.now() - started) / 1000,
    builtAt: new Date().toISOString()
  }
  fs.writeFileSync(infoFile(config.dbFile), `${JSON.stringify(stored, null, 2)}\n`)
  return stored
}

/**
 * Builds the market into the cache file. Runs in a child process of its own (build-market.ts):
 * a million rows leave a large, fragmented heap behind, which would slow every measurement
 * taken afterwards in the same process.
 */
export const buildMarket = (config: BenchConfig, log: (line: string) => void): void => {
  fs.mkdirSync(path.dirname(config.dbFile), { recursive: true })
  log(`Building the market (${config.products.toLocaleString("en-US")} products) at ${config.dbFile} ...`)
  build(config, log)
}

/** The cached market of this generator version and size, built first (in a child process) when missing. */
export const ensureMarket = (config: BenchConfig): MarketInfo => {
  let stored = readCached(config)
  const builtNow = stored === undefined
  if (stored === undefined) {
    const child = spawnSync(process.execPath, ["--import", "tsx", path.join(BENCH_DIR, "build-market.ts")], {
      cwd: REPO_ROOT,
      // The child reads its config from the environment: build the market this caller asked for.
      env: { ...process.env, BENCH_QUICK: config.quick ? "1" : "0" },
      stdio: "inherit"
    })
    if (child.status !== 0) throw new Error(`building the market failed (exit ${child.status ?? child.signal})`)
    stored = readCached(config)
    if (stored === undefined) throw new Error("the market build finished but left no usable cache")
  }
  return { ...stored, file: config.dbFile, builtNow, bytes: fs.statSync(config.dbFile).size }
}
