import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { LlmTokenPrice } from "../schema/llm-token-price.js"
import type { StorageConflict, StorageError } from "./errors.js"
import type { PagePlan } from "./plan.js"

/** A change to the LLM token price table: close current rows and open new ones, all or nothing. */
export interface LlmTokenPriceChanges {
  /** Current rows to close: each must still be current, else the whole change is a conflict. */
  readonly close: ReadonlyArray<{ readonly price_key: string; readonly valid_to: string }>
  /**
   * New rows, each with a `price_key` not stored and not opened earlier in the change; an open
   * row must not share `base_price_key` with a row left current.
   */
  readonly open: ReadonlyArray<LlmTokenPrice>
}

/**
 * Aggregates behind the LLM token price metadata, one per model, ordered by `model`. Every list
 * is sorted, distinct, and covers every row ever stored.
 */
export interface LlmModelSummary {
  readonly model: string
  /** The first, in sort order, of the non-null families its rows carry. */
  readonly model_family: string | null
  /** The first, in sort order, of the non-null creators its rows carry. */
  readonly model_creator: string | null
  /** Every `model_name` its rows carry. */
  readonly model_names: ReadonlyArray<string>
  readonly currently_listed: boolean
  readonly serving_providers: ReadonlyArray<string>
  readonly sources: ReadonlyArray<string>
  readonly price_types: ReadonlyArray<string>
  readonly regions: ReadonlyArray<string>
  readonly metrics: ReadonlyArray<string>
  /** Non-null qualifiers only. */
  readonly qualifiers: ReadonlyArray<string>
}

/**
 * Storage of LLM token price rows. A boolean field in a predicate compares by its text form:
 * `{ op: "eq", field: "is_price_outlier", value: "false" }` keeps rows not flagged.
 */
export class LlmTokenPriceStore extends Context.Tag("Market/Storage/LlmTokenPriceStore")<
  LlmTokenPriceStore,
  {
    /** The current rows (`valid_to` null) of the given base price keys, in no order. */
    readonly current: (basePriceKeys: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<LlmTokenPrice>, StorageError>
    /** The rows of the given models in force at `at` (a stored instant), in no order. */
    readonly inForce: (models: ReadonlyArray<string>, at: string) => Effect.Effect<ReadonlyArray<LlmTokenPrice>, StorageError>
    /** Applies closes and opens in one transaction; a reader never sees part of it. */
    readonly apply: (changes: LlmTokenPriceChanges) => Effect.Effect<void, StorageError | StorageConflict>
    /** Executes a page plan; the tie-breaker is `price_key`. */
    readonly page: (plan: PagePlan) => Effect.Effect<ReadonlyArray<LlmTokenPrice>, StorageError>
    /** Per-model aggregates for the metadata endpoint and `model_search`. */
    readonly models: Effect.Effect<ReadonlyArray<LlmModelSummary>, StorageError>
  }
>() {}
