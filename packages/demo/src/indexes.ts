import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import {
  type AdministeredValueInput, type FleetWeight, formatDate, formatInstant, IndexComputation, type IndexDefinitionInput, IndexIngest, type IndexRowType, MICROS_PER_DAY
} from "@gpu-market/core"
import { seedMark } from "./seed-mark.js"
import { DEMO_HISTORY_DAYS, type DemoRegionGroup, demoProducts } from "./market.js"
import { unit } from "./random.js"

/**
 * The demo's indices over the demo rental market: on-demand rental indices of four GPUs in three
 * region groups, daily (from the first demo day) and intraday (the last `DEMO_INTRADAY_DAYS`); an H100 family index; a neocloud-only H100 index; the GPU
 * reference price (daily and intraday) over the global per-GPU indices with quarterly fleet
 * weights; and one administered index whose values a third party publishes. Weights and
 * administered values are functions of the day, so re-seeding never changes the past.
 */

const REGION_GROUPS: ReadonlyArray<{ readonly id: string; readonly name: string; readonly group: DemoRegionGroup | null }> = [
  { id: "na", name: "North America", group: "na" },
  { id: "eu", name: "Europe", group: "eu" },
  { id: "global", name: "Global", group: null }
]

/** The region slugs of a region group's index: every region of the demo's products in the group, or all (null). */
const regionsOf = (group: DemoRegionGroup | null): ReadonlyArray<string> | null =>
  group === null ? null : [...new Set(demoProducts().filter((p) => p.regionGroup === group).map((p) => p.observation.region))].sort()

/** The demo vendors that rent out GPUs of their own, not a marketplace of other providers' (shadeform, primeintellect, vast). */
const NEOCLOUDS = ["cudo", "hyperbolic", "lambda", "nebius", "runpod"]

/** GPUs with per-GPU indices, and their share of the demo fleet before quarterly variation. */
export const DEMO_INDEX_GPUS: ReadonlyArray<{ readonly slug: string; readonly family: string; readonly name: string; readonly fleet: number }> = [
  { slug: "h100-sxm", family: "H100", name: "H100 SXM", fleet: 0.45 },
  { slug: "h200-sxm", family: "H200", name: "H200 SXM", fleet: 0.2 },
  { slug: "a100-sxm-80gb", family: "A100", name: "A100 SXM 80GB", fleet: 0.25 },
  { slug: "b200", family: "B200", name: "B200", fleet: 0.1 }
]

const ROW_TYPES: ReadonlyArray<IndexRowType> = ["daily", "intraday"]

/** The administered demo index. */
export const DEMO_ADMINISTERED_INDEX = "adm-h100-sxm-daily"

const publication = (type: IndexRowType) => (type === "daily" ? "end_of_utc_day" : "end_of_30_minute_interval")
const intervalName = (type: IndexRowType) => (type === "daily" ? "daily" : "30-minute")
const METHOD = "Vendor-weighted median of on-demand rental prices (USD per GPU-hour) in force during each interval: each vendor's median counts once; p5/p95 are the 5th and 95th percentiles of the vendor medians; published with at least two vendors."

const common = (type: IndexRowType) => ({
  row_type: type,
  asset: "gpu_compute_rental",
  tenor: "on_demand",
  publication: publication(type),
  interval: type === "daily" ? "P1D" as const : "PT30M" as const,
  contract_type: "ondemand"
})

/** Days of intraday history the demo computes: 48 values a day per index add up (see docs/reference/http-api.md). */
export const DEMO_INTRADAY_DAYS = 60

/**
 * The demo's index definitions: daily indices start on `dailyFrom` and intraday ones on
 * `intradayFrom` (`YYYY-MM-DD`).
 */
export const demoIndexDefinitions = (dailyFrom: string, intradayFrom: string): ReadonlyArray<IndexDefinitionInput> => {
  const out: Array<IndexDefinitionInput> = []
  for (const type of ROW_TYPES) {
    const startsAt = type === "daily" ? dailyFrom : intradayFrom
    for (const gpu of DEMO_INDEX_GPUS) for (const rg of REGION_GROUPS) {
      const regions = regionsOf(rg.group)
      out.push({
        id: `gpu-${gpu.slug}-${rg.id}-${type}`,
        index_type: "gpu_rental_price",
        ...common(type),
        title: `${gpu.name} on-demand rental, ${rg.name}, ${intervalName(type)}`,
        description: `${METHOD} GPU: ${gpu.slug}. Regions: ${regions === null ? "all" : `the ${regions.length} ${rg.name} regions of the demo catalog (inputs.regions)`}.`,
        gpu_family: gpu.family,
        gpu_group: gpu.slug,
        region_group: rg.id,
        vendor_category: "all",
        source: "computed",
        gpu_model: gpu.slug,
        inputs: { kind: "rental", starts_at: startsAt, gpus: [gpu.slug], contract_types: ["ondemand"], regions, vendors: null }
      })
    }
    out.push({
      id: `gpu-reference-price-${type}`,
      index_type: "reference_price",
      ...common(type),
      title: `GPU reference price, ${intervalName(type)}`,
      description: `Fleet-weighted mean of the global ${intervalName(type)} per-GPU indices (${DEMO_INDEX_GPUS.map((g) => g.slug).join(", ")}), weighted by each GPU's fleet weight in force when the interval starts.`,
      gpu_family: "all",
      gpu_group: "fleet",
      region_group: "global",
      vendor_category: "all",
      source: "computed",
      gpu_model: null,
      inputs: { kind: "reference", starts_at: startsAt, components: DEMO_INDEX_GPUS.map((g) => `gpu-${g.slug}-global-${type}`) }
    })
  }
  out.push({
    id: "family-h100-global-daily",
    index_type: "gpu_family_rental_price",
    ...common("daily"),
    title: "H100 family (SXM and PCIe) on-demand rental, Global, daily",
    description: `${METHOD} GPUs: h100-sxm, h100-pcie. Regions: all.`,
    gpu_family: "H100",
    gpu_group: "h100-family",
    region_group: "global",
    vendor_category: "all",
    source: "computed",
    gpu_model: null,
    inputs: { kind: "rental", starts_at: dailyFrom, gpus: ["h100-sxm", "h100-pcie"], contract_types: ["ondemand"], regions: null, vendors: null }
  })
  out.push({
    id: "gpu-h100-sxm-global-neocloud-daily",
    index_type: "gpu_rental_price",
    ...common("daily"),
    title: "H100 SXM on-demand rental, Global, neoclouds, daily",
    description: `${METHOD} GPU: h100-sxm. Vendors: ${NEOCLOUDS.join(", ")}.`,
    gpu_family: "H100",
    gpu_group: "h100-sxm",
    region_group: "global",
    vendor_category: "neocloud",
    source: "computed",
    gpu_model: "h100-sxm",
    inputs: { kind: "rental", starts_at: dailyFrom, gpus: ["h100-sxm"], contract_types: ["ondemand"], regions: null, vendors: NEOCLOUDS }
  })
  out.push({
    id: DEMO_ADMINISTERED_INDEX,
    index_type: "third_party_rental_index",
    ...common("daily"),
    title: "H100 SXM rental index (administered by Example Index Administration Ltd)",
    description: "A third-party index of H100 SXM rental prices, published here as its administrator publishes it; no envelope.",
    gpu_family: "H100",
    gpu_group: "h100-sxm",
    region_group: "global",
    vendor_category: "all",
    source: "administered",
    gpu_model: "h100-sxm",
    inputs: { kind: "administered", administrator: "Example Index Administration Ltd" }
  })
  return out
}

const round = (n: number, places: number) => Math.round(n * 10 ** places) / 10 ** places

/** Epoch day of the first day of the calendar quarter holding `day`. */
const quarterStart = (day: number): number => {
  const d = new Date(day * 86_400_000)
  return Date.UTC(d.getUTCFullYear(), Math.floor(d.getUTCMonth() / 3) * 3, 1) / 86_400_000
}

/** Fleet weights by calendar quarter from the quarter of `first` through the quarter of `today` (open-ended). */
export const demoFleetWeights = (first: number, today: number): ReadonlyArray<FleetWeight> => {
  const out: Array<FleetWeight> = []
  const last = quarterStart(today)
  for (let q = quarterStart(first); q <= last; q = quarterStart(q + 100)) {
    const next = quarterStart(q + 100)
    for (const gpu of DEMO_INDEX_GPUS) {
      out.push({
        gpu_canonical_name: gpu.slug,
        weight: round(gpu.fleet * (0.9 + 0.2 * unit(gpu.slug, "fleet", q)), 4),
        valid_from: formatInstant(q * MICROS_PER_DAY),
        valid_to: q === last ? null : formatInstant(next * MICROS_PER_DAY)
      })
    }
  }
  return out
}

/** The administered index's value for an epoch day. */
export const demoAdministeredValue = (day: number): AdministeredValueInput => ({
  id: DEMO_ADMINISTERED_INDEX,
  timestamp: formatDate(day * MICROS_PER_DAY),
  value: round(2.35 + 0.25 * Math.sin(day / 23) + 0.1 * unit("adm", day), 4)
})

const SEEDED_THROUGH = "demo_indexes_seeded_through"
/** Fleet weights are generated from this epoch day (2024-01-01) on, so every run writes the same past. */
const FLEET_SINCE = Date.UTC(2024, 0, 1) / 86_400_000

/**
 * Seeds the demo indices: on first run the definitions (computed from the first demo day), then
 * on every run the fleet weights, the administered values of the days completed since the last
 * run, and every computed value due now. Needs the demo rental market seeded first.
 */
export const seedIndexDemo = Effect.fn("Demo.seedIndexes")(function* (today: number, historyDays = DEMO_HISTORY_DAYS) {
  const ingest = yield* IndexIngest
  const computation = yield* IndexComputation
  const mark = yield* seedMark(SEEDED_THROUGH, ingest.mark)
  const through = yield* mark.last
  const first = today - historyDays
  yield* ingest.setFleetWeights(demoFleetWeights(Math.min(FLEET_SINCE, first), today))
  if (Option.isNone(through)) {
    yield* ingest.define(demoIndexDefinitions(formatDate(first * MICROS_PER_DAY), formatDate((today - Math.min(DEMO_INTRADAY_DAYS, historyDays)) * MICROS_PER_DAY)))
  }
  const published = Option.isSome(through) ? through.value + 1 : first
  const days: Array<AdministeredValueInput> = []
  for (let day = published; day < today; day++) days.push(demoAdministeredValue(day))
  // The mark goes with the last administered values; computed values carry their own progress
  // (each index's cursor moves in the write of its values), so a killed seed resumes both.
  yield* ingest.publish(days, { mark: mark.through(today - 1) })
  yield* computation.computeDue()
})
