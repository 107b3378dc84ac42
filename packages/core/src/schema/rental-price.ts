import * as Schema from "effect/Schema"
import { omittableNulls, optionalNull, withMeanings } from "./fields.js"
import { CurrencyCode, RawPriceUnit } from "./price-unit.js"
import { versionValidity } from "./versioned.js"

/** A vendor slug, e.g. `lambda`. */
export const VendorSlug = Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9._-]*$/), Schema.brand("VendorSlug"))
/** A catalog GPU slug, e.g. `h100-sxm`. */
export const GpuCanonicalName = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9][a-z0-9._-]*$/),
  Schema.brand("GpuCanonicalName")
)
/** Identity hash shared by every observation of one priced thing across price changes. */
export const BaseProductKey = Schema.String.pipe(Schema.pattern(/^[0-9a-f]{32}$/), Schema.brand("BaseProductKey"))
/** Snapshot identity hash of one exact observation (identity, time, price). */
export const ProductKey = Schema.String.pipe(Schema.pattern(/^[0-9a-f]{32}$/), Schema.brand("ProductKey"))

const Text = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))
const PositiveInt = Schema.Int.pipe(Schema.positive())
const PositiveNumber = Schema.Number.pipe(Schema.positive(), Schema.finite())

/*
 * The published fields of a rental price, in the spec's order, shared by the row and the ingest
 * observation: the row adds its validity and keys, the observation may leave a null one out.
 */
const published = {
  vendor: VendorSlug,
  vendor_gpu_name: Text,
  vendor_sku: Schema.NullOr(Text),
  vendor_region: Schema.NullOr(Text),
  region: Text,
  gpu_canonical_name: GpuCanonicalName,
  gpu_manufacturer: Text,
  gpu_model: Text,
  gpu_count: PositiveInt,
  gpu_memory_gb: PositiveNumber,
  vcpu: Schema.NullOr(PositiveInt),
  ram_gb: Schema.NullOr(PositiveNumber),
  os: Schema.NullOr(Text),
  form_factor: Schema.NullOr(Text),
  interconnect: Schema.NullOr(Text),
  instance_type: Schema.NullOr(Text),
  instance_variant: Schema.NullOr(Text),
  contract_type: Text,
  contract_term: Schema.NullOr(Text),
  contract_details: Schema.NullOr(Text),
  availability: Schema.NullOr(Text),
  price_usd_per_gpu_hour: PositiveNumber,
  raw_price: PositiveNumber,
  raw_price_unit: Text
}

/**
 * One vendor's price for one rentable product, normalised to USD per GPU-hour. A price change
 * produces a new row; the old one gets its `valid_to`. Fields appear in the spec's order, and a
 * value that is not published is `null`, never absent.
 */
export class RentalPriceRow extends Schema.Class<RentalPriceRow>("RentalPriceRow")(withMeanings({
  ...published,
  ...versionValidity,
  base_product_key: BaseProductKey,
  product_key: ProductKey
}, {
  vendor: "Vendor slug.",
  vendor_gpu_name: "GPU name as the vendor writes it.",
  vendor_sku: "Vendor SKU.",
  vendor_region: "Vendor's own region label.",
  region: "Normalised cloud region.",
  gpu_canonical_name: "Catalog GPU slug.",
  gpu_manufacturer: "GPU manufacturer.",
  gpu_model: "GPU model.",
  gpu_count: "GPUs in the product.",
  gpu_memory_gb: "GPU memory, GB.",
  vcpu: "Virtual CPUs.",
  ram_gb: "RAM, GB.",
  os: "Operating system (a product descriptor).",
  form_factor: "Form factor (a product descriptor).",
  interconnect: "GPU interconnect (a product descriptor).",
  instance_type: "Instance type (a product descriptor).",
  instance_variant: "Instance variant (a product descriptor).",
  contract_type: "Contract type, e.g. `ondemand`, `spot`.",
  contract_term: "Contract term text.",
  contract_details: "Contract details text.",
  availability: "Availability status, e.g. `available`.",
  price_usd_per_gpu_hour: "Normalised price in USD per GPU-hour; use this to compare vendors.",
  raw_price: "Price as the vendor published it, in `raw_price_unit`.",
  raw_price_unit: "Unit of `raw_price`.",
  valid_from: "Start of validity (UTC).",
  valid_to: "End of validity (UTC); null while the row is current.",
  extracted_at: "When the price was extracted (UTC).",
  base_product_key: "Identity hash: every observation of one priced thing across price changes.",
  product_key: "Snapshot identity hash: one exact observation (identity, time, price)."
})) {}

/** The row as plain data (what storage returns and what is serialised). */
export type RentalPrice = Schema.Schema.Encoded<typeof RentalPriceRow>

/** Field names of the rental price row, in the spec's order. */
export const rentalPriceFields = Object.keys(RentalPriceRow.fields) as ReadonlyArray<keyof RentalPrice>

/**
 * One vendor price observation, as fed to `ingest`: what the vendor publishes. Keys and validity
 * are derived; fields that are not published may be omitted or null. Unknown fields are refused.
 *
 * The write path completes it: `price_usd_per_gpu_hour` is computed from `raw_price`,
 * `raw_price_unit` (a `RawPriceUnit`), `gpu_count` and the FX rate of the unit's currency on the
 * UTC date of `extracted_at` (a given value must agree at 4 decimals), and the GPU
 * (`gpu_canonical_name`, `gpu_manufacturer`, `gpu_model`, `gpu_memory_gb`) is resolved from
 * `vendor_gpu_name` through the GPU catalog (a given slug must be one the spelling names; given
 * fields win over the catalog's).
 */
export const RentalPriceObservation = Schema.Struct({
  ...omittableNulls(published),
  gpu_canonical_name: optionalNull(GpuCanonicalName),
  gpu_manufacturer: optionalNull(Text),
  gpu_model: optionalNull(Text),
  /** Memory of one GPU, GB; also tells apart catalog variants sharing a spelling (an `A100` of 40 or 80 GB). */
  gpu_memory_gb: optionalNull(PositiveNumber),
  price_usd_per_gpu_hour: optionalNull(PositiveNumber),
  raw_price_unit: RawPriceUnit,
  /** ISO 4217 code of the price's currency: when given, it must be the unit's. */
  currency: optionalNull(CurrencyCode),
  /** ISO 8601 datetime of extraction; becomes `valid_from` when the price changed. */
  extracted_at: Schema.String
})
export type RentalPriceObservation = Schema.Schema.Type<typeof RentalPriceObservation>
export type RentalPriceObservationInput = Schema.Schema.Encoded<typeof RentalPriceObservation>
