import type { EventSink } from "./event-log.js"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type { AggregatedTransaction } from "../schema/transaction.js"
import { StorageDefect } from "./errors.js"
import { cmp, matchesPredicates, orderAndSeek } from "./rules.js"
import type { PagePlan } from "./plan.js"
import {
  type Cohort, dealPool, type PublishedRow, type SeriesState, type StoredDeal, transactionChangeFault, type TransactionStore,
  type TransactionSummary, windowDates
} from "./transactions.js"
import { transactionTable } from "./tables.js"
import { sortedValues, summarise } from "./summary.js"
import { memoryMarks } from "./marks.js"
import { memoryDataVersion } from "./memory-versions.js"

/** The reference evaluation of a transaction page plan: window scopes only, tie-breaker `row_key`. */
export const evaluateTransactionPlan = (rows: Iterable<AggregatedTransaction>, plan: PagePlan): Array<AggregatedTransaction> => {
  const dates = windowDates(plan.scope)
  if (dates === undefined) return []
  return orderAndSeek(
    [...rows].filter((r) => r.transaction_date >= dates.from && r.transaction_date < dates.to && matchesPredicates(r, plan.predicates)),
    plan,
    transactionTable.tie
  )
}

/** The summary every backend reports for a set of published rows. */
export const summariseTransactions = (rows: Iterable<AggregatedTransaction>): TransactionSummary => {
  const summary = summarise(transactionTable.summary, rows)
  return {
    region_groups: sortedValues(summary, "region_group"),
    contract_types: sortedValues(summary, "contract_type"),
    tenors: sortedValues(summary, "tenor_days"),
    gpus: summary.groups.map(({ key, span }) => ({
      gpu_canonical_name: key[0] as string,
      gpu_model: key[1] as string,
      first_transaction_date: span.first,
      last_transaction_date: span.last,
      rows: span.rows
    }))
  }
}

/** The in-memory transaction store over fresh state. */
export const makeMemoryTransactionStore = (sink: EventSink = () => {}): TransactionStore["Type"] => {
  const deals = new Map<string, StoredDeal>()
  const cohorts = new Map<string, Cohort>()
  const series = new Map<string, { seq: number; last: string }>()
  const rows = new Map<string, PublishedRow>()
  const marks = memoryMarks()
  const version = memoryDataVersion()

  const stateOf = (id: string): Array<SeriesState> => {
    const s = series.get(id)
    return s === undefined ? [] : [{ series: id, seq: s.seq, last: cohorts.get(s.last)! }]
  }

  return {
    deals: (ids) => Effect.sync(() => [...new Set(ids)].flatMap((id) => {
      const d = deals.get(id)
      return d === undefined ? [] : [d]
    })),
    pending: (pools) => Effect.sync(() => {
      const wanted = new Set(pools)
      return [...deals.values()].filter((d) => d.cohort === null && wanted.has(dealPool(d))).sort((a, b) => cmp(a.deal_id, b.deal_id))
    }),
    pendingPools: Effect.sync(() => [...new Set([...deals.values()].filter((d) => d.cohort === null).map(dealPool))]),
    series: (ids) => Effect.sync(() => [...new Set(ids)].flatMap(stateOf)),
    mark: marks.mark,
    transact: (reads, decide) => Effect.suspend(() => {
      const pools = new Set(reads.pools)
      const read = {
        deals: [...new Set(reads.deals)].flatMap((id) => {
          const d = deals.get(id)
          return d === undefined ? [] : [d]
        }),
        pending: [...deals.values()].filter((d) => d.cohort === null && pools.has(dealPool(d))).sort((a, b) => cmp(a.deal_id, b.deal_id))
      }
      const seriesRead = new Set<string>()
      const decision = decide({ ...read, series: (ids) => ids.flatMap((id) => (seriesRead.add(id), stateOf(id))) })
      if (Either.isLeft(decision)) return Effect.fail(decision.left)
      const { changes, result } = decision.right
      const fault = transactionChangeFault(reads, read, seriesRead, changes) ??
        changes.cohorts.map((c) => (cohorts.has(c.cohort) ? `writes cohort ${c.cohort}, which is stored` : undefined)).find((f) => f !== undefined) ??
        changes.rows.map((r) => (rows.has(r.row.row_key) ? `publishes row ${r.row.row_key}, which is stored` : undefined)).find((f) => f !== undefined)
      if (fault !== undefined) return Effect.die(new StorageDefect({ operation: "transactions.transact", cause: new Error(fault) }))
      for (const d of changes.deals) deals.set(d.deal_id, d)
      for (const a of changes.assign) deals.set(a.deal_id, { ...deals.get(a.deal_id)!, cohort: a.cohort })
      for (const c of changes.cohorts) cohorts.set(c.cohort, c)
      for (const s of changes.series) series.set(s.series, { seq: s.seq, last: s.last })
      for (const r of changes.rows) rows.set(r.row.row_key, r)
      if (changes.rows.length > 0) version.bump()
      sink(changes.rows.map((r) => ({ type: "transaction_blend", row: r.row })))
      if (changes.mark !== undefined) marks.marks.set(changes.mark.name, changes.mark.value)
      return Effect.succeed(result)
    }),
    version: version.version,
    page: (plan) => Effect.sync(() => evaluateTransactionPlan([...rows.values()].map((r) => r.row), plan)),
    summary: Effect.sync(() => summariseTransactions([...rows.values()].map((r) => r.row))),
    audit: Effect.sync(() => {
      const members = new Map<string, Array<string>>()
      for (const d of deals.values()) {
        if (d.cohort === null) continue
        const list = members.get(d.cohort)
        if (list === undefined) members.set(d.cohort, [d.deal_id])
        else list.push(d.deal_id)
      }
      return [...rows.values()]
        .sort((a, b) => cmp(a.row.row_key, b.row.row_key))
        .map((r) => ({ row_key: r.row.row_key, deal_ids: r.cohorts.flatMap((c) => members.get(c) ?? []).sort(cmp) }))
    })
  }
}
