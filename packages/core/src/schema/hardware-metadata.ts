import * as Schema from "effect/Schema"
import { MetadataBody } from "./envelope.js"
import { HardwareVocabularyValues } from "./hardware-vocabulary.js"

/** Coverage of one GPU in the hardware price metadata. */
export const HardwareGpuEntry = Schema.Struct({
  gpu_canonical_name: Schema.String,
  /** First and last day any listing of this GPU was observed with a price. */
  first_observed: Schema.String,
  last_observed: Schema.String,
  /** Distinct listings ever observed. */
  listings: Schema.Int,
  /** Listing-days observed. */
  observations: Schema.Int
})
export type HardwareGpuEntry = typeof HardwareGpuEntry.Type

/** The values each classification filter matches (values seen in stored rows). */
export const HardwareFilterValues = Schema.Struct({
  condition: Schema.Array(Schema.String),
  market: Schema.Array(Schema.String),
  channel: Schema.Array(Schema.String),
  transaction_level: Schema.Array(Schema.String),
  stock_status: Schema.Array(Schema.String),
  country: Schema.Array(Schema.String),
  country_group: Schema.Array(Schema.String)
})

/**
 * Body of `GET /v2/gpu/hardware/prices/metadata`: `filters` are the values stored rows hold,
 * `vocabulary` every value ingest accepts per classification field. No seller identity appears in it.
 */
export const HardwarePriceMetadata = MetadataBody("gpu_hardware_prices", {
  filters: HardwareFilterValues,
  vocabulary: HardwareVocabularyValues,
  gpus: Schema.Array(HardwareGpuEntry)
})
export type HardwarePriceMetadata = typeof HardwarePriceMetadata.Type
