import { fieldsOfKind, type PagePlan, type Position, type Predicate, type TableDef } from "@gpu-market/core/storage"
import type { SqliteClient } from "./client.js"

/**
 * The pieces every store's page compiler shares: the per-type facts (columns, which fields are
 * numbers or text, the tie-breaker, the sort expression) come in as data, and each store keeps
 * its own scope clause and anything else only it needs.
 */

/** A plan this backend will not turn into SQL (an unknown column, a nullable sort). */
export class InvalidPlan extends Error {
  override readonly name = "InvalidPlan"
}

/** How a store reports a plan it refuses. */
export type PlanError = new (message: string) => Error

/** The SQL of one page and the values it binds, in order. */
export interface CompiledPage {
  readonly sql: string
  readonly params: ReadonlyArray<string | number>
}

/** A `WHERE` clause under construction: its terms, joined with AND, and their values in order. */
export interface Clauses {
  readonly where: Array<string>
  readonly params: Array<string | number>
}

/** `n` positional placeholders, comma-separated. */
export const placeholders = (n: number): string => (n === 1 ? "?" : `?${",?".repeat(n - 1)}`)

/** Orders as the reference store does, with JS `<` (not SQLite's byte order). */
export const cmp = (a: string | number, b: string | number): number => (a < b ? -1 : a > b ? 1 : 0)

/**
 * The guard for field names of one row type: they are interpolated into SQL, so only the row's
 * own column names get through. `what` names the row in the error.
 */
export const columnGuard = (fields: ReadonlyArray<string>, what: string, invalid: PlanError = InvalidPlan) => {
  const known: ReadonlySet<string> = new Set(fields)
  return (field: string): string => {
    if (!known.has(field)) throw new invalid(`unknown ${what} field: ${JSON.stringify(field)}`)
    return field
  }
}

/** The one value an equality predicate allows `field` to take, if any. */
export const pinnedValue = (plan: PagePlan, field: string): string | undefined => {
  for (const p of plan.predicates) {
    if (p.field !== field) continue
    if (p.op === "eq") return p.value
    if (p.op === "in" && p.values.length === 1) return p.values[0]
  }
  return undefined
}

/**
 * Whether the keyset position already implies a bound on the sort field: ascending from value
 * `a` means `field >= a`, which implies `field >= v` when `a >= v` (and likewise descending).
 */
const impliedByPosition = (plan: PagePlan, p: Predicate & { readonly op: "gte" | "lte" }): boolean => {
  const after = plan.after
  if (after === undefined || p.field !== plan.sort.by || typeof after.value !== "number") return false
  return plan.sort.order === "asc"
    ? p.op === "gte" && after.value >= p.value
    : p.op === "lte" && after.value <= p.value
}

/** What the predicate clauses need to know of a row type's fields. */
export interface PredicateFields {
  /** The SQL naming `field`; throws for a field the row does not have. */
  readonly column: (field: string) => string
  /**
   * The stored values an `in` / `eq` on `field` can equal, given the predicate's texts. The
   * reference compares with `===`, so a text never equals a number: for a number field, none.
   */
  readonly matchable: (field: string, texts: ReadonlyArray<string>) => ReadonlyArray<string | number>
  /** Whether `field` holds numbers: the reference only orders numbers, so only they take bounds. */
  readonly ordered: (field: string) => boolean
  /**
   * Whether to leave out a bound the keyset position implies, so that SQLite seeks to the
   * position instead of to the bound and walks every row between the two on each later page.
   */
  readonly seekPastBounds: boolean
}

/**
 * The predicate fields of a data type, from its definition: an `in` / `eq` text equals a text
 * column; it equals a boolean column only where the data type compares booleans by their text
 * form (`"true"` / `"false"`), and never a number; only numbers take bounds.
 */
export const predicateFieldsOf = (
  table: TableDef,
  options: { readonly column: (field: string) => string; readonly seekPastBounds: boolean; readonly booleansAsText?: boolean }
): PredicateFields => {
  const text = fieldsOfKind(table, "text")
  const numeric = fieldsOfKind(table, "numeric")
  const boolean = options.booleansAsText === true ? fieldsOfKind(table, "boolean") : new Set<string>()
  return {
    column: options.column,
    matchable: (field, texts) =>
      text.has(field) ? texts : boolean.has(field) ? texts.flatMap((t) => (t === "true" ? [1] : t === "false" ? [0] : [])) : [],
    ordered: (field) => numeric.has(field),
    seekPastBounds: options.seekPastBounds
  }
}

/** Appends one clause per predicate of `plan`; a predicate no row can satisfy becomes `0`. */
export const predicateClauses = (c: Clauses, plan: PagePlan, fields: PredicateFields): void => {
  for (const p of plan.predicates) {
    const col = fields.column(p.field)
    switch (p.op) {
      case "in":
      case "eq": {
        const values = fields.matchable(p.field, p.op === "eq" ? [p.value] : p.values)
        if (values.length === 0) c.where.push("0")
        else if (values.length === 1) {
          // An equality (not a one-item IN) is what the planner pairs with the index order.
          c.where.push(`${col} = ?`)
          c.params.push(values[0]!)
        } else {
          c.where.push(`${col} IN (${placeholders(values.length)})`)
          c.params.push(...values)
        }
        break
      }
      case "gte":
      case "lte":
        if (!fields.ordered(p.field)) c.where.push("0")
        else if (!(fields.seekPastBounds && impliedByPosition(plan, p))) {
          c.where.push(`${col} ${p.op === "gte" ? ">=" : "<="} ?`)
          c.params.push(p.value)
        }
        break
    }
  }
}

/** The sort of one page: the plan's field, the SQL it orders by, and the row's unique tie-breaker. */
export interface PageSort {
  readonly field: string
  readonly sql: string
  readonly tie: string
  readonly desc: boolean
  /** The value an equality pins the sort field to, if any (and if it compares as text). */
  readonly pinned: string | undefined
}

/** Appends the clause that continues after the keyset position `after`. */
export const keysetClause = (c: Clauses, sort: PageSort, after: Position): void => {
  const op = sort.desc ? "<" : ">"
  if (sort.field === sort.tie) {
    c.where.push(`${sort.tie} ${op} ?`)
    c.params.push(after.tie)
  } else if (sort.pinned !== undefined) {
    // An equality pins the sort field, and SQLite would not turn (field, tie) > (v, ?) into a
    // range, so every page would rescan the anchor from its start. The field is constant, so
    // the position compares here instead.
    const d = sort.desc ? -cmp(sort.pinned, after.value) : cmp(sort.pinned, after.value)
    if (d < 0) c.where.push("0")
    else if (d === 0) {
      c.where.push(`${sort.tie} ${op} ?`)
      c.params.push(after.tie)
    }
  } else if (sort.sql !== sort.field) {
    // SQLite seeks an expression index with a plain bound on the expression, not with a row
    // value, so the keyset comparison is spelled out around one.
    c.where.push(`${sort.sql} ${op}= ? AND (${sort.sql} ${op} ? OR ${sort.tie} ${op} ?)`)
    c.params.push(after.value, after.value, after.tie)
  } else {
    // A row value comparison is one range over the (anchor, sort, tie) index.
    c.where.push(`(${sort.sql}, ${sort.tie}) ${op} (?, ?)`)
    c.params.push(after.value, after.tie)
  }
}

/** The `ORDER BY` terms of `sort`: the tie-breaker alone when it is the sort field. */
export const orderBy = (sort: PageSort): string => {
  const dir = sort.desc ? "DESC" : "ASC"
  return sort.field === sort.tie ? `${sort.tie} ${dir}` : `${sort.sql} ${dir}, ${sort.tie} ${dir}`
}

/** Binds the page size, the statement's last value. */
export const limitParam = (c: Clauses, limit: number, invalid: PlanError = InvalidPlan): void => {
  if (!Number.isSafeInteger(limit) || limit < 0) throw new invalid(`invalid limit ${limit}`)
  c.params.push(limit)
}

/** Keys per `IN (...)` statement: well under SQLite's bound-variable limit. */
export const KEY_CHUNK = 256

/** Pads a chunk to a power of two by repeating a key, so a handful of statement shapes serve every size. */
export const padded = (chunk: ReadonlyArray<string>): ReadonlyArray<string> => {
  let size = 1
  while (size < chunk.length) size *= 2
  return size === chunk.length ? chunk : [...chunk, ...Array<string>(size - chunk.length).fill(chunk[0]!)]
}

/**
 * Runs a `SELECT` in raw mode and builds each row from its column array: a literal of fixed
 * shape is much cheaper than better-sqlite3's object rows, which set each property from C++.
 */
export const readRows = <A>(
  prepare: SqliteClient["prepare"],
  sql: string,
  params: ReadonlyArray<unknown>,
  fromColumns: (c: ReadonlyArray<unknown>) => A
): Array<A> => {
  const raw = prepare(sql).raw(true).all(...params) as Array<ReadonlyArray<unknown>>
  const out = new Array<A>(raw.length)
  for (let i = 0; i < raw.length; i++) out[i] = fromColumns(raw[i]!)
  return out
}


/**
 * The scope of a versioned table (`valid_from` / `valid_to`): rows current now, in force at an
 * instant, or opened inside a window.
 */
export const versionScopeClause = (c: Clauses, plan: PagePlan): void => {
  const { where, params } = c
    switch (plan.scope._tag) {
    case "latest":
      // Spelled exactly so, because that is what lets SQLite use the partial current-row indexes.
      where.push("valid_to IS NULL")
      break
    case "asOf":
      where.push("valid_from <= ? AND (valid_to IS NULL OR valid_to > ?)")
      params.push(plan.scope.at, plan.scope.at)
      break
    case "window": {
      // Sorted by valid_from after a position, the position already implies the window edge it
      // walks away from; leaving that edge in makes SQLite seek to it and walk every row up to
      // the position on each later page, instead of seeking to the position.
      // Only when the position itself lies inside that edge: a token's window can be raised to
      // a floor that moved past its position, and then the edge must stay.
      const at = plan.sort.by === "valid_from" ? plan.after?.value : undefined
      const startImplied = at !== undefined && plan.sort.order === "asc" && at >= plan.scope.start
      const endImplied = at !== undefined && plan.sort.order === "desc" && at < plan.scope.end
      if (!startImplied) {
        where.push("valid_from >= ?")
        params.push(plan.scope.start)
      }
      if (!endImplied) {
        where.push("valid_from < ?")
        params.push(plan.scope.end)
      }
      break
    }
  }
}
