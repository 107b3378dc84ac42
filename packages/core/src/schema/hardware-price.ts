import * as Schema from "effect/Schema"
import { parseDate } from "../query/time.js"
import { omittableNulls, withMeanings } from "./fields.js"
import {
  ClassSlug, HardwareMarket, type HardwareVocabularyField, hardwareVocabularyDefaults
} from "./hardware-vocabulary.js"
import type { HardwareTermField } from "./hardware-terms.js"
import { CurrencyCode } from "./price-unit.js"
import { GpuCanonicalName } from "./rental-price.js"

export { ClassSlug, HardwareMarket } from "./hardware-vocabulary.js"

/** Stable identity of one hardware listing across observed days (128 bits, lower-case hex). */
export const ListingKey = Schema.String.pipe(Schema.pattern(/^[0-9a-f]{32}$/), Schema.brand("ListingKey"))
export type ListingKey = typeof ListingKey.Type

/** A calendar date `YYYY-MM-DD` that exists. */
export const IsoDate = Schema.String.pipe(
  Schema.pattern(/^\d{4}-\d{2}-\d{2}$/),
  Schema.filter((s) => parseDate(s) !== undefined, { message: () => "expected a calendar date YYYY-MM-DD" }),
  Schema.brand("IsoDate")
)

/** `<listing_key>:<observed_date>`: one listing on one day. */
export const ObservationId = Schema.String.pipe(
  Schema.pattern(/^[0-9a-f]{32}:\d{4}-\d{2}-\d{2}$/),
  Schema.brand("ObservationId")
)

/** The observation id of a listing on a day. */
export const observationId = (listingKey: string, observedDate: string): string => `${listingKey}:${observedDate}`

/** An ISO 3166 alpha-2 code in upper case (its form; whether it is assigned is not checked). */
export const CountryCode = Schema.String.pipe(Schema.pattern(/^[A-Z]{2}$/))

/*
 * A descriptive field holds terms of its vocabulary (`hardware-terms.ts`), never a source's text:
 * ingest reads the text as terms and keeps those of the vocabulary, and stores written before are
 * rewritten to terms when they open. The row does not check the terms, so a row an older process
 * writes meanwhile still reads.
 */
const termsNote = (form: string) =>
  `terms of this field's vocabulary (GET /v2/gpu/hardware/prices/metadata lists them as data.vocabulary), each once, ${form}; ` +
  "a source's text that is no term is not stored"
const Terms = Schema.NullOr(Schema.String.pipe(Schema.minLength(1)).annotations({ description: termsNote('joined by ", "') }))
const TermList = Schema.NullOr(Schema.Array(Schema.String.pipe(Schema.minLength(1))).annotations({ description: termsNote("one per item") }))
/** A source's text for a descriptive field, as ingest takes it: read as terms, and anything else dropped and counted. */
const SourceText = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))
/** A value of the market's hardware vocabulary (`HardwareVocabulary`), which `/metadata` lists. */
const InVocabulary = Schema.NullOr(ClassSlug.annotations({
  description: "a value of the hardware vocabulary: GET /v2/gpu/hardware/prices/metadata lists the accepted values as data.vocabulary"
}))
const Amount = Schema.Number.pipe(Schema.finite(), Schema.nonNegative())
const Price = Schema.Number.pipe(Schema.finite(), Schema.positive())
const Count = Schema.Int.pipe(Schema.nonNegative())
const PositiveCount = Schema.Int.pipe(Schema.positive())

/*
 * The published fields of a hardware price row, in the spec's order, shared by the row and the
 * ingest record: they differ in identity, in the dates they accept and in what may be omitted.
 */
const listed = {
  price_amount: Schema.NullOr(Amount),
  currency: Schema.NullOr(CurrencyCode)
}
const described = {
  price_usd_low: Schema.NullOr(Price),
  price_usd_high: Schema.NullOr(Price),
  price_type: InVocabulary,
  price_per_gpu_system_attach: Schema.NullOr(Price),
  price_basis: InVocabulary,
  taxes_included: Schema.NullOr(Schema.Boolean),
  payment_terms: Terms,
  stock_status: InVocabulary,
  units_available: Schema.NullOr(Count),
  min_order_quantity: Schema.NullOr(PositiveCount),
  lead_time_weeks: Schema.NullOr(Amount),
  market: Schema.NullOr(HardwareMarket),
  channel: InVocabulary,
  source_type: InVocabulary,
  confidence: InVocabulary,
  counterparty_class: InVocabulary,
  transaction_level: InVocabulary,
  gpu_count_in_unit: Schema.NullOr(PositiveCount),
  includes_host_cpus: Schema.NullOr(Count),
  includes_dram_gb: Schema.NullOr(Amount),
  includes_storage_tb: Schema.NullOr(Amount),
  includes_nics: Terms,
  includes_nvswitch: Schema.NullOr(Schema.Boolean),
  includes_scaleout_fabric: Schema.NullOr(Schema.Boolean),
  includes_chassis_psu: Schema.NullOr(Schema.Boolean),
  includes_cooling_hw: Terms,
  software_entitlements: Terms,
  support_years: Schema.NullOr(Amount),
  warranty_months: Schema.NullOr(Amount),
  services_included: TermList,
  condition: InVocabulary,
  module_packaging: InVocabulary,
  unit_age_months: Schema.NullOr(Amount),
  unit_age_basis: InVocabulary,
  warranty_remaining_months: Schema.NullOr(Amount),
  hours_used: Schema.NullOr(Amount),
  warranty_transferable: Schema.NullOr(Schema.Boolean),
  firmware_region_lock: Schema.NullOr(Schema.Boolean),
  country: Schema.NullOr(CountryCode),
  country_group: InVocabulary,
  export_control_regime: InVocabulary
}

/**
 * One hardware listing on one day it was observed, with a USD price. Fields appear in the spec's
 * order; a value that is not published is `null`, never absent. No field names a seller.
 * `observed_date` is never null here: the row's id is made of it, and a window places the row by it.
 */
export class HardwarePriceRow extends Schema.Class<HardwarePriceRow>("HardwarePriceRow")(withMeanings({
  observation_id: ObservationId,
  listing_key: ListingKey,
  gpu_canonical_name: GpuCanonicalName,
  observed_date: IsoDate,
  listing_last_updated_date: Schema.NullOr(IsoDate),
  ...listed,
  price_usd: Price,
  ...described
}, {
  observation_id: "`<listing_key>:<observed_date>`: one listing on one day.",
  listing_key: "Stable listing identity across observed days.",
  gpu_canonical_name: "Catalog GPU slug.",
  observed_date: "Day of observation.",
  listing_last_updated_date: "When the seller last touched the listing.",
  price_amount: "Price as listed, in `currency`.",
  currency: "Currency of `price_amount`.",
  price_usd: "Price in USD; the only price used for ordering.",
  price_usd_low: "Lower bound, USD, where the listing gave a range.",
  price_usd_high: "Upper bound, USD, where the listing gave a range.",
  price_type: "Ask, sold or estimate.",
  price_per_gpu_system_attach: "Price per GPU where the unit is a system.",
  price_basis: "What one priced unit is.",
  taxes_included: "Whether the price includes tax.",
  payment_terms: "Terms the seller states.",
  stock_status: "Availability as stated.",
  units_available: "Units the seller holds.",
  min_order_quantity: "Smallest order accepted.",
  lead_time_weeks: "Quoted lead time in weeks.",
  market: "`primary` (new channel) or `secondary` (resale).",
  channel: "Channel class.",
  source_type: "Kind of source, never the source.",
  confidence: "Weight to give the observation.",
  counterparty_class: "Class of counterparty (dealer, OEM, end user), never an identity.",
  transaction_level: "Where in the chain the price sits (e.g. bare module, server, rack).",
  gpu_count_in_unit: "GPUs in the priced unit.",
  includes_host_cpus: "Count of host CPUs in the price, not a flag.",
  includes_dram_gb: "System DRAM included, GB.",
  includes_storage_tb: "Storage included, TB.",
  includes_nics: "NICs included, as described.",
  includes_nvswitch: "Whether NVSwitch is included.",
  includes_scaleout_fabric: "Whether a scale-out fabric is included.",
  includes_chassis_psu: "Whether the chassis and PSU are included.",
  includes_cooling_hw: "Cooling hardware included, as described.",
  software_entitlements: "Bundled software licences.",
  support_years: "Years of support included.",
  warranty_months: "Warranty length, months.",
  services_included: "Bundled services.",
  condition: "New, refurbished or used.",
  module_packaging: "How the GPU is packaged.",
  unit_age_months: "Unit age in months.",
  unit_age_basis: "How the age was established.",
  warranty_remaining_months: "Warranty remaining, months.",
  hours_used: "Reported hours on the unit.",
  warranty_transferable: "Whether the warranty transfers.",
  firmware_region_lock: "Whether the firmware is region-locked.",
  country: "ISO 3166 upper-case country code; a country, not a cloud region.",
  country_group: "Coarse grouping of countries (e.g. `north_america`, `europe`, `apac`).",
  export_control_regime: "Export-control regime of the unit."
})) {}

/** The row as plain data (what storage returns and what is serialised). */
export type HardwarePrice = Schema.Schema.Encoded<typeof HardwarePriceRow>

/** Field names of the hardware price row, in the spec's order. */
export const hardwarePriceFields = Object.keys(HardwarePriceRow.fields) as ReadonlyArray<keyof HardwarePrice>

/** The classification fields a caller filters on, whose values `/metadata` lists. */
export const hardwareClassFields = [
  "condition", "market", "channel", "transaction_level", "stock_status", "country", "country_group"
] as const
export type HardwareClassField = (typeof hardwareClassFields)[number]

/*
 * A vocabulary field of an ingest record is any text: whether it is in the vocabulary depends on
 * the market (`HardwareVocabulary`), so ingest checks it after decoding, naming the accepted values.
 */
const vocabularyInputs = Object.fromEntries(
  Object.keys(hardwareVocabularyDefaults).map((f) => [f, Schema.NullOr(Schema.String)])
) as { readonly [F in HardwareVocabularyField]: Schema.NullOr<typeof Schema.String> }

/** The descriptive fields of an ingest record: the source's text, which ingest reads as terms. */
const termInputs = {
  payment_terms: Schema.NullOr(SourceText),
  includes_nics: Schema.NullOr(SourceText),
  includes_cooling_hw: Schema.NullOr(SourceText),
  software_entitlements: Schema.NullOr(SourceText),
  services_included: Schema.NullOr(Schema.Array(SourceText).pipe(Schema.maxItems(50)))
} satisfies { readonly [F in HardwareTermField]: Schema.Schema.Any }

/** What an ingest record may leave out: null when it does. */
const nullable = {
  listing_last_updated_date: Schema.NullOr(Schema.String),
  ...listed,
  price_usd: Schema.NullOr(Price),
  ...described,
  ...vocabularyInputs,
  ...termInputs
}

/**
 * One listing observed on one day, as fed to `HardwarePriceIngest.ingest`. The descriptive fields
 * (`payment_terms`, ...) take the source's text, of which ingest keeps the vocabulary's terms. `listing_ref` is the
 * source's own reference to the listing (a listing id or URL): it only derives `listing_key` and
 * is never stored. `observed_date` and `listing_last_updated_date` take a date or an ISO 8601
 * datetime (its UTC date is kept). Fields that are not published may be omitted or null. The
 * price is `price_amount` in `currency` (converted to `price_usd` at the FX rate of the observed
 * date), or `price_usd`, or both when they agree; an observation with neither is refused.
 */
export const HardwarePriceObservation = Schema.Struct({
  listing_ref: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(2000)),
  gpu_canonical_name: GpuCanonicalName,
  observed_date: Schema.String,
  ...omittableNulls(nullable)
})
export type HardwarePriceObservation = Schema.Schema.Type<typeof HardwarePriceObservation>
export type HardwarePriceObservationInput = Schema.Schema.Encoded<typeof HardwarePriceObservation>

/**
 * `HardwarePriceObservation` with every field present (an omitted one filled with null first):
 * the same checks without per-field defaults, several times faster to decode.
 */
export const CompleteHardwarePriceObservation = Schema.Struct({
  listing_ref: HardwarePriceObservation.fields.listing_ref,
  gpu_canonical_name: GpuCanonicalName,
  observed_date: Schema.String,
  ...nullable
})
