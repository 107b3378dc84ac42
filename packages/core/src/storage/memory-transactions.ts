import * as Effect from "effect/Effect"
import type { AggregatedTransaction } from "../schema/transaction.js"
import { StorageConflict } from "./contract.js"
import { cmp, matchesPredicates, orderAndSeek } from "./rules.js"
import type { PagePlan } from "./plan.js"
import {
  type Cohort, dealPool, type PublishedRow, type SeriesState, type StoredDeal, type TransactionStore, type TransactionSummary,
  windowDates
} from "./transactions.js"
import { transactionTable } from "./tables.js"

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
  const regions = new Set<string>(), contracts = new Set<string>(), tenors = new Set<number>()
  const gpus = new Map<string, { gpu_canonical_name: string; gpu_model: string; first: string; last: string; rows: number }>()
  for (const r of rows) {
    regions.add(r.region_group)
    contracts.add(r.contract_type)
    tenors.add(r.tenor_days)
    const key = JSON.stringify([r.gpu_canonical_name, r.gpu_model])
    const g = gpus.get(key)
    if (g === undefined) {
      gpus.set(key, { gpu_canonical_name: r.gpu_canonical_name, gpu_model: r.gpu_model, first: r.transaction_date, last: r.transaction_date, rows: 1 })
    } else {
      if (r.transaction_date < g.first) g.first = r.transaction_date
      if (r.transaction_date > g.last) g.last = r.transaction_date
      g.rows++
    }
  }
  return {
    region_groups: [...regions].sort(cmp),
    contract_types: [...contracts].sort(cmp),
    tenors: [...tenors].sort((a, b) => a - b),
    gpus: [...gpus.values()]
      .sort((a, b) => cmp(a.gpu_canonical_name, b.gpu_canonical_name) || cmp(a.gpu_model, b.gpu_model))
      .map((g) => ({
        gpu_canonical_name: g.gpu_canonical_name,
        gpu_model: g.gpu_model,
        first_transaction_date: g.first,
        last_transaction_date: g.last,
        rows: g.rows
      }))
  }
}

/** The in-memory transaction store over fresh state. */
export const makeMemoryTransactionStore = (): TransactionStore["Type"] => {
  const deals = new Map<string, StoredDeal>()
  const cohorts = new Map<string, Cohort>()
  const series = new Map<string, { seq: number; last: string }>()
  const rows = new Map<string, PublishedRow>()

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
    series: (ids) => Effect.sync(() => [...new Set(ids)].flatMap((id): Array<SeriesState> => {
      const s = series.get(id)
      return s === undefined ? [] : [{ series: id, seq: s.seq, last: cohorts.get(s.last)! }]
    })),
    apply: (changes) => Effect.suspend(() => {
      const conflict = (detail: string) => Effect.fail(new StorageConflict({ detail }))
      for (const p of changes.pools) {
        const now = [...deals.values()].filter((d) => d.cohort === null && dealPool(d) === p.pool).map((d) => d.deal_id).sort(cmp)
        if (now.join("\u0000") !== [...p.pending].sort(cmp).join("\u0000")) return conflict(`pool ${p.pool} changed`)
      }
      const fresh = new Set<string>()
      for (const d of changes.deals) {
        if (deals.has(d.deal_id) || fresh.has(d.deal_id)) return conflict(`deal ${d.deal_id} exists`)
        fresh.add(d.deal_id)
      }
      for (const a of changes.assign) {
        const d = deals.get(a.deal_id)
        if (d === undefined || d.cohort !== null) return conflict(`deal ${a.deal_id} is no longer pending`)
      }
      for (const s of changes.series) {
        if ((series.get(s.series)?.seq ?? 0) !== s.expected) return conflict(`series ${s.series} moved`)
      }
      const newCohorts = new Set<string>()
      for (const c of changes.cohorts) {
        if (cohorts.has(c.cohort) || newCohorts.has(c.cohort)) return conflict(`cohort ${c.cohort} exists`)
        newCohorts.add(c.cohort)
      }
      const newRows = new Set<string>()
      for (const r of changes.rows) {
        if (rows.has(r.row.row_key) || newRows.has(r.row.row_key)) return conflict(`row ${r.row.row_key} exists`)
        newRows.add(r.row.row_key)
      }
      for (const d of changes.deals) deals.set(d.deal_id, d)
      for (const a of changes.assign) deals.set(a.deal_id, { ...deals.get(a.deal_id)!, cohort: a.cohort })
      for (const c of changes.cohorts) cohorts.set(c.cohort, c)
      for (const s of changes.series) series.set(s.series, { seq: s.seq, last: s.last })
      for (const r of changes.rows) rows.set(r.row.row_key, r)
      return Effect.void
    }),
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
