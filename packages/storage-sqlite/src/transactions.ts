import { type AggregatedTransaction, transactionFields } from "@gpu-market/core"
import {
  type Cohort, type Decision, dealPool, fieldsOfKind, type PagePlan, type SeriesState, type StoredDeal, transactionChangeFault,
  type TransactionChanges, type TransactionReads, type TransactionStore, transactionTable, type TransactionView, windowDates
} from "@gpu-market/core/storage"
import * as Either from "effect/Either"
import type { SqliteClient } from "./client.js"
import { readMark, writeMark } from "./settings.js"
import type { Migration } from "./migration.js"
import {
  type Clauses, cmp, columnGuard, type CompiledPage, InvalidPlan, KEY_CHUNK, keysetClause, limitParam,
  orderBy, type PageSort, pinnedValue, placeholders, predicateClauses, predicateFieldsOf, readRows
} from "./page-sql.js"
import { dataVersion } from "./data-version.js"
import { appendEvents } from "./event-log.js"

/** Row fields that hold text; booleans (`is_rolling`) are stored as 0/1. */
const TEXT_FIELDS = fieldsOfKind(transactionTable, "text")

/** The 15 published columns in the row's field order; the private cohort columns are never selected. */
const SELECT = `SELECT ${transactionFields.join(", ")} FROM transaction_rows`

/** Builds a row from the raw columns of `SELECT`, in spec order. A test checks the positions. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- raw SQLite values, typed by the row they fill
export const transactionFromColumns = (c: ReadonlyArray<any>): AggregatedTransaction => ({
  gpu_model: c[0], gpu_canonical_name: c[1], region_group: c[2], contract_type: c[3], tenor_days: c[4],
  price_usd_per_gpu_hour: c[5], total_gpu_count: c[6], total_gpu_hours: c[7], transaction_date: c[8],
  discount_percentage: c[9], is_rolling: c[10] === 1, blend_axis: c[11], blend_tenor_days: c[12],
  blend_region_group: c[13], row_key: c[14]
})

const column = columnGuard(transactionFields, "aggregated transaction")

/** The transaction fields predicates see: a text value never matches a number or a boolean. */
const PREDICATE_FIELDS = predicateFieldsOf(transactionTable, { column, seekPastBounds: true })

/**
 * Turns a page plan into one statement over published rows, as the rental store does: values
 * are bound, the text depends only on the plan's shape, and pages continue from the keyset
 * position (never OFFSET). A window covers the dates whose midnight is inside it.
 */
export const compileTransactionPage = (plan: PagePlan): CompiledPage => {
  const c: Clauses = { where: [], params: [] }
  const { where, params } = c
  predicateClauses(c, plan, PREDICATE_FIELDS)
  const by = column(plan.sort.by)
  if (by === "discount_percentage" || by === "is_rolling") throw new InvalidPlan(`cannot sort by ${by}`)
  const desc = plan.sort.order === "desc"
  const after = plan.after
  const pinned = after !== undefined && TEXT_FIELDS.has(by) ? pinnedValue(plan, by) : undefined
  const dates = windowDates(plan.scope)
  // Which window bound the keyset position makes redundant when sorting by date: dropping it
  // lets SQLite seek straight to the position instead of walking from the window's edge.
  let implied: "from" | "to" | "position" | undefined
  if (dates === undefined) where.push("0")
  else if (by !== "transaction_date") {
    // Sorted by another field, a page walks that field's index in order and checks the dates
    // from the index; the unary `+` keeps SQLite from reading the date range and sorting it.
    where.push("+transaction_date >= ? AND +transaction_date < ?")
    params.push(dates.from, dates.to)
  } else {
    if (after !== undefined && pinned === undefined) {
      const v = String(after.value)
      implied = desc ? (v < dates.to ? "to" : "position") : (v >= dates.from ? "from" : "position")
    }
    if (implied !== "from") {
      where.push("transaction_date >= ?")
      params.push(dates.from)
    }
    if (implied !== "to") {
      where.push("transaction_date < ?")
      params.push(dates.to)
    }
  }
  const sort: PageSort = { field: by, sql: by, tie: "row_key", desc, pinned }
  if (after !== undefined && implied !== "position") keysetClause(c, sort, after)
  limitParam(c, plan.limit)
  return { sql: `${SELECT} WHERE ${where.join(" AND ")} ORDER BY ${orderBy(sort)} LIMIT ?`, params }
}

const DEAL_COLUMNS = [
  "deal_id", "gpu_canonical_name", "gpu_model", "region_group", "contract_type", "tenor_days", "gpu_count", "gpu_hours",
  "price_usd_per_gpu_hour", "list_price_usd_per_gpu_hour", "settlement_date", "cohort"
] as const
const SELECT_DEALS = `SELECT ${DEAL_COLUMNS.join(", ")} FROM transaction_deals`
const INSERT_DEAL = `INSERT INTO transaction_deals (pool, ${DEAL_COLUMNS.join(", ")}) VALUES (${placeholders(DEAL_COLUMNS.length + 1)})`
const INSERT_ROW = `INSERT INTO transaction_rows (${transactionFields.join(", ")}, cohort, rolled_cohort)
  VALUES (${placeholders(transactionFields.length + 2)})`
const INSERT_COHORT = `INSERT INTO transaction_cohorts (cohort, series, transaction_date, deals, gpu_count, gpu_hours, price_hours, list_hours)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?)`

/** The aggregated transaction store over one connection; the schema must be migrated. */
export const makeTransactionStore = (client: SqliteClient): TransactionStore["Type"] => {
  const { prepare } = client

  /** Runs `sql` once per chunk of `values`, appended as an `IN (...)` list. */
  const inChunks = <A>(values: ReadonlyArray<string>, sql: (list: string) => string): Array<A> => {
    const unique = [...new Set(values)]
    const out: Array<A> = []
    for (let i = 0; i < unique.length; i += KEY_CHUNK) {
      const chunk = unique.slice(i, i + KEY_CHUNK)
      out.push(...(prepare(sql(placeholders(chunk.length))).all(...chunk) as Array<A>))
    }
    return out
  }

  const cohortOf = (r: Cohort): Cohort => ({
    cohort: r.cohort, series: r.series, transaction_date: r.transaction_date, deals: r.deals, gpu_count: r.gpu_count,
    gpu_hours: r.gpu_hours, price_hours: r.price_hours, list_hours: r.list_hours
  })

  const dealsOf = (ids: ReadonlyArray<string>) => inChunks<StoredDeal>(ids, (list) => `${SELECT_DEALS} WHERE deal_id IN (${list})`)
  const pendingOf = (pools: ReadonlyArray<string>) =>
    inChunks<StoredDeal>(pools, (list) => `${SELECT_DEALS} WHERE cohort IS NULL AND pool IN (${list})`).sort((a, b) => cmp(a.deal_id, b.deal_id))
  const seriesOf = (ids: ReadonlyArray<string>) =>
    inChunks<Cohort & { readonly seq: number }>(ids, (list) =>
      `SELECT s.seq AS seq, c.* FROM transaction_series s JOIN transaction_cohorts c ON c.cohort = s.last_cohort
       WHERE s.series IN (${list})`
    ).map((r): SeriesState => ({ series: r.series, seq: r.seq, last: cohortOf(r) }))

  /** Writes a decided change; checked against what was read, inside the same transaction. */
  const version = dataVersion(client, "transactions")
  const write = (changes: TransactionChanges) => {
    const assign = prepare("UPDATE transaction_deals SET cohort = ? WHERE deal_id = ? AND cohort IS NULL")
    for (const a of changes.assign) {
      if (assign.run(a.cohort, a.deal_id).changes !== 1) throw new InvalidPlan(`deal ${a.deal_id} was read pending and is not`)
    }
    const insertDeal = prepare(INSERT_DEAL)
    for (const d of changes.deals) insertDeal.run(dealPool(d), ...DEAL_COLUMNS.map((c) => d[c]))
    const insertCohort = prepare(INSERT_COHORT)
    for (const c of changes.cohorts) {
      insertCohort.run(c.cohort, c.series, c.transaction_date, c.deals, c.gpu_count, c.gpu_hours, c.price_hours, c.list_hours)
    }
    const upsert = prepare(`INSERT INTO transaction_series (series, seq, last_cohort) VALUES (?, ?, ?)
      ON CONFLICT (series) DO UPDATE SET seq = excluded.seq, last_cohort = excluded.last_cohort`)
    for (const s of changes.series) upsert.run(s.series, s.seq, s.last)
    const insertRow = prepare(INSERT_ROW)
    for (const { row, cohorts } of changes.rows) {
      const values = transactionFields.map((f) => (f === "is_rolling" ? (row.is_rolling ? 1 : 0) : row[f]))
      // The row's own cohort is the last; a rolling row's earlier cohort is the first.
      insertRow.run(...values, cohorts[cohorts.length - 1]!, cohorts.length > 1 ? cohorts[0]! : null)
    }
  }

  return {
    deals: (ids) => client.read("transactions.deals", () => dealsOf(ids)),

    pending: (pools) => client.read("transactions.pending", () => pendingOf(pools)),

    pendingPools: client.read("transactions.pendingPools", () =>
      prepare("SELECT DISTINCT pool FROM transaction_deals WHERE cohort IS NULL").pluck().all() as Array<string>),

    series: (ids) => client.read("transactions.series", () => seriesOf(ids)),

    // Reads, decision and writes inside one BEGIN IMMEDIATE: no writer comes in between.
    transact: <A, E>(reads: TransactionReads, decide: (view: TransactionView) => Either.Either<Decision<TransactionChanges, A>, E>) =>
      client.transaction<A, E>("transactions.transact", (abort) => {
        const read = { deals: dealsOf(reads.deals), pending: pendingOf(reads.pools) }
        const seriesRead = new Set<string>()
        const decision = decide({
          ...read,
          series: (ids) => {
            for (const id of ids) seriesRead.add(id)
            return seriesOf(ids)
          }
        })
        if (Either.isLeft(decision)) return abort(decision.left)
        const { changes, result } = decision.right
        const fault = transactionChangeFault(reads, read, seriesRead, changes)
        if (fault !== undefined) throw new InvalidPlan(`transactions.transact: the decision ${fault}`)
        write(changes)
        appendEvents(client, changes.rows.map(({ row }) => ({ type: "transaction_blend", row })))
        if (changes.rows.length > 0) version.bump()
        if (changes.mark !== undefined) writeMark(client, changes.mark)
        return result
      }),

    mark: readMark(client, "transactions.mark"),

    version: version.version,

    page: (plan) =>
      client.read("transactions.page", () => {
        const { sql, params } = compileTransactionPage(plan)
        return readRows(prepare, sql, params, transactionFromColumns)
      }),

    summary: client.read("transactions.summary", () => {
      const distinct = (col: string) => prepare(`SELECT DISTINCT ${col} FROM transaction_rows`).pluck().all()
      const gpus = prepare(
        `SELECT gpu_canonical_name, gpu_model, MIN(transaction_date) AS first_transaction_date,
           MAX(transaction_date) AS last_transaction_date, COUNT(*) AS rows
         FROM transaction_rows GROUP BY gpu_canonical_name, gpu_model`
      ).all() as Array<{ gpu_canonical_name: string; gpu_model: string; first_transaction_date: string; last_transaction_date: string; rows: number }>
      // Sorted with JS `<`, as the reference sorts.
      return {
        region_groups: (distinct("region_group") as Array<string>).sort(cmp),
        contract_types: (distinct("contract_type") as Array<string>).sort(cmp),
        tenors: (distinct("tenor_days") as Array<number>).sort((a, b) => a - b),
        gpus: gpus
          .sort((a, b) => cmp(a.gpu_canonical_name, b.gpu_canonical_name) || cmp(a.gpu_model, b.gpu_model))
      }
    }),

    audit: client.read("transactions.audit", () => {
      const members = new Map<string, Array<string>>()
      for (const d of prepare("SELECT cohort, deal_id FROM transaction_deals WHERE cohort IS NOT NULL").all() as Array<{ cohort: string; deal_id: string }>) {
        const list = members.get(d.cohort)
        if (list === undefined) members.set(d.cohort, [d.deal_id])
        else list.push(d.deal_id)
      }
      const rows = prepare("SELECT row_key, cohort, rolled_cohort FROM transaction_rows").all() as Array<{ row_key: string; cohort: string; rolled_cohort: string | null }>
      return rows.sort((a, b) => cmp(a.row_key, b.row_key)).map((r) => ({
        row_key: r.row_key,
        deal_ids: [...(r.rolled_cohort === null ? [] : members.get(r.rolled_cohort) ?? []), ...(members.get(r.cohort) ?? [])].sort(cmp)
      }))
    })
  }
}

/**
 * Migration 3: private deals, cohorts and series, and the published rows with their indexes:
 * by date (the default sort, the window), and for each sort field alone and after one GPU, so
 * a page walks an index in order instead of sorting every match.
 */
export const transactionsMigration: Migration = {
  version: 3,
  name: "aggregated transactions",
  sql: `
-- Private: settled deals, never served. cohort is null while a deal waits for a partner.
CREATE TABLE transaction_deals (
  deal_id TEXT PRIMARY KEY,
  pool TEXT NOT NULL,
  gpu_canonical_name TEXT NOT NULL,
  gpu_model TEXT NOT NULL,
  region_group TEXT NOT NULL,
  contract_type TEXT NOT NULL,
  tenor_days INTEGER NOT NULL,
  gpu_count INTEGER NOT NULL,
  gpu_hours REAL NOT NULL,
  price_usd_per_gpu_hour REAL NOT NULL,
  list_price_usd_per_gpu_hour REAL,
  settlement_date TEXT NOT NULL,
  cohort TEXT
) WITHOUT ROWID;
CREATE INDEX transaction_deals_pending ON transaction_deals(pool, deal_id) WHERE cohort IS NULL;
CREATE INDEX transaction_deals_cohort ON transaction_deals(cohort) WHERE cohort IS NOT NULL;

-- Private: cohorts (deals always published together) with the sums rows are made of.
CREATE TABLE transaction_cohorts (
  cohort TEXT PRIMARY KEY,
  series TEXT NOT NULL,
  transaction_date TEXT NOT NULL,
  deals INTEGER NOT NULL,
  gpu_count INTEGER NOT NULL,
  gpu_hours REAL NOT NULL,
  price_hours REAL NOT NULL,
  list_hours REAL
) WITHOUT ROWID;

-- Private: rows published per series and the latest cohort, which a thin cohort rolls in.
CREATE TABLE transaction_series (
  series TEXT PRIMARY KEY,
  seq INTEGER NOT NULL,
  last_cohort TEXT NOT NULL
) WITHOUT ROWID;

-- Published rows; cohort and rolled_cohort are private and never selected by a page.
CREATE TABLE transaction_rows (
  gpu_model TEXT NOT NULL,
  gpu_canonical_name TEXT NOT NULL,
  region_group TEXT NOT NULL,
  contract_type TEXT NOT NULL,
  tenor_days INTEGER NOT NULL,
  price_usd_per_gpu_hour REAL NOT NULL,
  total_gpu_count INTEGER NOT NULL,
  total_gpu_hours REAL NOT NULL,
  transaction_date TEXT NOT NULL,
  discount_percentage REAL,
  is_rolling INTEGER NOT NULL,
  blend_axis TEXT NOT NULL,
  blend_tenor_days INTEGER NOT NULL,
  blend_region_group TEXT NOT NULL,
  row_key TEXT NOT NULL UNIQUE,
  cohort TEXT NOT NULL,
  rolled_cohort TEXT
);
CREATE INDEX transaction_rows_date ON transaction_rows(transaction_date, row_key);
CREATE INDEX transaction_rows_gpu_date ON transaction_rows(gpu_canonical_name, transaction_date, row_key);
-- Sort orders; the trailing date lets a page check the window without reading the row.
CREATE INDEX transaction_rows_contract_type ON transaction_rows(contract_type, row_key, transaction_date);
CREATE INDEX transaction_rows_gpu_model ON transaction_rows(gpu_model, row_key, transaction_date);
CREATE INDEX transaction_rows_price ON transaction_rows(price_usd_per_gpu_hour, row_key, transaction_date);
CREATE INDEX transaction_rows_region_group ON transaction_rows(region_group, row_key, transaction_date);
CREATE INDEX transaction_rows_tenor_days ON transaction_rows(tenor_days, row_key, transaction_date);
CREATE INDEX transaction_rows_total_gpu_count ON transaction_rows(total_gpu_count, row_key, transaction_date);
CREATE INDEX transaction_rows_gpu_contract_type ON transaction_rows(gpu_canonical_name, contract_type, row_key, transaction_date);
CREATE INDEX transaction_rows_gpu_gpu_model ON transaction_rows(gpu_canonical_name, gpu_model, row_key, transaction_date);
CREATE INDEX transaction_rows_gpu_price ON transaction_rows(gpu_canonical_name, price_usd_per_gpu_hour, row_key, transaction_date);
CREATE INDEX transaction_rows_gpu_region_group ON transaction_rows(gpu_canonical_name, region_group, row_key, transaction_date);
CREATE INDEX transaction_rows_gpu_tenor_days ON transaction_rows(gpu_canonical_name, tenor_days, row_key, transaction_date);
CREATE INDEX transaction_rows_gpu_total_gpu_count ON transaction_rows(gpu_canonical_name, total_gpu_count, row_key, transaction_date);
`
}
