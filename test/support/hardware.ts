import {
  Auth, type Grant, HardwarePriceIngest, type HardwarePriceObservationInput, type HistoryAccess, marketLayer, type Principal,
  type PrincipalInput
} from "@gpu-market/core"
import { HardwarePriceStore } from "@gpu-market/core/storage"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Effect, Layer } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/**
 * A small, fully known hardware market in a real SQLite file, seeded day by day through the
 * write path. Its "now" is the rental fixture's (2026-06-15T12:00Z), so `http` and `atNow` of
 * ./market serve it too.
 */

const DAY_MS = 86_400_000
/** Day 0 of the hardware fixture: 2026-02-01; day 134 is 2026-06-15, "today". */
export const HW_DAY0_MS = Date.UTC(2026, 1, 1)
export const HW_LAST_DAY = 134
export const hwDate = (day: number) => new Date(HW_DAY0_MS + day * DAY_MS).toISOString().slice(0, 10)

export const HW_GPUS = ["h100-sxm", "h200-sxm", "a100-sxm-80gb", "l40s", "mi300x"] as const
const BASE = { "h100-sxm": 25_000, "h200-sxm": 32_000, "a100-sxm-80gb": 10_000, "l40s": 8_000, "mi300x": 15_000 } as const
export const HW_CONDITIONS = ["new_sealed", "refurbished", "used"] as const
export const HW_CHANNELS = ["var_reseller", "marketplace", "broker", "retailer"] as const
export const HW_LEVELS = ["bare_module", "server", "rack"] as const
export const HW_STOCK = ["in_stock", "limited", "backorder"] as const
export const HW_COUNTRIES = [["US", "north_america"], ["CA", "north_america"], ["DE", "europe"], ["GB", "europe"], ["JP", "apac"], ["SG", "apac"]] as const
export const HW_LISTINGS = 40

/** The source's reference of fixture listing `l`. */
export const listingRef = (l: number) => `fixture/listing-${l}`

/** The days listing `l` lives: it appears on `first`, is last seen by `last`, and skips every fifth day. */
export const listingDays = (l: number) => ({ first: (l * 7) % 30, last: l % 8 === 0 ? 60 + l : HW_LAST_DAY })
export const seenOn = (l: number, day: number) => {
  const { first, last } = listingDays(l)
  return day >= first && day <= last && (day + l) % 5 !== 0
}

/** The observation of listing `l` on `day`, if it was seen. Prices move in 250-dollar steps, so they tie often. */
export const hardwareObservation = (l: number, day: number): HardwarePriceObservationInput | undefined => {
  if (!seenOn(l, day)) return undefined
  const gpu = HW_GPUS[l % HW_GPUS.length]!
  const level = HW_LEVELS[l % 3]!
  const units = level === "bare_module" ? 1 : level === "server" ? 8 : 32
  const condition = l % 7 === 0 ? null : HW_CONDITIONS[l % 3]!
  const [country, country_group] = HW_COUNTRIES[l % HW_COUNTRIES.length]!
  const step = Math.floor((day + l) / 10) % 4
  const price = (BASE[gpu] + step * 250) * units * (condition === "used" ? 0.6 : 1)
  return {
    listing_ref: listingRef(l),
    gpu_canonical_name: gpu,
    observed_date: hwDate(day),
    price_usd: price,
    price_amount: price,
    currency: "USD",
    condition,
    market: condition === "new_sealed" ? "primary" : "secondary",
    channel: HW_CHANNELS[l % 4]!,
    transaction_level: level,
    stock_status: l % 5 === 0 ? null : HW_STOCK[(l + Math.floor(day / 20)) % 3]!,
    country,
    country_group,
    gpu_count_in_unit: units,
    includes_host_cpus: level === "bare_module" ? 0 : units / 4,
    includes_nvswitch: level === "bare_module" ? null : true,
    services_included: level === "rack" ? ["installation", "burn-in-testing"] : null,
    warranty_months: condition === "new_sealed" ? 36 : null
  }
}

/** Every observation of the fixture market on one day. */
export const observationsOn = (day: number): Array<HardwarePriceObservationInput> =>
  Array.from({ length: HW_LISTINGS }, (_, l) => hardwareObservation(l, day)).filter((o) => o !== undefined)

const principal = (id: string, grants: Principal["grants"]): Principal => ({
  id: id as Principal["id"], name: id, grants, indices: "all", legacy_custom_index: false, procurement: false,
  rate_limit_per_minute: 100_000
})
const hardware = (history: HistoryAccess): { gpu_hardware_prices: Grant } => ({ gpu_hardware_prices: { history } })

/** Fixture tokens: the secret is the key. */
export const HW_TOKENS = {
  "hw-all": principal("hw-all", hardware({ _tag: "unrestricted" })),
  "hw-other": principal("hw-other", hardware({ _tag: "unrestricted" })),
  "hw-current": principal("hw-current", hardware({ _tag: "none" })),
  "hw-since": principal("hw-since", hardware({ _tag: "since", date: "2026-05-01" })),
  "hw-rolling": principal("hw-rolling", hardware({ _tag: "rolling", days: 10 })),
  "hw-rental": principal("hw-rental", { gpu_rental_prices: { history: { _tag: "unrestricted" } } })
} as const

/** Seeds the fixture hardware market and its tokens through the write paths, on any storage. */
export const seed = Effect.gen(function* () {
  const ingest = yield* HardwarePriceIngest
  const auth = yield* Auth
  for (let day = 0; day <= HW_LAST_DAY; day++) yield* ingest.ingest(observationsOn(day))
  for (const [name, p] of Object.entries(HW_TOKENS)) yield* auth.issue(p, name)
})

/** A fresh SQLite file seeded with the fixture hardware market, and the market's services over it. */
export const hardwareLayer = (label = "hardware") => {
  const dir = mkdtempSync(join(tmpdir(), `gpu-market-${label}-`))
  return Layer.effectDiscard(seed).pipe(
    Layer.provideMerge(marketLayer),
    Layer.provideMerge(SqliteStorage.layer({ filename: join(dir, "market.db") }))
  )
}

/** The rows the fixture holds, as (listing, day) pairs, for stating expectations by hand. */
export const fixtureRows = (): Array<{ readonly listing: number; readonly day: number }> => {
  const out: Array<{ listing: number; day: number }> = []
  for (let day = 0; day <= HW_LAST_DAY; day++) for (let l = 0; l < HW_LISTINGS; l++) if (seenOn(l, day)) out.push({ listing: l, day })
  return out
}

export const HW = "/api/v2/gpu/hardware/prices"

/** An ingest summary's `droppedTerms` when every piece of descriptive text was a term. */
export const NO_DROPPED_TERMS = { payment_terms: 0, includes_nics: 0, includes_cooling_hw: 0, software_entitlements: 0, services_included: 0 }

/** Every row the hardware store holds, oldest day first, read from the store itself. */
export const storedRows = Effect.flatMap(HardwarePriceStore, (s) => s.page({
  scope: { _tag: "window", start: "2000-01-01T00:00:00.000000Z", end: "2100-01-01T00:00:00.000000Z" },
  predicates: [], sort: { by: "observed_date", order: "asc" }, after: undefined, limit: 10_000
}))

/** One listing observed on one day, with every classification the vocabulary needs; `over` changes or adds fields. */
export const listingObservation = (over: Partial<HardwarePriceObservationInput> & Record<string, unknown> = {}): HardwarePriceObservationInput => ({
  listing_ref: "feed/listing-1", gpu_canonical_name: "h100-sxm", observed_date: "2026-06-01", price_usd: 25_000,
  condition: "new_sealed", market: "primary", channel: "var_reseller", transaction_level: "bare_module", country: "US",
  country_group: "north_america", ...over
})

/** A principal that reads every hardware price, its whole history. */
export const hardwareReader: PrincipalInput = {
  id: "reader", name: "reader", grants: { gpu_hardware_prices: { history: { _tag: "unrestricted" } } },
  indices: "all", legacy_custom_index: false, procurement: false, rate_limit_per_minute: 100_000
}
