import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { AggregatedTransaction } from "../schema/transaction.js"
import type { StorageConflict, StorageError } from "./errors.js"
import type { PagePlan, Scope } from "./plan.js"

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

/** One atomic change: new deals, blends of pending deals, and what they publish. */
export interface TransactionChanges {
  /**
   * The pools the change was planned from and their pending deal ids then (sorted): each must
   * still hold exactly those, else a concurrent writer added or blended one and the change is a
   * conflict (so two writers never leave two compatible deals waiting side by side).
   */
  readonly pools: ReadonlyArray<{ readonly pool: string; readonly pending: ReadonlyArray<string> }>
  /** New deals; each id must be new. */
  readonly deals: ReadonlyArray<StoredDeal>
  /** Deals stored earlier that join a cohort now; each must still be pending. */
  readonly assign: ReadonlyArray<{ readonly deal_id: string; readonly cohort: string }>
  readonly cohorts: ReadonlyArray<Cohort>
  readonly rows: ReadonlyArray<PublishedRow>
  /** Series moved by the change; each must still be at `expected` rows (0: unknown so far). */
  readonly series: ReadonlyArray<{ readonly series: string; readonly expected: number; readonly seq: number; readonly last: string }>
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
    /** Applies a change in one transaction; a reader never sees part of it. */
    readonly apply: (changes: TransactionChanges) => Effect.Effect<void, StorageError | StorageConflict>
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
