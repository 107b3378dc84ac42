import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { GpuCatalogEntryInput } from "../catalog/gpu-catalog.js"
import type { FxRateInput } from "../schema/fx-rate.js"
import type { StorageError } from "./errors.js"
import type { ProgressMark, ReadMark } from "./marks.js"

/** What one write of reference data did. */
export const ReferencePutSummary = Schema.Struct({
  /** Records whose key (a currency and date; a GPU slug) was not stored before. */
  inserted: Schema.Number,
  /** Records that replaced the stored record of their key. */
  replaced: Schema.Number
})
export type ReferencePutSummary = typeof ReferencePutSummary.Type

/**
 * Reference data the write paths normalise with, extended by import and shared by every process
 * of the store: FX rates (one per currency and date) and the operator's GPU catalog entries (one
 * per slug, added to the shipped catalog). Write paths read it once per batch, so a write here is
 * seen by the next batch anywhere.
 */
export class ReferenceDataStore extends Context.Tag("Market/Storage/ReferenceDataStore")<
  ReferenceDataStore,
  {
    /**
     * Writes FX rates in one transaction: a rate of a currency and date already stored replaces
     * it. Of two rates of one currency and date in the call, the later stands. `mark`, a
     * progress mark, is written in the same transaction.
     */
    readonly putFxRates: (rates: ReadonlyArray<FxRateInput>, mark?: ProgressMark) => Effect.Effect<ReferencePutSummary, StorageError>
    /**
     * The rates of `currencies` dated in `[from, to]` and, for each currency, its latest rate
     * dated before `from` (the one in force on `from`), ordered by currency, then date. Dates
     * are `YYYY-MM-DD`.
     */
    readonly fxRates: (currencies: ReadonlyArray<string>, from: string, to: string) => Effect.Effect<ReadonlyArray<FxRateInput>, StorageError>
    /**
     * Writes GPU catalog entries in one transaction: an entry of a slug already stored replaces
     * it. Of two entries of one slug in the call, the later stands. `mark` is written with them.
     */
    readonly putGpus: (entries: ReadonlyArray<GpuCatalogEntryInput>, mark?: ProgressMark) => Effect.Effect<ReferencePutSummary, StorageError>
    /** Every stored GPU catalog entry, ordered by slug. */
    readonly gpus: Effect.Effect<ReadonlyArray<GpuCatalogEntryInput>, StorageError>
    /** A progress mark written by `putFxRates` or `putGpus`. */
    readonly mark: ReadMark
  }
>() {}
