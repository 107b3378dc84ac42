import {
  type Decision, fieldsOfKind, nullableFields, type PagePlan, type PeerRead, readView, type TableDef, type TransactVersions, versionChangeFault,
  type VersionChanges, versionEvents, type EventTypes, type VersionKeys, type Versioned, type VersionPoint, type VersionView
} from "@gpu-market/core/storage"
import * as Either from "effect/Either"
import { appendEvents, appendKeyedEvents, type KeyedRows } from "./event-log.js"
import type { SqliteClient } from "./client.js"
import { writeMark } from "./settings.js"
import {
  type Clauses, cmp, columnGuard, type CompiledPage, InvalidPlan, KEY_CHUNK, keysetClause, limitParam, orderBy, padded, type PageSort, pinnedValue,
  placeholders, predicateClauses, predicateFieldsOf, readRows, versionScopeClause
} from "./page-sql.js"

/** How one versioned table is read and written inside a `transact`; every step is synchronous. */
export interface VersionTable<Row extends Versioned> {
  readonly keys: VersionKeys<Row>
  /** The data type's definition: its table's name, row key (`tie`), base key (`scope.of`) and columns in order. */
  readonly def: {
    readonly name: string; readonly tie: string; readonly scope: { readonly of: string }; readonly fields: ReadonlyArray<{ readonly name: string }>
  }
  /** `SELECT <every column in field order> FROM <table>`. */
  readonly select: string
  /** A row from its raw column array, in `select`'s order. */
  readonly fromColumns: (columns: ReadonlyArray<unknown>) => Row
  /** `INSERT` of every column, bound positionally from `columnsOf`. */
  readonly insert: string
  /** A row's values in the order of `def.fields`. */
  readonly columnsOf: (row: Row) => ReadonlyArray<unknown>
  /** Summary writes for an opened row; `once(id)` is true the first time a write names `id`. */
  readonly opened: (row: Row, once: (id: string) => boolean) => void
  /** The change-feed events of its new rows and withdrawals, and how the log names their rows when not by copy. */
  readonly events: EventTypes<Row> & { readonly keyed?: KeyedRows<Row> }
}

/**
 * `transact` over one SQLite table: the reads, the decision and the writes run inside one
 * `BEGIN IMMEDIATE`, so no writer of any process comes in between and nothing is re-checked.
 * A decision that breaks the contract's rules is this code's bug: it throws, rolls back, and
 * dies as a `StorageDefect`.
 */
export const sqliteTransact = <Row extends Versioned>(
  client: SqliteClient,
  operation: string,
  table: VersionTable<Row>,
  afterWrite: () => void
): TransactVersions<Row> => {
  const { prepare } = client
  const base = table.def.scope.of
  /** The rows of `bases` that meet `condition`, a statement per chunk of keys. */
  const rowsOf = (bases: ReadonlyArray<string>, condition: string): Array<Row> => {
    const out: Array<Row> = []
    for (let i = 0; i < bases.length; i += KEY_CHUNK) {
      const chunk = padded(bases.slice(i, i + KEY_CHUNK))
      const sql = `${table.select} WHERE ${base} IN (${placeholders(chunk.length)}) AND ${condition}`
      for (const r of readRows(prepare, sql, chunk, table.fromColumns)) out.push(r)
    }
    return out
  }
  const currentOf = (bases: ReadonlyArray<string>): Array<Row> => rowsOf(bases, "valid_to IS NULL")
  // Versions of a priced thing never share a start, so the one starting last is its latest.
  const latestOf = (bases: ReadonlyArray<string>): Array<Row> =>
    rowsOf(bases, `valid_from = (SELECT MAX(later.valid_from) FROM ${table.def.name} AS later WHERE later.${base} = ${table.def.name}.${base})`)
  const inForceAt = `${table.select} WHERE ${base} = ? AND valid_from <= ? AND (valid_to IS NULL OR valid_to > ?)
    ORDER BY valid_from DESC LIMIT 1`
  const versionAt = (key: string, at: string): Row | undefined => readRows(prepare, inForceAt, [key, at, at], table.fromColumns)[0]
  const closeSql = `UPDATE ${table.def.name} SET valid_to = ? WHERE ${table.def.tie} = ? AND valid_to IS NULL`
  const names = table.def.fields.map((f) => f.name)
  const column = (name: string) => {
    const i = names.indexOf(name)
    if (i < 0) throw new InvalidPlan(`${table.def.name} has no column ${name}`)
    return i
  }
  const peerKeys = table.keys.peers
  const peerColumn = peerKeys === undefined ? undefined : names[column(peerKeys.field)]
  const peersOf = ({ values, from }: PeerRead): Array<Row> => {
    const out: Array<Row> = []
    const unique = [...new Set(values)]
    for (let i = 0; i < unique.length; i += KEY_CHUNK) {
      const chunk = padded(unique.slice(i, i + KEY_CHUNK))
      const sql = `${table.select} WHERE ${peerColumn} IN (${placeholders(chunk.length)}) AND (valid_to IS NULL OR valid_to > ?)`
      for (const r of readRows(prepare, sql, [...chunk, from], table.fromColumns)) out.push(r)
    }
    return out
  }
  const restatable = (peerKeys?.restatable ?? []).map(column)
  const restateSql = `UPDATE ${table.def.name} SET ${restatable.map((i) => `${names[i]} = ?`).join(", ")} WHERE ${table.def.tie} = ?`

  const write = (changes: VersionChanges<Row>) => {
    // Restated before closed: a row the change closes keeps its new end.
    for (const r of changes.restate ?? []) {
      const columns = table.columnsOf(r)
      const key = table.keys.key(r)
      const changed = prepare(restateSql).run(...restatable.map((i) => columns[i]), key).changes
      if (changed !== 1) throw new InvalidPlan(`${table.def.name} row ${key} was read and is not stored`)
    }
    const close = prepare(closeSql)
    for (const c of changes.close) {
      if (close.run(c.valid_to, c.key).changes !== 1) throw new InvalidPlan(`${table.def.name} row ${c.key} was read current and is not`)
    }
    const insert = prepare(table.insert)
    // Inserted in base key order (a stable sort: one priced thing's rows keep theirs): the indexes
    // a write reads through lead with it, so each insert lands next to the one before instead of on
    // a page at random, which makes a bulk load's writes cheaper per row (BENCHMARKS.md).
    const byBase = changes.open.length > 1 ? [...changes.open].sort((a, b) => cmp(table.keys.base(a), table.keys.base(b))) : changes.open
    for (const r of byBase) insert.run(table.columnsOf(r))
    // Summary rows in the change's order: the first row seen for a GPU names its manufacturer.
    // Those already written in this change are skipped; a batch repeats the same few values a lot.
    const seen = new Set<string>()
    const once = (id: string) => (seen.has(id) ? false : (seen.add(id), true))
    for (const r of changes.open) table.opened(r, once)
  }

  return <A, E>(
    points: ReadonlyArray<VersionPoint>,
    decide: (view: VersionView<Row>) => Either.Either<Decision<VersionChanges<Row>, A>, E>,
    peers?: (view: VersionView<Row>) => PeerRead | undefined
  ) =>
    client.transaction<A, E>(operation, (abort) => {
      const view = readView(points, table.keys.base, { current: currentOf, latest: latestOf, versionAt, peers: peersOf }, peers)
      const decision = decide(view)
      if (Either.isLeft(decision)) return abort(decision.left)
      const { changes, result } = decision.right
      const fault = versionChangeFault(points, view, changes, table.keys)
      if (fault !== undefined) throw new InvalidPlan(`${operation}: the decision ${fault}`)
      if (changes.close.length > 0 || changes.open.length > 0 || (changes.restate?.length ?? 0) > 0) {
        write(changes)
        const events = versionEvents(table.events, table.keys, view, changes)
        if (table.events.keyed === undefined) appendEvents(client, events)
        else appendKeyedEvents(client, table.events.keyed, events)
        afterWrite()
      }
      if (changes.mark !== undefined) writeMark(client, changes.mark)
      return result
    })
}

/**
 * The page compiler of a versioned table, from its definition: one statement per plan, whose
 * text depends only on the plan's shape (scope, fields, list lengths, sort, whether there is a
 * position); values are bound, so each shape is prepared once, and pages continue from the
 * keyset position, never an OFFSET. A sort by a nullable or boolean field is refused: the
 * reference and SQL do not agree on its order.
 */
export const versionPageCompiler = (
  def: TableDef & { readonly tie: string },
  select: string,
  options: { readonly booleansAsText?: boolean } = {}
): (plan: PagePlan) => CompiledPage => {
  const column = columnGuard(def.fields.map((f) => f.name), def.name)
  const predicateFields = predicateFieldsOf(def, { column, seekPastBounds: true, ...options })
  const numeric = fieldsOfKind(def, "numeric")
  const unsortable = new Set([...nullableFields(def), ...fieldsOfKind(def, "boolean")])
  return (plan) => {
    const c: Clauses = { where: [], params: [] }
    versionScopeClause(c, plan)
    predicateClauses(c, plan, predicateFields)
    const by = column(plan.sort.by)
    if (unsortable.has(by)) throw new InvalidPlan(`cannot sort ${def.name} by ${by}`)
    // Sorting by a field an equality pins (a GPU anchor sorted by GPU) seeks within the pinned value.
    const pinned = plan.after === undefined || numeric.has(by) ? undefined : pinnedValue(plan, by)
    const sort: PageSort = { field: by, sql: by, tie: def.tie, desc: plan.sort.order === "desc", pinned }
    if (plan.after !== undefined) keysetClause(c, sort, plan.after)
    limitParam(c, plan.limit)
    return { sql: `${select} WHERE ${c.where.join(" AND ")} ORDER BY ${orderBy(sort)} LIMIT ?`, params: c.params }
  }
}
