import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { HardwareClassField, HardwarePrice } from "../schema/hardware-price.js"
import type { StorageError } from "./errors.js"
import type { PagePlan } from "./plan.js"
import type { ProgressMark, ReadMark } from "./marks.js"

/** What one `put` did. */
export interface HardwarePutSummary {
  /** Rows of a listing-day not stored before. */
  readonly inserted: number
  /** Rows that replaced the stored row of their listing-day. */
  readonly replaced: number
}

/** Coverage of one GPU, over every stored row. */
export interface HardwareGpuCoverage {
  readonly gpu_canonical_name: string
  readonly first_observed: string
  readonly last_observed: string
  /** Distinct listings with at least one row of this GPU. */
  readonly listings: number
  /** Rows (listing-days) of this GPU. */
  readonly observations: number
}

/** Aggregates behind the hardware price metadata. */
export interface HardwareSummary {
  /** Each classification filter's values among stored rows, sorted; nulls are not values. */
  readonly values: { readonly [F in HardwareClassField]: ReadonlyArray<string> }
  /** One entry per GPU with stored rows, ordered by `gpu_canonical_name`. */
  readonly gpus: ReadonlyArray<HardwareGpuCoverage>
}

/**
 * Storage of GPU hardware price rows: at most one row per listing and day. The scopes of a plan
 * mean, for this type: `latest`, each listing's row of its most recent observed day; `asOf`,
 * each listing's row of its most recent day on or before the UTC date of `at`; `window`, rows
 * whose day starts (00:00 UTC) inside `[start, end)`.
 */
export class HardwarePriceStore extends Context.Tag("Market/Storage/HardwarePriceStore")<
  HardwarePriceStore,
  {
    /**
     * Writes rows in one transaction: a row of a listing-day already stored replaces it, any
     * other is added. Of two rows of one listing-day in the call, the later stands. `mark`, a
     * progress mark, is written in the same transaction.
     */
    readonly put: (rows: ReadonlyArray<HardwarePrice>, mark?: ProgressMark) => Effect.Effect<HardwarePutSummary, StorageError>
    /** A progress mark written by `put`. */
    readonly mark: ReadMark
    /**
     * The type's data version: an opaque value that every write changing the type's rows (put or
     * replaced) changes in the same atomic step, and that nothing else changes; while it reads the
     * same, every page reads the same rows. It is one cheap read, since the page cache
     * (`PageCache`) reads it before every page, and a value once replaced never comes back while a
     * process that read it runs.
     */
    readonly version: Effect.Effect<string, StorageError>
    /** Executes a page plan; the tie-breaker is `observation_id`. */
    readonly page: (plan: PagePlan) => Effect.Effect<ReadonlyArray<HardwarePrice>, StorageError>
    /** Filter values and per-GPU coverage for the metadata endpoint. */
    readonly summary: Effect.Effect<HardwareSummary, StorageError>
  }
>() {}
