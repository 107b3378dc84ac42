import * as Schema from "effect/Schema"
import { MetadataBody } from "./envelope.js"

const Values = Schema.Array(Schema.String)

/** One model in the LLM token price metadata. */
export const LlmModelEntry = Schema.Struct({
  model: Schema.String,
  model_family: Schema.NullOr(Schema.String),
  model_creator: Schema.NullOr(Schema.String),
  /** Every way a provider ever wrote the model (what `model_search` matches, with the slug). */
  model_name_variants: Values,
  /** Whether any provider publishes a price for it now. */
  currently_listed: Schema.Boolean,
  /** Every serving provider that ever priced it. */
  serving_providers: Values,
  /** Every price type it was ever priced by. */
  price_types: Values
})
export type LlmModelEntry = typeof LlmModelEntry.Type

/** How `is_price_outlier` is decided, stated as data so clients need not copy the rule. */
export const LlmOutlierRule = Schema.Struct({
  /** Rows are compared within these fields. */
  compared_within: Values,
  /** A price more than this many times above or below the reference is an outlier. */
  ratio: Schema.Number,
  /** Fewest serving providers a comparison needs; with fewer, nothing is flagged. */
  min_serving_providers: Schema.Int,
  /** Plain-language statement of the rule. */
  description: Schema.String
})
export type LlmOutlierRule = typeof LlmOutlierRule.Type

/** Body of `GET /v2/llm/token/prices/metadata`: every value the filters accept. */
export const LlmTokenPriceMetadata = MetadataBody("llm_token_prices", {
  /** Unit of `price_usd_per_1m_tokens`. */
  price_unit: Schema.Literal("usd_per_1m_tokens"),
  outlier_rule: LlmOutlierRule,
  models: Schema.Array(LlmModelEntry),
  serving_providers: Values,
  sources: Values,
  price_types: Values,
  regions: Values,
  metrics: Values,
  qualifiers: Values
})
export type LlmTokenPriceMetadata = typeof LlmTokenPriceMetadata.Type
