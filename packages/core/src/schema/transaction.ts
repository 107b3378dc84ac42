import * as Schema from "effect/Schema"
import { parseDate } from "../query/time.js"
import { MetadataBody } from "./envelope.js"
import { optionalNull, withMeanings } from "./fields.js"
import { GpuCanonicalName } from "./rental-price.js"

/**
 * GPU rental aggregated transactions: published, volume-weighted blends of at least two settled
 * deals. Deals themselves are private input and never served.
 */

const Text = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))
const PositiveInt = Schema.Int.pipe(Schema.positive())
const PositiveNumber = Schema.Number.pipe(Schema.positive(), Schema.finite())

/** A coarse trading group (not a cloud region), e.g. `north_america`. */
export const RegionGroup = Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,99}$/), Schema.brand("RegionGroup"))
/** A contract type slug, e.g. `reserved`. */
export const TransactionContractType = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,99}$/),
  Schema.brand("TransactionContractType")
)
/** A contract's tenor in whole days (at most ten years). */
export const TenorDays = Schema.Int.pipe(Schema.between(1, 3650))
/** A calendar date `YYYY-MM-DD` that exists. */
export const TransactionDate = Schema.String.pipe(
  Schema.pattern(/^\d{4}-\d{2}-\d{2}$/),
  Schema.filter((s) => parseDate(s) !== undefined, { message: () => "expected an existing YYYY-MM-DD date" }),
  Schema.brand("TransactionDate")
)
/**
 * A published row's identity: `<series>-<n>`, the 32-hex series id and the row's 8-digit
 * position in its series' publication order.
 */
export const TransactionRowKey = Schema.String.pipe(Schema.pattern(/^[0-9a-f]{32}-\d{8}$/), Schema.brand("TransactionRowKey"))
/** A private deal identifier, as the venue that settled it assigned it. */
export const DealId = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$/), Schema.brand("DealId"))

/**
 * What was combined to make a row. `none`: deals of one GPU, region group, contract type,
 * tenor and day. `tenor`: two deals of one GPU, region group, contract type and day with
 * different tenors (`tenor_days` the shorter, `blend_tenor_days` the longer). `region_group`:
 * two deals of one GPU, contract type, tenor and day in different region groups
 * (`region_group` and `blend_region_group` in alphabetical order).
 */
export const BlendAxis = Schema.Literal("none", "tenor", "region_group")
export type BlendAxis = typeof BlendAxis.Type

/**
 * One published blend, fields in the spec's order. Only `discount_percentage` may be null
 * (some blended deal came without a list price); every other field is always published.
 */
export class TransactionRow extends Schema.Class<TransactionRow>("TransactionRow")(withMeanings({
  gpu_model: Text,
  gpu_canonical_name: GpuCanonicalName,
  region_group: RegionGroup,
  contract_type: TransactionContractType,
  tenor_days: TenorDays,
  /** Σ(price × GPU-hours) / Σ GPU-hours over the blended deals, rounded to 1e-6 USD. */
  price_usd_per_gpu_hour: PositiveNumber,
  total_gpu_count: PositiveInt,
  total_gpu_hours: PositiveNumber,
  transaction_date: TransactionDate,
  /** 100 × (1 − Σ(price × GPU-hours) / Σ(list price × GPU-hours)); negative above list. */
  discount_percentage: Schema.NullOr(Schema.Number.pipe(Schema.finite(), Schema.lessThan(100))),
  /** Shares deals with the row before it in its series (see `row_key`). */
  is_rolling: Schema.Boolean,
  blend_axis: BlendAxis,
  blend_tenor_days: TenorDays,
  blend_region_group: RegionGroup,
  row_key: TransactionRowKey
}, {
  gpu_model: "GPU model.",
  gpu_canonical_name: "Catalog GPU slug.",
  region_group: "Coarse trading group, not a cloud region.",
  contract_type: "Contract type.",
  tenor_days: "Tenor in days.",
  price_usd_per_gpu_hour: "The only price figure, USD per GPU-hour, volume-weighted over the blended deals; no median, range or spread exists.",
  total_gpu_count: "GPUs in the blend. Never sum it across rows: rolling rows double-count deals.",
  total_gpu_hours: "GPU-hours in the blend. Never sum it across rows: rolling rows double-count deals.",
  transaction_date: "Date of the blend.",
  discount_percentage: "Discount percentage against list price (negative above list); null when a blended deal had no list price.",
  is_rolling: "True when the row shares a deal with the row before it.",
  blend_axis: "What was combined to make the row: `none`, `tenor` or `region_group`.",
  blend_tenor_days: "Tenor blended over, in days.",
  blend_region_group: "Region group blended over.",
  row_key: "Row identifier."
})) {}

/** A published row as plain data (what storage returns and what is serialised). */
export type AggregatedTransaction = Schema.Schema.Encoded<typeof TransactionRow>

/** Field names of the aggregated transaction row, in the spec's order. */
export const transactionFields = Object.keys(TransactionRow.fields) as ReadonlyArray<keyof AggregatedTransaction>

/**
 * One settled rental deal, as fed to `TransactionIngest.record`. Private: deals are stored
 * apart from published rows and never served. Give the list price or the discount off it (not
 * both), or neither when no list price is known. Unknown fields are refused.
 */
export const TransactionDeal = Schema.Struct({
  deal_id: DealId,
  gpu_canonical_name: GpuCanonicalName,
  gpu_model: Text,
  region_group: RegionGroup,
  contract_type: TransactionContractType,
  tenor_days: TenorDays,
  gpu_count: PositiveInt,
  /** GPU-hours bought; at most `gpu_count × tenor_days × 24`. */
  gpu_hours: PositiveNumber,
  price_usd_per_gpu_hour: PositiveNumber,
  list_price_usd_per_gpu_hour: optionalNull(PositiveNumber),
  /** Percent off the list price; becomes `list = price / (1 − discount / 100)`. */
  discount_percentage: optionalNull(Schema.Number.pipe(Schema.finite(), Schema.greaterThan(-1000), Schema.lessThan(100))),
  settlement_date: TransactionDate
})
export type TransactionDeal = Schema.Schema.Type<typeof TransactionDeal>
export type TransactionDealInput = Schema.Schema.Encoded<typeof TransactionDeal>

/** One GPU's coverage in the transaction metadata. */
export const TransactionGpuCoverage = Schema.Struct({
  gpu_canonical_name: Schema.String,
  gpu_model: Schema.String,
  first_transaction_date: Schema.String,
  last_transaction_date: Schema.String,
  /** Published rows, rolling ones included. */
  rows: Schema.Int
})
export type TransactionGpuCoverage = typeof TransactionGpuCoverage.Type

/** Body of `GET /v2/gpu/rental/transactions/aggregated/metadata`. */
export const TransactionMetadata = MetadataBody("gpu_rental_transactions", {
  region_groups: Schema.Array(Schema.String),
  contract_types: Schema.Array(Schema.String),
  /** Tenors in days. */
  tenors: Schema.Array(Schema.Int),
  /** The value set of `blend_axis`. */
  blend_axes: Schema.Array(BlendAxis),
  gpus: Schema.Array(TransactionGpuCoverage)
})
export type TransactionMetadata = typeof TransactionMetadata.Type
