import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type { Principal } from "../auth/principal.js"
import type { RentalPrice } from "../schema/rental-price.js"
import type { LlmTokenPriceStore } from "./llm-token-prices.js"
import type { HardwarePriceStore } from "./hardware.js"
import type { PagePlan } from "./plan.js"
import type { TransactionStore } from "./transactions.js"
import type { IndexStore } from "./indexes.js"
import type { ProcurementStore } from "./procurement.js"
import type { ReferenceDataStore } from "./reference.js"
import type { StorageError } from "./errors.js"
import type { TransactVersions } from "./versions.js"
import type { ReadMark } from "./marks.js"
import type { EventLogStore } from "./event-log.js"

export { faultText, StorageDefect, StorageError, type StorageFault } from "./errors.js"

/**
 * Rows one write of a store (`transact`, `put`) carries at most: core's write paths split larger
 * changes into chunks of this size. A write holds the SQLite write lock, or runs as one Redis
 * script every other client of that server waits for, as long as it takes; at this size that
 * stays well under the 50 ms a write may hold a server (BENCHMARKS.md (j): the longest Redis command of a load).
 */
export const MAX_ROWS_PER_WRITE = 25

/** One spelling of a GPU name, as vendors or the catalog wrote it. */
export interface GpuSpelling {
  readonly gpu_canonical_name: string
  readonly spelling: string
}

/** Aggregates behind the rental price metadata, one per GPU, ordered by `gpu_canonical_name`. */
export interface RentalGpuSummary {
  readonly gpu_canonical_name: string
  readonly gpu_manufacturer: string
  readonly spellings: ReadonlyArray<string>
  readonly currently_listed: boolean
  readonly vendors: ReadonlyArray<string>
}

/** Storage of GPU rental price rows. */
export class RentalPriceStore extends Context.Tag("Market/Storage/RentalPriceStore")<
  RentalPriceStore,
  {
    /**
     * Reads, decides and writes in one atomic step (`TransactVersions`); priced things are named
     * by `base_product_key` and rows by `product_key`. A reader never sees part of a write.
     */
    readonly transact: TransactVersions<RentalPrice>
    /**
     * Rows one `transact` may write, when the store allows more than `MAX_ROWS_PER_WRITE` (its
     * default): core's write path splits a batch into chunks of whole products of about this many.
     */
    readonly rowsPerWrite?: number
    /**
     * For the life of the scope, a load of about `rows` rows through `transact` (an import): the
     * store may prepare for it (SQLite holds its serving indexes back and builds them again by
     * sorting), so long as every read meanwhile still returns the right rows. Returns the load's
     * end, to run once its last write is done; the scope ends it anyway should it fail.
     */
    readonly bulkLoad?: (rows: number) => Effect.Effect<Effect.Effect<void, StorageError>, StorageError, Scope.Scope>
    /** A progress mark written by `transact` (`VersionChanges.mark`). */
    readonly mark: ReadMark
    /**
     * The type's data version: an opaque value that every write changing the type's rows (opened,
     * closed or withdrawn) changes in the same atomic step, and that nothing else changes; while it
     * reads the same, every page reads the same rows. It is one cheap read, since the page cache
     * (`PageCache`) reads it before every page, and a value once replaced never comes back while a
     * process that read it runs.
     */
    readonly version: Effect.Effect<string, StorageError>
    /** Executes a page plan; the tie-breaker is `product_key`. */
    readonly page: (plan: PagePlan) => Effect.Effect<ReadonlyArray<RentalPrice>, StorageError>
    /** Every `(gpu, spelling)` pair ever ingested, canonical names and models included. */
    readonly spellings: Effect.Effect<ReadonlyArray<GpuSpelling>, StorageError>
    /** Per-GPU aggregates for the metadata endpoint. */
    readonly gpus: Effect.Effect<ReadonlyArray<RentalGpuSummary>, StorageError>
  }
>() {}

/** A token as stored: the hash of its secret and the principal it reaches. */
export interface StoredToken {
  readonly tokenHash: string
  readonly principal: Principal
}

/** API tokens, kept as SHA-256 hashes of their secrets. */
export class TokenStore extends Context.Tag("Market/Storage/TokenStore")<
  TokenStore,
  {
    /** Stores (or replaces) the principal reached by a token hash. */
    readonly put: (tokenHash: string, principal: Principal) => Effect.Effect<void, StorageError>
    /** The stored token of a hash, if it exists and is not revoked. */
    readonly find: (tokenHash: string) => Effect.Effect<Option.Option<StoredToken>, StorageError>
    /** Every stored token, ordered by principal id. */
    readonly list: Effect.Effect<ReadonlyArray<StoredToken>, StorageError>
    /** Revokes every token of a principal; true when one existed. */
    readonly revoke: (principalId: string) => Effect.Effect<boolean, StorageError>
    /**
     * An opaque value that `put` and a `revoke` that revoked something change, in the same atomic
     * step as the tokens: while it reads the same, every `find` answers as it did. Processes
     * cache lookups under it (`Auth`), so it must be one cheap read, and a value once replaced
     * never comes back (a fresh random value per change, not a counter a reset could repeat).
     */
    readonly version: Effect.Effect<string, StorageError>
  }
>() {}

/** The outcome of one rate-limit hit. */
export interface RateLimitHit {
  /** Requests counted in the current window, this one included. */
  readonly count: number
  /** Microseconds until the window resets. */
  readonly resetInMicros: number
}

/**
 * Fixed-window counters. A backend's are shared by every process that shares the store;
 * `withRateLimits(storage, "process")` replaces them with this process's own (`MemoryRateLimits`).
 */
export class RateLimitStore extends Context.Tag("Market/Storage/RateLimitStore")<
  RateLimitStore,
  {
    /**
     * Counts one request for `key` in the window of `windowMicros` holding `now`, atomically,
     * and returns the count so far. Counting happens even past the limit.
     */
    readonly hit: (key: string, windowMicros: number, now: number) => Effect.Effect<RateLimitHit, StorageError>
  }
>() {}

/** Small named values the deployment keeps (the page-token secret, the demo seed mark). */
export class SettingsStore extends Context.Tag("Market/Storage/SettingsStore")<
  SettingsStore,
  {
    readonly get: (name: string) => Effect.Effect<Option.Option<string>, StorageError>
    readonly set: (name: string, value: string) => Effect.Effect<void, StorageError>
    /** Sets `name` to `value` unless it has a value; returns the value that holds. */
    readonly getOrSet: (name: string, value: string) => Effect.Effect<string, StorageError>
    /**
     * Takes or renews the lease `name` for `holder` until `nowMs + ttlMs`, in one atomic step,
     * when it is free, expired at `nowMs`, or already `holder`'s; true when `holder` holds it
     * after the call. Times are the callers' epoch milliseconds, so the processes sharing a
     * store must agree on the time within a small part of `ttlMs`. One loop of many processes
     * (a sync) runs where its lease is held; when the holder dies, another takes over once the
     * lease expires. The lease is kept under `name` among the settings.
     */
    readonly lease: (name: string, holder: string, nowMs: number, ttlMs: number) => Effect.Effect<boolean, StorageError>
  }
>() {}

/** Everything a backend provides. */
export type Storage = RentalPriceStore | TokenStore | RateLimitStore | SettingsStore | LlmTokenPriceStore | HardwarePriceStore | TransactionStore | IndexStore | ProcurementStore
  | ReferenceDataStore | EventLogStore
