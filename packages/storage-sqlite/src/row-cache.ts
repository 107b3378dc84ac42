import type { PagePlan } from "@gpu-market/core/storage"
import type { SqliteClient } from "./client.js"
import type { DataVersion } from "./data-version.js"
import { type CompiledPage, KEY_CHUNK, padded, placeholders, readRows } from "./page-sql.js"

/** What a page read through the row cache needs to know of its table. */
export interface CachedTable<Row> {
  readonly name: string
  /** The row's unique key column (a version row's own key, never reused, never changed). */
  readonly tie: string
  /** `SELECT <every column in field order> FROM <table>`. */
  readonly select: string
  /** The table's page compiler over `select`, a `SELECT ... FROM <table>` (`versionPageCompiler`). */
  readonly compiler: (select: string) => (plan: PagePlan) => CompiledPage
  readonly fromColumns: (columns: ReadonlyArray<unknown>) => Row
  readonly version: DataVersion
}

/**
 * The largest page read through the row cache: the API's largest page and the row after it. A
 * longer read (an export's batch) meets each row once, so holding its rows would only evict the
 * rows pages keep landing on, and reading keys first then rows by key costs it more than one scan.
 */
const CACHED_PAGE_ROWS = 1_001

/**
 * The pages of a versioned table read through a cache of its rows. A page's statement (the table's
 * own compiler over a `SELECT` of the key alone) runs for the keys of its rows only, which SQLite answers from the index it walks without touching the
 * table; only rows not held are then read whole. Reading a row's 29 columns is most of a page's
 * cost, and queries that differ (another bound, another filter) keep landing on the same rows.
 *
 * The rows held are those of one data version of the type: every write of the type changes the
 * version in the transaction that changes its rows, so a read at another version drops them all.
 * The version, the keys and the missing rows are read in one read transaction, so they come from
 * one snapshot of the file whichever process wrote last. Rows are frozen: the core serialises a
 * frozen row once (`rowsBytes`), and nobody can change a row others are served.
 *
 * At most `capacity` rows are held, oldest read first out; 0 reads every page whole, as is every
 * page longer than `CACHED_PAGE_ROWS`.
 */
export const rowCachedPages = <Row>(client: SqliteClient, table: CachedTable<Row>, capacity: number) => {
  const { prepare } = client
  const wholePage = table.compiler(table.select)
  const keysPage = table.compiler(`SELECT ${table.tie} FROM ${table.name}`)
  // Map order is the order rows were read in: eviction takes from the front.
  const held = new Map<string, Row>()
  let heldAt: string | undefined
  const keyOf = (row: Row) => (row as Record<string, unknown>)[table.tie] as string

  const readMissing = (keys: ReadonlyArray<string>) => {
    for (let i = 0; i < keys.length; i += KEY_CHUNK) {
      const chunk = padded(keys.slice(i, i + KEY_CHUNK))
      const sql = `${table.select} WHERE ${table.tie} IN (${placeholders(chunk.length)})`
      for (const row of readRows(prepare, sql, chunk, table.fromColumns)) held.set(keyOf(row), Object.freeze(row))
    }
  }

  const throughCache = client.db.transaction(({ sql, params }: CompiledPage): Array<Row> => {
    const version = table.version.current()
    if (version !== heldAt) {
      held.clear()
      heldAt = version
    }
    const keys = prepare(sql).pluck(true).all(...params) as Array<string>
    const missing = keys.filter((key) => !held.has(key))
    if (missing.length > 0) readMissing(missing)
    const rows = keys.map((key) => held.get(key)!)
    for (const key of held.keys()) {
      if (held.size <= capacity) break
      held.delete(key)
    }
    return rows
  })

  return (plan: PagePlan): Array<Row> => {
    if (capacity > 0 && plan.limit <= CACHED_PAGE_ROWS) return throughCache(keysPage(plan))
    const { sql, params } = wholePage(plan)
    return readRows(prepare, sql, params, table.fromColumns)
  }
}
