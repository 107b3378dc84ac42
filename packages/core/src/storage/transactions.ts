import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { AggregatedTransaction } from "../schema/transaction.js"
import type * as Either from "effect/Either"
import type { StorageError } from "./errors.js"
import type { PagePlan, Scope } from "./plan.js"
import type { Decision } from "./versions.js"
import type { ProgressMark, ReadMark } from "./marks.js"

/** A settled deal as stored: private, never served. A null list price means none is known. */
export interface Deal {
  readonly deal_id: string
  readonly gpu_canonical_name: string
  readonly gpu_model: string
  readonly region_group: string
  readonly contract_type: string
  readonly tenor_days: number
  readonly gpu_count: number
  readonly gpu_hours: number
  readonly price_usd_per_gpu_hour: number
  readonly list_price_usd_per_gpu_hour: number | null
  readonly settlement_date: string
}

/** A stored deal and the cohort it was blended into (`null` while it waits for a partner). */
export interface StoredDeal extends Deal {
  readonly cohort: string | null
}

/**
 * Deals that may be blended together: one GPU (and model), contract type and settlement day.
 * Stores index pending deals by it.
 */
export const dealPool = (d: Pick<Deal, "gpu_canonical_name" | "gpu_model" | "contract_type" | "settlement_date">): string =>
  JSON.stringify([d.gpu_canonical_name, d.gpu_model, d.contract_type, d.settlement_date])

/**
 * A cohort: deals that are always published together, never apart. Cohorts are disjoint, hold
 * at least two deals and never change, and every published row is one or two whole cohorts.
 * The sums are what rows are computed from.
 */
export interface Cohort {
  readonly cohort: string
  readonly series: string
  readonly transaction_date: string
  readonly deals: number
  readonly gpu_count: number
  readonly gpu_hours: number
  /** Σ price × GPU-hours. */
  readonly price_hours: number
  /** Σ list price × GPU-hours, or null when a deal has no list price. */
  readonly list_hours: number | null
}

/** Where a series stands: rows published so far and its latest cohort. */
export interface SeriesState {
  readonly series: string
  readonly seq: number
  readonly last: Cohort
}

/** A published row and the cohorts behind it (private: never served). */
export interface PublishedRow {
  readonly row: AggregatedTransaction
  readonly cohorts: ReadonlyArray<string>
}

/** What a transactions write reads: stored deals by id, and the pending deals of pools. */
export interface TransactionReads {
  /** Deal ids to look up; every deal the change stores must be among them. */
  readonly deals: ReadonlyArray<string>
  /** Pools (`dealPool`) whose pending deals to read; every deal the change blends must be among them. */
  readonly pools: ReadonlyArray<string>
}

/** What a transactions write decides on, read inside its step. */
export interface TransactionView {
  /** The stored deals among the ids asked about, in no order. */
  readonly deals: ReadonlyArray<StoredDeal>
  /** The pending deals of the pools asked about, ordered by `deal_id`. */
  readonly pending: ReadonlyArray<StoredDeal>
  /** The states of the known series among `ids`, in no order, read inside the step. */
  readonly series: (ids: ReadonlyArray<string>) => ReadonlyArray<SeriesState>
}

/** One atomic change: new deals, blends of pending deals, and what they publish. */
export interface TransactionChanges {
  /** New deals, each among the ids read and not stored. */
  readonly deals: ReadonlyArray<StoredDeal>
  /** Pending deals read that join a cohort now. */
  readonly assign: ReadonlyArray<{ readonly deal_id: string; readonly cohort: string }>
  readonly cohorts: ReadonlyArray<Cohort>
  readonly rows: ReadonlyArray<PublishedRow>
  /** Series moved by the change, each read through the view's `series` first. */
  readonly series: ReadonlyArray<{ readonly series: string; readonly seq: number; readonly last: string }>
  /** The progress mark written with the change, if the write carries one. */
  readonly mark?: ProgressMark
}

/**
 * Why `changes` breaks the rules of `TransactionStore.transact` against what was read, or
 * `undefined` when it keeps them. Keys of new cohorts and rows are checked by the backend.
 */
export const transactionChangeFault = (
  reads: TransactionReads,
  view: { readonly deals: ReadonlyArray<StoredDeal>; readonly pending: ReadonlyArray<StoredDeal> },
  seriesRead: ReadonlySet<string>,
  changes: TransactionChanges
): string | undefined => {
  const asked = new Set(reads.deals)
  const stored = new Set(view.deals.map((d) => d.deal_id))
  const fresh = new Set<string>()
  for (const d of changes.deals) {
    if (!asked.has(d.deal_id)) return `stores deal ${d.deal_id}, which it did not read`
    if (stored.has(d.deal_id) || fresh.has(d.deal_id)) return `stores deal ${d.deal_id} twice`
    fresh.add(d.deal_id)
  }
  const pending = new Set(view.pending.map((d) => d.deal_id))
  const assigned = new Set<string>()
  for (const a of changes.assign) {
    if (!pending.has(a.deal_id) || assigned.has(a.deal_id)) return `blends deal ${a.deal_id}, which is not a pending deal it read`
    assigned.add(a.deal_id)
  }
  for (const s of changes.series) if (!seriesRead.has(s.series)) return `moves series ${s.series}, which it did not read`
  return undefined
}

/** Aggregates behind the transaction metadata, over published rows only. */
export interface TransactionSummary {
  readonly region_groups: ReadonlyArray<string>
  readonly contract_types: ReadonlyArray<string>
  readonly tenors: ReadonlyArray<number>
  /** One entry per GPU and model, ordered by `gpu_canonical_name` then `gpu_model`. */
  readonly gpus: ReadonlyArray<{
    readonly gpu_canonical_name: string
    readonly gpu_model: string
    readonly first_transaction_date: string
    readonly last_transaction_date: string
    readonly rows: number
  }>
}

/**
 * The dates a window scope covers: a row's `transaction_date` d is in `[start, end)` when d at
 * 00:00 UTC is, that is when `from <= d < to`. Other scopes cover no dates (events have no
 * versions in force).
 */
export const windowDates = (scope: Scope): { readonly from: string; readonly to: string } | undefined => {
  if (scope._tag !== "window") return undefined
  return { from: ceilDate(scope.start), to: ceilDate(scope.end) }
}

const MIDNIGHT = "T00:00:00.000000Z"

/** The first date whose midnight is at or after a stored instant. */
const ceilDate = (instant: string): string => {
  const date = instant.slice(0, 10)
  if (instant.slice(10) === MIDNIGHT) return date
  const next = new Date(`${date}T00:00:00Z`)
  next.setUTCDate(next.getUTCDate() + 1)
  return next.toISOString().slice(0, 10)
}

/** Storage of aggregated transactions: private deals and cohorts, and the published rows. */
export class TransactionStore extends Context.Tag("Market/Storage/TransactionStore")<
  TransactionStore,
  {
    /** The stored deals among `ids`, in no order. */
    readonly deals: (ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<StoredDeal>, StorageError>
    /** Deals still waiting for a partner in the given pools (`dealPool`), ordered by `deal_id`. */
    readonly pending: (pools: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<StoredDeal>, StorageError>
    /** Every pool holding a pending deal, in no order. */
    readonly pendingPools: Effect.Effect<ReadonlyArray<string>, StorageError>
    /** The states of the known series among `ids`, in no order. */
    readonly series: (ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<SeriesState>, StorageError>
    /**
     * Reads what `reads` names, calls `decide` on it, and writes the decided change, as one
     * atomic step no other writer interleaves with (SQLite: one `BEGIN IMMEDIATE`; Redis: one
     * checked batch, read and decided again a bounded number of times when another writer got
     * there first). A `Left` writes nothing and fails with its error. `decide` is pure and may
     * run more than once. A change breaking `transactionChangeFault`'s rules is a defect.
     */
    readonly transact: <A, E>(
      reads: TransactionReads,
      decide: (view: TransactionView) => Either.Either<Decision<TransactionChanges, A>, E>
    ) => Effect.Effect<A, E | StorageError>
    /** A progress mark written by `transact` (`TransactionChanges.mark`). */
    readonly mark: ReadMark
    /**
     * The type's data version: an opaque value that every write changing the type's rows (blends
     * published) changes in the same atomic step, and that nothing else changes; while it reads the
     * same, every page reads the same rows. It is one cheap read, since the page cache
     * (`PageCache`) reads it before every page, and a value once replaced never comes back while a
     * process that read it runs.
     */
    readonly version: Effect.Effect<string, StorageError>
    /** Executes a page plan over published rows (window scopes only); the tie-breaker is `row_key`. */
    readonly page: (plan: PagePlan) => Effect.Effect<ReadonlyArray<AggregatedTransaction>, StorageError>
    /** Value sets and per-GPU coverage of the published rows. */
    readonly summary: Effect.Effect<TransactionSummary, StorageError>
    /**
     * Every published row with the ids of the deals blended into it, ordered by `row_key`
     * (deal ids sorted): the private record behind publication, for audits. Never served.
     */
    readonly audit: Effect.Effect<ReadonlyArray<{ readonly row_key: string; readonly deal_ids: ReadonlyArray<string> }>, StorageError>
  }
>() {}
