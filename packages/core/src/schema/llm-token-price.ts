import * as Schema from "effect/Schema"
import { omittableNulls, optionalNull } from "./fields.js"
import { versionValidity } from "./versioned.js"

const slug = (brand: string) =>
  Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,99}$/), Schema.brand(brand))

/** Where a price was read, e.g. `provider-pricing-page` or `openrouter`. */
export const LlmPriceSource = slug("LlmPriceSource")
/** A canonical model slug, e.g. `llama-3.1-70b-instruct`. */
export const LlmModel = slug("LlmModel")
/** A serving provider slug, e.g. `together`. */
export const ServingProvider = slug("ServingProvider")
/** Identity hash shared by every version of one published price across price changes. */
export const BasePriceKey = Schema.String.pipe(Schema.pattern(/^[0-9a-f]{32}$/), Schema.brand("BasePriceKey"))
/** Snapshot identity hash of one exact version (identity, time, price). */
export const PriceKey = Schema.String.pipe(Schema.pattern(/^[0-9a-f]{32}$/), Schema.brand("PriceKey"))

/** A lower-case slug for classification values (`price_type`, `region`, `metric`, families, creators). */
const Slug = Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,99}$/))
/**
 * Qualifiers refine a price within its price type, e.g. a context-length tier `context_gt_128k`.
 * Several are joined with `;` in sorted order, so one set of qualifiers has one spelling.
 */
export const Qualifiers = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,99}(;[a-z0-9][a-z0-9._-]{0,99}){0,9}$/),
  Schema.filter((s) => {
    const parts = s.split(";")
    return parts.every((p, i) => i === 0 || parts[i - 1]! < p) || "qualifiers must be sorted and distinct"
  })
)
/** ISO 4217 currency code, upper case. */
export const Currency = Schema.String.pipe(Schema.pattern(/^[A-Z]{3}$/))

const Text = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))
/** A price: 0 is a real one (a free model or tier), a negative one is not. */
const Price = Schema.Number.pipe(Schema.nonNegative(), Schema.finite())

/** The region of a price that applies everywhere the provider serves. */
export const GLOBAL_REGION = "global"

/*
 * The published fields of an LLM token price, in order, shared by the row and the ingest
 * observation: the row adds the outlier flag, its validity and keys.
 */
const published = {
  source: LlmPriceSource,
  model: LlmModel,
  /** The model as the provider writes it. */
  model_name: Text,
  model_family: Schema.NullOr(Slug),
  model_creator: Schema.NullOr(Slug),
  serving_provider: ServingProvider,
  /** `input`, `output`, `cached_input`, `cache_write`, `batch_input`, `batch_output`, … */
  price_type: Slug,
  /** Normalised region; `global` when the price applies everywhere. */
  region: Slug,
  /** What is counted: `tokens` (text), `image_tokens`, `audio_tokens`, … */
  metric: Slug,
  /** `null` when the price carries no qualifier. */
  qualifiers: Schema.NullOr(Qualifiers),
  price_usd_per_1m_tokens: Price,
  /** The price as published, in `raw_price_unit`. */
  raw_price: Price,
  /** e.g. `usd_per_1m_tokens`, `usd_per_1k_tokens`, `eur_per_1m_tokens`. */
  raw_price_unit: Slug,
  /** Currency of `raw_price`. */
  currency: Currency
}

/**
 * One published LLM inference price, normalised to USD per 1M tokens. Source, model, serving
 * provider, price type, region, metric and qualifiers identify the priced thing; a price change
 * produces a new row and closes the old one with `valid_to`. A value not published is `null`.
 */
export class LlmTokenPriceRow extends Schema.Class<LlmTokenPriceRow>("LlmTokenPriceRow")({
  ...published,
  /** Whether the price was implausible against the market when the row opened; never changes. */
  is_price_outlier: Schema.Boolean,
  ...versionValidity,
  base_price_key: BasePriceKey,
  price_key: PriceKey
}) {}

/** The row as plain data (what storage returns and what is serialised). */
export type LlmTokenPrice = Schema.Schema.Encoded<typeof LlmTokenPriceRow>

/** Field names of the LLM token price row, in order. */
export const llmTokenPriceFields = Object.keys(LlmTokenPriceRow.fields) as ReadonlyArray<keyof LlmTokenPrice>

/** Qualifiers as fed to ingest: any order, duplicates allowed; stored sorted and distinct. */
const QualifiersInput = Schema.transform(
  Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,99}(;[a-z0-9][a-z0-9._-]{0,99}){0,9}$/)),
  Qualifiers,
  { strict: true, decode: (s) => [...new Set(s.split(";"))].sort().join(";"), encode: (s) => s }
)

/**
 * One published price as fed to `ingest`. Keys, validity and the outlier flag are derived;
 * `region` defaults to `global`, `metric` to `tokens`, the rest of the optional fields to null.
 * Unknown fields are refused.
 */
export const LlmTokenPriceObservation = Schema.Struct({
  ...omittableNulls(published),
  // Ingest defaults: each replaces the published field where it stands, so the order is the row's.
  region: Schema.optionalWith(Slug, { default: () => GLOBAL_REGION }),
  metric: Schema.optionalWith(Slug, { default: () => "tokens" }),
  qualifiers: optionalNull(QualifiersInput),
  /** ISO 8601 datetime of extraction; becomes `valid_from` when the price changed. */
  extracted_at: Schema.String
})
export type LlmTokenPriceObservation = Schema.Schema.Type<typeof LlmTokenPriceObservation>
export type LlmTokenPriceObservationInput = Schema.Schema.Encoded<typeof LlmTokenPriceObservation>
