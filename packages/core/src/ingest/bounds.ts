import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import type { RecordIssue } from "../errors.js"

/**
 * Plausibility bounds of the write paths: a price outside its data type's range is refused with
 * the bound, not stored. They catch what the schema cannot: a sentinel published as a price
 * (99999999 for "no spot price"), a monthly price in an hourly unit, cents read as dollars.
 */

/** An inclusive range. */
export interface Bound {
  readonly min: number
  readonly max: number
}

/** The range each data type's price must fall in. */
export interface IngestBoundsConfig {
  /** Rental `price_usd_per_gpu_hour`, as computed from the raw price. */
  readonly rental: Bound
  /** Hardware `price_usd`, the price of the unit listed (a card, a server, a rack). */
  readonly hardware: Bound
  /** LLM `price_usd_per_1m_tokens` (0 is a free tier). */
  readonly llm: Bound
  /** Transaction `price_usd_per_gpu_hour` and `list_price_usd_per_gpu_hour`. */
  readonly transactions: Bound
}

/**
 * The defaults. Rental and transactions: 0.01 to 100 USD per GPU-hour; public catalogs list
 * 0.13 (an RTX 3070) to 7.99 (a B200 on demand), so the bounds leave 10× either way while a
 * 99999999 sentinel or a price per GPU-month read per hour (730×) falls out. Hardware: 10 to
 * 10,000,000 USD a unit, a rack of 72 GPUs included. LLM: 0 to 10,000 USD per 1M tokens.
 */
export const DEFAULT_INGEST_BOUNDS: IngestBoundsConfig = {
  rental: { min: 0.01, max: 100 },
  hardware: { min: 10, max: 10_000_000 },
  llm: { min: 0, max: 10_000 },
  transactions: { min: 0.01, max: 100 }
}

/** `overrides` over the defaults; throws a `RangeError` for a bound that is not `min ≤ max`, finite and not negative. */
export const ingestBounds = (overrides: Partial<IngestBoundsConfig> = {}): IngestBoundsConfig => {
  const bounds = { ...DEFAULT_INGEST_BOUNDS, ...overrides }
  for (const [type, { min, max }] of Object.entries(bounds)) {
    if (!(Number.isFinite(min) && Number.isFinite(max) && min >= 0 && min <= max)) {
      throw new RangeError(`bounds.${type}: expected finite 0 ≤ min ≤ max, got [${min}, ${max}]`)
    }
  }
  return bounds
}

/** The bounds the write paths check; `DEFAULT_INGEST_BOUNDS` unless a layer provides others. */
export class IngestBounds extends Context.Reference<IngestBounds>()("Market/IngestBounds", {
  defaultValue: (): IngestBoundsConfig => DEFAULT_INGEST_BOUNDS
}) {
  /** The bounds of `overrides` over the defaults (`ingestBounds`), for `marketLayer`'s write paths. */
  static readonly layer = (overrides: Partial<IngestBoundsConfig>): Layer.Layer<IngestBounds> =>
    Layer.sync(IngestBounds, () => ingestBounds(overrides))
}

/** Why `value` of `field` is refused, or undefined when it is within `bound`. */
export const outOfBounds = (field: string, value: number, bound: Bound): string | undefined =>
  value < bound.min || value > bound.max ? `${field}: ${value} is outside the plausible range [${bound.min}, ${bound.max}] (IngestBounds)` : undefined

/** The issues of the `values` of a batch that are outside `bound` (a null value has none). */
export const boundIssues = (
  values: Iterable<{ readonly index: number; readonly field: string; readonly value: number | null }>,
  bound: Bound
): Array<RecordIssue> => {
  const issues: Array<RecordIssue> = []
  for (const { index, field, value } of values) {
    const reason = value === null ? undefined : outOfBounds(field, value, bound)
    if (reason !== undefined) issues.push({ index, message: reason })
  }
  return issues
}
