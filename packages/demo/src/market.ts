import { readFileSync } from "node:fs"
import {
  formatInstant, fromSkypilot, makeGpuCatalog, MICROS_PER_DAY, type RentalPriceObservationInput, resolveGpu, SHIPPED_GPUS, type SkypilotObservation
} from "@gpu-market/core"
import { unit } from "./random.js"

/**
 * The demo rental market: real products at real prices. The products are the SkyPilot GPU
 * catalogs shipped in this package (`data/skypilot`, see `data/SOURCES.md`), converted with
 * core's `fromSkypilot`; from `DEMO_ANCHOR_DAY` on each is priced as its catalog publishes it,
 * before that on a synthetic walk around that price. Every price is a function of the product
 * and the calendar day, so seeding any range of days gives the same rows whatever day seeding
 * starts, and a restart can extend the market to today without changing the past.
 */

/** The SkyPilot clouds of the demo, each a vendor, in the order `DemoCatalogSize.vendors` takes them. */
export const DEMO_VENDORS: ReadonlyArray<string> = ["lambda", "runpod", "nebius", "shadeform", "primeintellect", "vast", "cudo", "hyperbolic"]

/** Vendors in the demo catalog. */
export const DEMO_VENDOR_COUNT = DEMO_VENDORS.length

/**
 * The epoch day (2026-11-24) the shipped catalogs were taken into the repository: from this day on
 * every demo price is the catalog's published price.
 */
export const DEMO_ANCHOR_DAY = Date.UTC(2026, 10, 24) / 86_400_000

/** Region groups of the demo: where a catalog's region slug lies. */
export type DemoRegionGroup = "na" | "eu" | "other"

// Region slugs as the clouds write them: `us-east-1`, `us-us-west-2`, `ca-montreal-3` (cloud-style
// codes), `houston-usa-1`, `paris-france-3` (city-country), `texas-us-na`, `czechia-cz-eu`
// (vast's place-country-continent), and runpod's bare country codes.
const NA = /(^|-)(us|usa|ca|canada|na)(-|$|\d)/
const EU = /(^|-)(eu|europe|uk|de|fr|fi|no|se|nl|cz|ro|is|pl|germany|france|finland|norway|sweden|iceland|poland)(-|$|\d)/

/** The region group of a region slug (`fromSkypilot`'s `region`): North America, Europe, or elsewhere. */
export const demoRegionGroup = (region: string): DemoRegionGroup => (NA.test(region) ? "na" : EU.test(region) ? "eu" : "other")

/** One rentable product of the demo market: a row of a shipped SkyPilot catalog. */
export interface DemoProduct {
  readonly id: string
  /** The GPU's catalog slug, as the write path resolves `vendor_gpu_name`. */
  readonly gpu: string
  readonly regionGroup: DemoRegionGroup
  /** What the vendor publishes, less the price and its instant. */
  readonly observation: Omit<SkypilotObservation, "raw_price" | "extracted_at">
  /** The catalog's price: USD per instance-hour. */
  readonly published: number
  /** Chance that the price moves on a given day before the anchor day. */
  readonly volatility: number
}

/** How much of the demo catalog to list: the first `vendors` vendors and `gpus` GPUs (default: all). */
export interface DemoCatalogSize {
  readonly vendors?: number | undefined
  readonly gpus?: number | undefined
}

const catalogText = (vendor: string) => readFileSync(new URL(`../data/skypilot/${vendor}-vms.csv`, import.meta.url), "utf8")

/** GPUs listed first, in this order (the GPUs of the demo's indices): `DemoCatalogSize.gpus` keeps them first. */
const LEADING_GPUS = ["h100-sxm", "h200-sxm", "a100-sxm-80gb", "b200", "h100-pcie"]

let catalog: { readonly products: ReadonlyArray<DemoProduct>; readonly gpus: ReadonlyArray<string> } | undefined

/**
 * Every catalog row whose GPU the shipped GPU catalog knows, one product per vendor, GPU, GPU
 * count, contract and region group: the group's cheapest row (the first listed of equals). A
 * cloud lists one instance in up to 17 regions at one price; a product per region would make
 * 2.4 times the products and no more of a market.
 */
const demoCatalog = () => {
  if (catalog !== undefined) return catalog
  const gpuCatalog = makeGpuCatalog(SHIPPED_GPUS)
  const chosen = new Map<string, { readonly o: SkypilotObservation; readonly gpu: string; readonly group: DemoRegionGroup }>()
  for (const vendor of DEMO_VENDORS) {
    const observedAt = formatInstant(DEMO_ANCHOR_DAY * MICROS_PER_DAY)
    for (const { observation: o } of fromSkypilot(catalogText(vendor), { vendor, observedAt }).observations) {
      const gpu = resolveGpu(gpuCatalog, o.vendor_gpu_name, o.gpu_memory_gb)?.gpu_canonical_name
      if (gpu === undefined) continue
      const group = demoRegionGroup(o.region)
      const key = `${vendor}|${gpu}|${o.gpu_count}|${o.contract_type}|${group}`
      const held = chosen.get(key)
      if (held === undefined || o.raw_price < held.o.raw_price) chosen.set(key, { o, gpu, group })
    }
  }
  const products = [...chosen.values()].map(({ o, gpu, group }): DemoProduct => {
    const { raw_price, extracted_at: _, ...observation } = o
    return {
      id: `${o.vendor}/${o.vendor_region}/${o.vendor_sku}/${o.instance_variant ?? ""}/${o.contract_type}`,
      gpu,
      regionGroup: group,
      observation,
      published: raw_price,
      volatility: o.contract_type === "spot" ? 0.35 : 0.06
    }
  })
  const listings = new Map<string, number>()
  for (const p of products) listings.set(p.gpu, (listings.get(p.gpu) ?? 0) + 1)
  const rank = (slug: string) => (LEADING_GPUS.includes(slug) ? LEADING_GPUS.indexOf(slug) : LEADING_GPUS.length)
  const gpus = [...listings.keys()].sort((a, b) => rank(a) - rank(b) || listings.get(b)! - listings.get(a)! || (a < b ? -1 : 1))
  catalog = { products, gpus }
  return catalog
}

/** The GPUs of the demo market (catalog slugs): the indices' GPUs first, then the most listed. */
export const demoGpus = (): ReadonlyArray<string> => demoCatalog().gpus

/** Every product of the demo market (or of the part `size` keeps), in a fixed order. */
export const demoProducts = (size: DemoCatalogSize = {}): ReadonlyArray<DemoProduct> => {
  const { products, gpus } = demoCatalog()
  if (size.vendors === undefined && size.gpus === undefined) return products
  const vendors = new Set(DEMO_VENDORS.slice(0, size.vendors))
  const kept = new Set(gpus.slice(0, size.gpus))
  return products.filter((p) => vendors.has(p.observation.vendor) && kept.has(p.gpu))
}

/** Epoch day number (days since 1970-01-01) of an instant in microseconds. */
export const epochDay = (micros: number): number => Math.floor(micros / MICROS_PER_DAY)

const round = (n: number, places: number) => Math.round(n * 10 ** places) / 10 ** places

/**
 * A product's price on an epoch day, in USD per instance-hour as its vendor publishes it: the
 * catalog's from `DEMO_ANCHOR_DAY` on; before it a walk around that price that moves only on the
 * product's change days (every 21st day of its cycle, and at random by its volatility).
 */
export const demoPrice = (p: DemoProduct, day: number): number => {
  if (day >= DEMO_ANCHOR_DAY) return p.published
  let d = day
  while (d > day - 21 && unit(p.id, "move", d) >= p.volatility && (d + Math.floor(unit(p.id, "phase") * 21)) % 21 !== 0) d--
  const drift = 1 + 0.08 * Math.sin((d + unit(p.id, "phase") * 90) / 29)
  return round(p.published * drift * (0.93 + unit(p.id, "price", d) * 0.14), 4)
}

/**
 * The observations of every product (of `size`) on an epoch day, extracted at that day's
 * midnight, or with `changedOnly` only those whose price differs from the day before: sending
 * an unchanged price again stores nothing, so a seed that has the day before sends just these.
 */
export const demoObservations = (
  day: number, size: DemoCatalogSize = {}, changedOnly = false
): ReadonlyArray<RentalPriceObservationInput> => {
  const extracted_at = formatInstant(day * MICROS_PER_DAY)
  const out: Array<RentalPriceObservationInput> = []
  for (const p of demoProducts(size)) {
    const raw_price = demoPrice(p, day)
    if (changedOnly && raw_price === demoPrice(p, day - 1)) continue
    // Vendors publish the instance's price; the write path derives the per-GPU one.
    out.push({ ...p.observation, raw_price, extracted_at })
  }
  return out
}

/** Days of history the demo market holds before today. */
export const DEMO_HISTORY_DAYS = 180
