import {
  basesOf, type Decision, inForceLookup, stalePoints, type TransactVersions, versionChangeFault, type VersionChanges, type VersionKeys,
  type Versioned, type VersionPoint, type VersionView
} from "@gpu-market/core/storage"
import * as Either from "effect/Either"
import type { SqliteClient } from "./client.js"
import { InvalidPlan, KEY_CHUNK, padded, placeholders, readRows } from "./page-sql.js"

/** How one versioned table is read and written inside a `transact`; every step is synchronous. */
export interface VersionTable<Row> {
  readonly keys: VersionKeys<Row>
  /** The data type's definition: its table's name, row key (`tie`) and base key (`scope.of`) columns. */
  readonly def: { readonly name: string; readonly tie: string; readonly scope: { readonly of: string } }
  /** `SELECT <every column in field order> FROM <table>`. */
  readonly select: string
  /** A row from its raw column array, in `select`'s order. */
  readonly fromColumns: (columns: ReadonlyArray<unknown>) => Row
  /** `INSERT` of every column, bound positionally from `columnsOf`. */
  readonly insert: string
  readonly columnsOf: (row: Row) => ReadonlyArray<unknown>
  /** Summary writes for an opened row; `once(id)` is true the first time a write names `id`. */
  readonly opened: (row: Row, once: (id: string) => boolean) => void
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
  const currentOf = (bases: ReadonlyArray<string>): Array<Row> => {
    const out: Array<Row> = []
    for (let i = 0; i < bases.length; i += KEY_CHUNK) {
      const chunk = padded(bases.slice(i, i + KEY_CHUNK))
      const sql = `${table.select} WHERE valid_to IS NULL AND ${table.def.scope.of} IN (${placeholders(chunk.length)})`
      for (const r of readRows(prepare, sql, chunk, table.fromColumns)) out.push(r)
    }
    return out
  }
  const inForceAt = `${table.select} WHERE ${table.def.scope.of} = ? AND valid_from <= ? AND (valid_to IS NULL OR valid_to > ?)
    ORDER BY valid_from DESC LIMIT 1`
  const versionAt = (base: string, at: string): Row | undefined => readRows(prepare, inForceAt, [base, at, at], table.fromColumns)[0]
  const closeSql = `UPDATE ${table.def.name} SET valid_to = ? WHERE ${table.def.tie} = ? AND valid_to IS NULL`

  const write = (changes: VersionChanges<Row>) => {
    const close = prepare(closeSql)
    for (const c of changes.close) {
      if (close.run(c.valid_to, c.key).changes !== 1) throw new InvalidPlan(`${table.def.name} row ${c.key} was read current and is not`)
    }
    const insert = prepare(table.insert)
    // Summary rows already written in this change; a batch repeats the same few values a lot.
    const seen = new Set<string>()
    const once = (id: string) => (seen.has(id) ? false : (seen.add(id), true))
    for (const r of changes.open) {
      insert.run(table.columnsOf(r))
      table.opened(r, once)
    }
  }

  return <A, E>(
    points: ReadonlyArray<VersionPoint>,
    decide: (view: VersionView<Row>) => Either.Either<Decision<VersionChanges<Row>, A>, E>
  ) =>
    client.transaction<A, E>(operation, (abort) => {
      const current = currentOf(basesOf(points))
      const found = stalePoints(points, current, table.keys.base).map((p) => [p, versionAt(p.base, p.at)] as const)
      const view: VersionView<Row> = { current, inForce: inForceLookup(found) }
      const decision = decide(view)
      if (Either.isLeft(decision)) return abort(decision.left)
      const { changes, result } = decision.right
      const fault = versionChangeFault(points, view, changes, table.keys)
      if (fault !== undefined) throw new InvalidPlan(`${operation}: the decision ${fault}`)
      if (changes.close.length > 0 || changes.open.length > 0) {
        write(changes)
        afterWrite()
      }
      return result
    })
}
