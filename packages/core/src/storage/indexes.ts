import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import { formatInstant, MICROS_PER_MS } from "../query/time.js"
import type { FleetWeight, IndexDefinition, IndexValue } from "../schema/indexes.js"
import type { StorageError } from "./errors.js"
import type { PagePlan } from "./plan.js"
import type { ProgressMark, ReadMark } from "./marks.js"

/** Length of an intraday interval. */
export const INTRADAY_MICROS = 30 * 60 * 1_000_000

const MIDNIGHT = "T00:00:00.000000Z"

/**
 * The instant a value's interval starts: a daily value's date at 00:00 UTC, an intraday value's
 * own timestamp. Within one index this orders values exactly as `timestamp` does.
 */
export const intervalStart = (timestamp: string): string => (timestamp.length === 10 ? timestamp + MIDNIGHT : timestamp)

/**
 * The earliest instant at which `/as-of` answers with a value. Daily (spec rule 1): `at` is
 * truncated to its UTC date, so a day answers from its own midnight. Intraday (rule 2): only a
 * completed interval answers, so from the instant the interval ends.
 */
export const answersFrom = (row: Pick<IndexValue, "type" | "timestamp">): string =>
  row.type === "daily"
    ? intervalStart(row.timestamp)
    : formatInstant(Date.parse(row.timestamp.slice(0, 23) + "Z") * MICROS_PER_MS + INTRADAY_MICROS)

/** A definition as stored, with how far it has been computed. */
export interface StoredIndexDefinition {
  readonly definition: IndexDefinition
  /** End of the last interval computed (`null`: none yet); only ever moves forward. */
  readonly computed_through: string | null
}

/** One atomic change to index values. */
export interface IndexValueChanges {
  /** Values to remove first: those of `id` whose interval starts in `[start, end)`. */
  readonly clear: ReadonlyArray<{ readonly id: string; readonly start: string; readonly end: string }>
  /** Values to store; a value with a stored `(id, timestamp)` replaces it. */
  readonly values: ReadonlyArray<IndexValue>
  /** Cursors to move: each becomes the later of its stored value and `through`. */
  readonly cursors: ReadonlyArray<{ readonly id: string; readonly through: string }>
  /** The progress mark written with the change, if the write carries one. */
  readonly mark?: ProgressMark
}

/** Which values of one index a caller may read, for the legacy available-index list. */
export interface IndexCoverage {
  readonly id: string
  /** Earliest timestamp at or after the `from` asked for (`null`: none there). */
  readonly first: string | null
  /** Values at or after `from`. */
  readonly count: number
  /** Latest timestamp of all. */
  readonly last: string
}

/**
 * Storage of index definitions, fleet weights and published values. It holds only published
 * values: an interval is stored once it is complete, so whatever it returns may be served.
 */
export class IndexStore extends Context.Tag("Market/Storage/IndexStore")<
  IndexStore,
  {
    /** Stores definitions in one transaction; one with a stored id replaces it and keeps its cursor and values. */
    readonly define: (definitions: ReadonlyArray<IndexDefinition>) => Effect.Effect<void, StorageError>
    /** Every definition with its cursor, ordered by id. */
    readonly definitions: Effect.Effect<ReadonlyArray<StoredIndexDefinition>, StorageError>
    /** The definition of one id. */
    readonly definition: (id: string) => Effect.Effect<Option.Option<IndexDefinition>, StorageError>
    /** Replaces every fleet weight of the GPUs in `gpus` by the given weights, in one transaction. */
    readonly putWeights: (gpus: ReadonlyArray<string>, weights: ReadonlyArray<FleetWeight>) => Effect.Effect<void, StorageError>
    /** Every fleet weight, ordered by GPU then `valid_from`. */
    readonly weights: Effect.Effect<ReadonlyArray<FleetWeight>, StorageError>
    /** Applies clears, then values, then cursors, in one transaction; a reader never sees part of it. */
    readonly apply: (changes: IndexValueChanges) => Effect.Effect<void, StorageError>
    /** A progress mark written by `apply` (`IndexValueChanges.mark`). */
    readonly mark: ReadMark
    /**
     * The type's data version: an opaque value that every write changing the type's rows
     * (definitions, fleet weights, values put or cleared) changes in the same atomic step, and that
     * nothing else changes; while it reads the same, every page reads the same rows. It is one
     * cheap read, since the page cache (`PageCache`) reads it before every page, and a value once
     * replaced never comes back while a process that read it runs.
     */
    readonly version: Effect.Effect<string, StorageError>
    /**
     * Executes a page plan over values; predicates are on row fields and a plan names one index
     * (`timestamp`, the tie-breaker, is unique within it). Scopes: `latest` is each index's
     * latest value; `asOf` its value with the latest `answersFrom` at or before `at`; `window`
     * its values whose interval starts in `[start, end)`.
     */
    readonly page: (plan: PagePlan) => Effect.Effect<ReadonlyArray<IndexValue>, StorageError>
    /** Coverage of each index among `ids` that has a value, ordered by id; `from` is an interval start. */
    readonly coverage: (ids: ReadonlyArray<string>, from: string | null) => Effect.Effect<ReadonlyArray<IndexCoverage>, StorageError>
  }
>() {}
