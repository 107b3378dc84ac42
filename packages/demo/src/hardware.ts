import * as Effect from "effect/Effect"
import { formatDate, type FxRateInput, HardwarePriceIngest, type HardwarePriceObservationInput, MICROS_PER_DAY, ReferenceDataIngest } from "@gpu-market/core"
import { seedMark } from "./seed-mark.js"
import { unit } from "./random.js"

/**
 * The demo hardware market: listings of GPUs to buy outright (bare modules, servers and racks,
 * new, refurbished and used) across channels and countries. Listings appear, are seen on most
 * days while they live, and disappear; prices step every week or two and drift with the GPU's
 * market. Everything is a function of the listing slot and the calendar day, so seeding any range
 * of days gives the same observations, and a restart extends the market to today without
 * changing the past.
 */

/** A GPU of the demo hardware market. */
export interface HardwareGpuSpec {
  readonly slug: string
  /** USD for one new bare module. */
  readonly module: number
  /** Relative price drift per year (negative: getting cheaper). */
  readonly trend: number
  readonly packaging: string
  /** Whether it goes into 8-GPU baseboards with NVSwitch (and so into racks). */
  readonly baseboard: boolean
  readonly exportRegime: string
  /** Listing slots: how many listings of it the demo keeps in play. */
  readonly slots: number
}

/** The demo hardware catalog (slugs as in the rental catalog). */
export const DEMO_HARDWARE_GPUS: ReadonlyArray<HardwareGpuSpec> = [
  { slug: "h100-sxm", module: 27_500, trend: -0.12, packaging: "sxm5", baseboard: true, exportRegime: "eccn_3a090", slots: 95 },
  { slug: "h100-pcie", module: 24_000, trend: -0.14, packaging: "pcie_card", baseboard: false, exportRegime: "eccn_3a090", slots: 60 },
  { slug: "h200-sxm", module: 33_000, trend: -0.04, packaging: "sxm5", baseboard: true, exportRegime: "eccn_3a090", slots: 55 },
  { slug: "b200", module: 38_500, trend: 0.03, packaging: "sxm6", baseboard: true, exportRegime: "eccn_3a090", slots: 35 },
  { slug: "a100-sxm-80gb", module: 11_500, trend: -0.18, packaging: "sxm4", baseboard: true, exportRegime: "eccn_3a090", slots: 65 },
  { slug: "a100-pcie-40gb", module: 6_200, trend: -0.2, packaging: "pcie_card", baseboard: false, exportRegime: "eccn_3a090", slots: 45 },
  { slug: "l40s", module: 8_400, trend: -0.08, packaging: "pcie_card", baseboard: false, exportRegime: "eccn_3a090", slots: 55 },
  { slug: "rtx-4090", module: 1_950, trend: -0.05, packaging: "pcie_card", baseboard: false, exportRegime: "eccn_3a992", slots: 60 },
  { slug: "mi300x", module: 16_500, trend: -0.06, packaging: "oam", baseboard: true, exportRegime: "eccn_3a090", slots: 30 }
]

/** Countries of the demo: code, group, currency and USD→currency rate. */
const COUNTRIES: ReadonlyArray<readonly [country: string, group: string, currency: string, rate: number]> = [
  ["US", "north_america", "USD", 1], ["US", "north_america", "USD", 1], ["US", "north_america", "USD", 1],
  ["CA", "north_america", "CAD", 1.37], ["DE", "europe", "EUR", 0.92], ["NL", "europe", "EUR", 0.92],
  ["GB", "europe", "GBP", 0.79], ["FR", "europe", "EUR", 0.92], ["JP", "apac", "JPY", 151], ["SG", "apac", "SGD", 1.34],
  ["KR", "apac", "KRW", 1_370], ["TW", "apac", "TWD", 32], ["AU", "apac", "AUD", 1.52], ["IN", "apac", "INR", 83],
  ["AE", "middle_east", "AED", 3.67]
]

const CONDITIONS = [["new_sealed", 1, 0.45], ["refurbished", 0.8, 0.25], ["used", 0.64, 0.3]] as const
const CHANNELS = ["var_reseller", "marketplace", "broker", "retailer"] as const
const STOCK = ["in_stock", "in_stock", "in_stock", "limited", "backorder", "preorder"] as const

/** Days of history the demo hardware market holds before today. */
export const DEMO_HARDWARE_HISTORY_DAYS = 130

/** Epoch day of 2026-01-01, where catalog prices hold before drift. */
const REFERENCE_DAY = 20_454

const round = (n: number, places: number) => Math.round(n * 10 ** places) / 10 ** places
const pick = <T>(items: ReadonlyArray<T>, u: number): T => items[Math.floor(u * items.length)]!

/** Which generation of a slot lives on a day, if any: slots cycle through listings that come and go. */
const liveListing = (slot: string, day: number): { readonly id: string; readonly age: number } | undefined => {
  const period = 30 + Math.floor(unit(slot, "period") * 120)
  const shifted = day + Math.floor(unit(slot, "offset") * period)
  const generation = Math.floor(shifted / period)
  const age = shifted - generation * period
  const lifetime = Math.floor(period * (0.55 + unit(slot, generation, "life") * 0.4))
  return age < lifetime ? { id: `${slot}/${generation}`, age } : undefined
}

/** The observation of one listing on one day, or undefined when it was not seen that day. */
const observe = (gpu: HardwareGpuSpec, id: string, age: number, day: number): HardwarePriceObservationInput | undefined => {
  const u = (...parts: ReadonlyArray<string | number>) => unit(id, ...parts)
  if (u("seen", day) < 0.12) return undefined
  const [condition, conditionFactor] = (() => {
    const x = u("condition")
    const c = x < CONDITIONS[0][2] ? CONDITIONS[0] : x < CONDITIONS[0][2] + CONDITIONS[1][2] ? CONDITIONS[1] : CONDITIONS[2]
    return [c[0], c[1]] as const
  })()
  const channel = pick(CHANNELS, u("channel"))
  const [country, countryGroup, currency, rate] = pick(COUNTRIES, u("country"))
  const level = gpu.baseboard
    ? pick(["bare_module", "bare_module", "server", "server", "rack"] as const, u("level"))
    : pick(["bare_module", "bare_module", "server"] as const, u("level"))
  const gpus = level === "bare_module" ? 1 : level === "server" ? 8 : 32
  const used = condition !== "new_sealed"
  // The market moves daily; a listing reprices only every week or two.
  const repriced = day - ((age + Math.floor(u("phase") * 11)) % (7 + Math.floor(u("cadence") * 8)))
  const drift = (1 + gpu.trend * (repriced - REFERENCE_DAY) / 365) * (1 + 0.04 * Math.sin((repriced + u("wave") * 60) / 19))
  const module = gpu.module * conditionFactor * drift * (0.93 + u("level-price", repriced) * 0.16)
  const server = 38_000 + (gpu.baseboard ? 22_000 : 0)
  const price = level === "bare_module"
    ? module
    : level === "server" ? 8 * module * 1.06 + server : 4 * (8 * module * 1.06 + server) + 145_000
  const priceUsd = round(price, price < 10_000 ? 2 : 0)
  // A few rack listings are "price on request" some days: seen, but with no price to publish.
  if (level === "rack" && u("on-request", day) < 0.06) return undefined
  const estimate = channel === "broker" && u("estimate") < 0.5
  const stock = pick(STOCK, u("stock", Math.floor(day / 9)))
  const age0 = used ? 6 + Math.floor(u("unit-age") * 30) : 0
  const lastTouched = Math.max(day - age, day - Math.floor(u("touched", day) * 6))
  return {
    listing_ref: `demo-hardware/${gpu.slug}/${id}`,
    gpu_canonical_name: gpu.slug,
    observed_date: formatDate(day * MICROS_PER_DAY),
    listing_last_updated_date: formatDate(lastTouched * MICROS_PER_DAY),
    // In dollars the amount is the USD price itself; other currencies are quoted in whole units.
    price_amount: currency === "USD" ? priceUsd : round(priceUsd * rate, 0),
    currency,
    price_usd: priceUsd,
    price_usd_low: estimate ? round(priceUsd * 0.95, 0) : null,
    price_usd_high: estimate ? round(priceUsd * 1.05, 0) : null,
    price_type: estimate ? "estimate" : channel === "marketplace" && u("sold", day) < 0.15 ? "sold" : "ask",
    price_per_gpu_system_attach: level === "bare_module" ? null : round(priceUsd / gpus, 0),
    price_basis: level === "bare_module" ? "per_gpu" : level === "server" ? "per_server" : "per_rack",
    taxes_included: countryGroup === "europe" && channel === "retailer",
    // Descriptive fields as a source writes them; ingest keeps the vocabulary's terms (`Net 30` is `net-30`).
    payment_terms: pick(["Net 30", "Prepaid", "Escrow", "Deposit, Net 30", "Letter of credit"], u("terms")),
    stock_status: stock,
    units_available: stock === "backorder" || stock === "preorder" ? 0 : 1 + Math.floor(u("units", day) * (level === "bare_module" ? 40 : 6)),
    min_order_quantity: level === "bare_module" && channel !== "marketplace" ? pick([1, 4, 8], u("moq")) : 1,
    lead_time_weeks: stock === "in_stock" ? round(u("lead") * 2, 1) : 4 + Math.floor(u("lead") * 12),
    market: condition === "new_sealed" && (channel === "var_reseller" || channel === "retailer") ? "primary" : "secondary",
    channel,
    source_type: { var_reseller: "reseller_quote", marketplace: "marketplace_listing", broker: "broker_sheet", retailer: "retail_page" }[channel],
    confidence: estimate ? "low" : channel === "marketplace" ? "medium" : "high",
    counterparty_class: { var_reseller: "dealer", marketplace: used ? "end_user" : "dealer", broker: "broker", retailer: "dealer" }[channel],
    transaction_level: level,
    gpu_count_in_unit: gpus,
    includes_host_cpus: level === "bare_module" ? 0 : level === "server" ? 2 : 8,
    includes_dram_gb: level === "bare_module" ? null : level === "server" ? 2_048 : 8_192,
    includes_storage_tb: level === "bare_module" ? null : level === "server" ? 30.72 : 122.88,
    includes_nics: level === "bare_module" ? null : level === "server" ? "8x ConnectX-7, 2x BlueField-3, 400GbE" : "32x ConnectX-7, InfiniBand NDR",
    includes_nvswitch: level === "bare_module" ? null : gpu.baseboard,
    includes_scaleout_fabric: level === "rack",
    includes_chassis_psu: level !== "bare_module",
    includes_cooling_hw: level === "rack" ? (u("cooling") < 0.6 ? "Liquid / direct-to-chip, CDU" : "Rear-door") : null,
    software_entitlements: gpu.slug === "h100-pcie" && !used ? "NVIDIA AI Enterprise" : null,
    support_years: level !== "bare_module" && !used ? 3 : null,
    warranty_months: condition === "new_sealed" ? 36 : condition === "refurbished" ? 12 : null,
    services_included: level === "rack" ? ["Installation", "Burn-in testing", "Cabling"] : level === "server" && !used ? ["Burn-in testing"] : null,
    // Some marketplace listings do not say.
    condition: channel === "marketplace" && u("condition-said") < 0.15 ? null : condition,
    module_packaging: gpu.packaging,
    unit_age_months: used ? age0 + Math.floor(age / 30) : null,
    unit_age_basis: used ? (u("age-basis") < 0.5 ? "seller_stated" : "serial_lookup") : null,
    warranty_remaining_months: condition === "refurbished" ? Math.max(0, 12 - Math.floor(age / 30)) : null,
    hours_used: condition === "used" ? Math.round((age0 + age / 30) * 500) : null,
    warranty_transferable: condition === "new_sealed" ? true : condition === "refurbished" ? u("transfer") < 0.7 : null,
    firmware_region_lock: u("lock") < 0.05,
    country,
    country_group: countryGroup,
    export_control_regime: gpu.exportRegime
  }
}

/** The observations of every listing seen on an epoch day. */
export const demoHardwareObservations = (day: number): ReadonlyArray<HardwarePriceObservationInput> => {
  const out: Array<HardwarePriceObservationInput> = []
  for (const gpu of DEMO_HARDWARE_GPUS) {
    for (let s = 0; s < gpu.slots; s++) {
      const live = liveListing(`${gpu.slug}/${s}`, day)
      if (live === undefined) continue
      const o = observe(gpu, live.id, live.age, day)
      if (o !== undefined) out.push(o)
    }
  }
  return out
}

/** The demo's FX rates on an epoch day: one per currency its listings are priced in, each covering the week after. */
export const demoFxRates = (day: number): ReadonlyArray<FxRateInput> =>
  [...new Map(COUNTRIES.filter(([, , currency]) => currency !== "USD").map(([, , currency, rate]) => [currency, rate])).entries()]
    .map(([currency, rate]) => ({ currency, date: formatDate(day * MICROS_PER_DAY), usd_per_unit: 1 / rate }))

/**
 * Seeds the demo hardware market through the write path, from `DEMO_HARDWARE_HISTORY_DAYS`
 * before today on a fresh store, else from the day after the last day seeded, through today.
 */
export const seedHardwareDemo = Effect.fn("Demo.seedHardware")(function* (today: number, historyDays = DEMO_HARDWARE_HISTORY_DAYS) {
  const ingest = yield* HardwarePriceIngest
  const reference = yield* ReferenceDataIngest
  const mark = yield* seedMark("demo_hardware_seeded_through", ingest.mark)
  const first = yield* mark.firstDay(today - historyDays)
  // A week per batch: one commit writes the pages a week of rows touch, most of them shared.
  for (let day = first; day <= today; day += 7) {
    const days = Array.from({ length: Math.min(7, today - day + 1) }, (_, i) => demoHardwareObservations(day + i))
    // Listings priced in other currencies convert at the week's rates; sending them again replaces them alike.
    yield* reference.fxRates(demoFxRates(day))
    // The week's mark goes with its last rows; a listing-day ingested again replaces its row with
    // the same one, so a seed killed part-way through a week sends the week again.
    yield* ingest.ingest(days.flat(), { mark: mark.through(day + days.length - 1) })
  }
})
