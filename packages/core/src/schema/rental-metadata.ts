import * as Schema from "effect/Schema"
import { MetadataBody } from "./envelope.js"

/** One GPU in the rental price metadata. */
export const RentalGpuEntry = Schema.Struct({
  gpu_canonical_name: Schema.String,
  gpu_manufacturer: Schema.String,
  /** Every spelling vendors ever used for this GPU (what `gpu_search` matches against). */
  gpu_model_variants: Schema.Array(Schema.String),
  /** Whether any vendor lists it now. */
  currently_listed: Schema.Boolean,
  /** Every vendor that has listed it. */
  vendors: Schema.Array(Schema.String)
})
export type RentalGpuEntry = typeof RentalGpuEntry.Type

/** Body of `GET /v2/gpu/rental/prices/metadata`. */
export const RentalPriceMetadata = MetadataBody("gpu_rental_prices", {
  anchors: Schema.Array(Schema.String),
  gpus: Schema.Array(RentalGpuEntry)
})
export type RentalPriceMetadata = typeof RentalPriceMetadata.Type
