import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { LlmTokenPrice } from "../schema/llm-token-price.js"
import type { StorageError } from "./errors.js"
import type { TransactVersions } from "./versions.js"
import type { ReadMark } from "./marks.js"
import type { PagePlan } from "./plan.js"

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
    /**
     * Reads, decides and writes in one atomic step (`TransactVersions`); priced things are named
     * by `base_price_key` and rows by `price_key`, peers by `model`, and `is_price_outlier` is
     * restatable (`llmTokenPriceKeys`). A reader never sees part of a write.
     */
    readonly transact: TransactVersions<LlmTokenPrice>
    /** A progress mark written by `transact` (`VersionChanges.mark`). */
    readonly mark: ReadMark
    /**
     * The type's data version: an opaque value that every write changing the type's rows (opened,
     * closed, withdrawn or re-flagged) changes in the same atomic step, and that nothing else
     * changes; while it reads the same, every page reads the same rows. It is one cheap read, since
     * the page cache (`PageCache`) reads it before every page, and a value once replaced never
     * comes back while a process that read it runs.
     */
    readonly version: Effect.Effect<string, StorageError>
    /** Executes a page plan; the tie-breaker is `price_key`. */
    readonly page: (plan: PagePlan) => Effect.Effect<ReadonlyArray<LlmTokenPrice>, StorageError>
    /** Per-model aggregates for the metadata endpoint and `model_search`. */
    readonly models: Effect.Effect<ReadonlyArray<LlmModelSummary>, StorageError>
  }
>() {}
