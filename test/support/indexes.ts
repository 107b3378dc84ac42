import {
  Auth, baseProductKey, type FleetWeight, type HistoryAccess, type IndexDefinitionInput, IndexIngest, marketLayer, type Principal, RentalPriceIngest, type RentalPriceObservationInput
} from "@gpu-market/core"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Effect, Layer, TestClock } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/**
 * A small rental market whose index values are computed by hand in the tests, in a real SQLite
 * file seeded through the write paths, with definitions, fleet weights, administered values and
 * tokens. Calls go through `http` of ./market (the adapter's app in-process, under TestClock).
 */

/** The fixture's "now": 2026-06-15T12:10:00Z. */
export const INDEX_NOW_MS = Date.UTC(2026, 5, 15, 12, 10)
export const atIndexNow = TestClock.setTime(INDEX_NOW_MS)

const at = (iso: string) => `${iso}:00Z`

/** One on-demand product unless `contract_type` says otherwise, first seen on 2026-06-01. */
const product = (vendor: string, gpu: "h100-sxm" | "a100-sxm-80gb", sku: string, region: string, price: number, extra: Partial<RentalPriceObservationInput> = {}): RentalPriceObservationInput => ({
  vendor, vendor_gpu_name: gpu === "h100-sxm" ? "H100 SXM" : "A100 SXM 80GB", vendor_sku: sku, region,
  gpu_canonical_name: gpu, gpu_manufacturer: "nvidia", gpu_model: gpu === "h100-sxm" ? "H100" : "A100", gpu_count: 1,
  gpu_memory_gb: 80, contract_type: "ondemand", price_usd_per_gpu_hour: price, raw_price: price, raw_price_unit: "usd_per_instance_hour",
  extracted_at: at("2026-06-01T00:00"), ...extra
})

/**
 * The market. H100 in North America: va lists 2.00 and 3.00 (median 2.50), vb 2.80 until it is
 * withdrawn at 2026-06-13T00:00, vc 4.00 until 2026-06-10T10:15 and 3.00 after. Outside it: vd
 * 1.00 in eu-west, and a va spot price (not on demand). A100 in North America: va 1.20, vb 1.40,
 * vc 1.00 and 1.60 (median 1.30).
 */
export const FIXTURE_PRODUCTS: ReadonlyArray<RentalPriceObservationInput> = [
  product("va", "h100-sxm", "h100-1x", "us-east", 2),
  product("va", "h100-sxm", "h100-8x", "us-east", 3, { gpu_count: 8, raw_price: 24 }),
  product("vb", "h100-sxm", "h100-1x", "us-west", 2.8),
  product("vc", "h100-sxm", "h100-1x", "us-east", 4),
  product("vd", "h100-sxm", "h100-1x", "eu-west", 1),
  product("va", "h100-sxm", "h100-spot", "us-east", 1, { contract_type: "spot" }),
  product("va", "a100-sxm-80gb", "a100-1x", "us-east", 1.2),
  product("vb", "a100-sxm-80gb", "a100-1x", "us-west", 1.4),
  product("vc", "a100-sxm-80gb", "a100-a", "us-east", 1),
  product("vc", "a100-sxm-80gb", "a100-b", "us-east", 1.6)
]
export const VC_CHANGE = at("2026-06-10T10:15")
export const VB_WITHDRAWN = at("2026-06-13T00:00")

const NA = ["us-east", "us-central", "us-west"]

const definition = (
  id: string,
  row_type: "daily" | "intraday",
  inputs: IndexDefinitionInput["inputs"],
  over: Partial<IndexDefinitionInput> = {}
): IndexDefinitionInput => ({
  id, index_type: inputs.kind === "reference" ? "reference_price" : "gpu_rental_price", row_type, asset: "gpu_compute_rental",
  tenor: "on_demand", publication: row_type === "daily" ? "end_of_utc_day" : "end_of_30_minute_interval",
  interval: row_type === "daily" ? "P1D" : "PT30M", title: `Index ${id}`, description: `Test index ${id}.`, gpu_family: "H100",
  gpu_group: "h100-sxm", region_group: "na", contract_type: "ondemand", vendor_category: "all",
  source: inputs.kind === "administered" ? "administered" : "computed", gpu_model: "h100-sxm", inputs, ...over
})

const rental = (gpu: string, starts_at: string, regions: ReadonlyArray<string> | null, vendors: ReadonlyArray<string> | null = null) =>
  ({ kind: "rental", starts_at, gpus: [gpu], contract_types: ["ondemand"], regions, vendors }) as const

const a100 = { gpu_family: "A100", gpu_group: "a100-sxm-80gb", gpu_model: "a100-sxm-80gb" }

export const FIXTURE_DEFINITIONS: ReadonlyArray<IndexDefinitionInput> = [
  definition("h100-na-daily", "daily", rental("h100-sxm", "2026-06-01", NA)),
  definition("h100-na-intraday", "intraday", rental("h100-sxm", "2026-06-10", NA)),
  definition("a100-na-daily", "daily", rental("a100-sxm-80gb", "2026-06-01", NA), a100),
  definition("a100-na-intraday", "intraday", rental("a100-sxm-80gb", "2026-06-10", NA), a100),
  definition("h100-global-daily", "daily", rental("h100-sxm", "2026-06-01", null), { region_group: "global" }),
  definition("h100-neo-daily", "daily", rental("h100-sxm", "2026-06-01", null, ["vc", "vd"]), { region_group: "global", vendor_category: "neocloud" }),
  definition("h100-west-daily", "daily", rental("h100-sxm", "2026-06-01", ["us-west"]), { region_group: "us-west" }),
  definition("ref-daily", "daily", { kind: "reference", starts_at: "2026-06-01", components: ["h100-na-daily", "a100-na-daily"] },
    { gpu_family: "all", gpu_group: "fleet", gpu_model: null }),
  definition("ref-intraday", "intraday", { kind: "reference", starts_at: "2026-06-10", components: ["h100-na-intraday", "a100-na-intraday"] },
    { gpu_family: "all", gpu_group: "fleet", gpu_model: null }),
  definition("adm-daily", "daily", { kind: "administered", administrator: "Example Administrator" }, { region_group: "global" })
]

/** H100 weighs 3 until 2026-06-08 and 1 after; A100 weighs 1 throughout. */
export const FIXTURE_WEIGHTS: ReadonlyArray<FleetWeight> = [
  { gpu_canonical_name: "h100-sxm", weight: 3, valid_from: "2026-06-01T00:00:00.000000Z", valid_to: "2026-06-08T00:00:00.000000Z" },
  { gpu_canonical_name: "h100-sxm", weight: 1, valid_from: "2026-06-08T00:00:00.000000Z", valid_to: null },
  { gpu_canonical_name: "a100-sxm-80gb", weight: 1, valid_from: "2026-06-01T00:00:00.000000Z", valid_to: null }
]

/** The administered index's published value of a June day: 2.0 + day / 100. */
export const administeredValue = (day: number) => 2 + day / 100
/** June days the administrator published: the 1st to the 14th, except the 7th. */
export const ADMINISTERED_DAYS = [1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14]

const principal = (id: string, history: HistoryAccess, over: Partial<Principal> = {}): Principal => ({
  id: id as Principal["id"], name: id, grants: { gpu_rental_indexes: { history } }, indices: "all", legacy_custom_index: true,
  procurement: false, rate_limit_per_minute: 100_000, ...over
})

/** Fixture tokens: the secret is the key. */
export const INDEX_TOKENS = {
  all: principal("i-all", { _tag: "unrestricted" }),
  held: principal("i-held", { _tag: "unrestricted" }, { indices: ["h100-na-daily", "h100-na-intraday"] }),
  dailyOnly: principal("i-daily-only", { _tag: "unrestricted" }, { indices: ["a100-na-daily"] }),
  none: principal("i-none", { _tag: "unrestricted" }, { indices: [] }),
  current: principal("i-current", { _tag: "none" }),
  since: principal("i-since", { _tag: "since", date: "2026-06-05" }),
  rolling: principal("i-rolling", { _tag: "rolling", days: 3 }),
  noLegacy: principal("i-no-legacy", { _tag: "unrestricted" }, { legacy_custom_index: false }),
  rentalOnly: { ...principal("i-rental", { _tag: "unrestricted" }), grants: { gpu_rental_prices: { history: { _tag: "unrestricted" } } } }
} as const satisfies Record<string, Principal>
export type IndexTokenName = keyof typeof INDEX_TOKENS

/**
 * The fixture market and indices through the write paths, without tokens (for a market that
 * issues its own: these token secrets are the rental fixture's too). Leaves the clock at the
 * fixture's "now", when the definitions computed what was due.
 */
export const seedIndexes = Effect.gen(function* () {
  yield* atIndexNow
  const rentalIngest = yield* RentalPriceIngest
  const indexes = yield* IndexIngest
  yield* rentalIngest.ingest(FIXTURE_PRODUCTS)
  yield* rentalIngest.ingest([{ ...FIXTURE_PRODUCTS[3]!, price_usd_per_gpu_hour: 3, raw_price: 3, extracted_at: VC_CHANGE }])
  const vb = FIXTURE_PRODUCTS[2]!
  yield* rentalIngest.withdraw([baseProductKey({
    vendor_sku: null, vendor_region: null, instance_type: null, instance_variant: null, os: null, contract_term: null, ...vb
  })], VB_WITHDRAWN)
  yield* indexes.setFleetWeights(FIXTURE_WEIGHTS)
  yield* indexes.define(FIXTURE_DEFINITIONS)
  yield* indexes.publish(ADMINISTERED_DAYS.map((day) => ({
    id: "adm-daily", timestamp: `2026-06-${String(day).padStart(2, "0")}`, value: administeredValue(day)
  })))
})

/** Seeds the fixture market, indices and tokens through the write paths, on any storage. */
export const seed = Effect.gen(function* () {
  const auth = yield* Auth
  yield* seedIndexes
  for (const [name, p] of Object.entries(INDEX_TOKENS)) yield* auth.issue(p, name)
})

/** A fresh SQLite file with the fixture market, indices and tokens, and the market's services over it. */
export const indexFixtureLayer = (label = "indexes") => {
  const dir = mkdtempSync(join(tmpdir(), `gpu-market-${label}-`))
  return Layer.effectDiscard(seed).pipe(
    Layer.provideMerge(marketLayer),
    Layer.provideMerge(SqliteStorage.layer({ filename: join(dir, "market.db") }))
  )
}
