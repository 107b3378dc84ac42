import { type PagePlan, type Position, type Predicate, type Scope, sortValue } from "./plan.js"

/**
 * How rows compare, filter and order: the rules every backend reproduces, whatever it stores.
 * The in-memory reference applies them to every row; SQLite and Redis compile or apply them
 * to the rows their indexes pick.
 */

/** Orders two values with JS `<`, the order every backend must reproduce. */
export const cmp = (a: string | number, b: string | number): number => (a < b ? -1 : a > b ? 1 : 0)

/** Whether a row satisfies every predicate. */
export const matchesPredicates = (row: Readonly<Record<string, unknown>>, predicates: ReadonlyArray<Predicate>): boolean =>
  predicates.every((p) => {
    const v = row[p.field]
    switch (p.op) {
      case "in": return p.values.includes(v as string)
      case "eq": return v === p.value
      case "gte": return typeof v === "number" && v >= p.value
      case "lte": return typeof v === "number" && v <= p.value
    }
  })

/** Whether a versioned row (`valid_from`/`valid_to`) is in a scope. */
export const inVersionScope = (row: { readonly valid_from: string; readonly valid_to: string | null }, scope: Scope): boolean => {
  switch (scope._tag) {
    case "latest": return row.valid_to === null
    case "asOf": return row.valid_from <= scope.at && (row.valid_to === null || row.valid_to > scope.at)
    case "window": return row.valid_from >= scope.start && row.valid_from < scope.end
  }
}

/** Orders rows by `(sort.by, tie)` in `sort.order` and keeps those strictly after `after`. */
export const orderAndSeek = <Row extends Readonly<Record<string, unknown>>>(
  rows: ReadonlyArray<Row>,
  plan: PagePlan,
  tie: string
): Array<Row> => {
  const dir = plan.sort.order === "asc" ? 1 : -1
  const key = (r: Row): Position => ({ value: sortValue(r, plan.sort.by), tie: r[tie] as string })
  const compare = (a: Position, b: Position) => dir * (cmp(a.value, b.value) || cmp(a.tie, b.tie))
  const after = plan.after
  return rows
    .filter((r) => after === undefined || compare(key(r), after) > 0)
    .sort((a, b) => compare(key(a), key(b)))
    .slice(0, plan.limit)
}

/** The instant a day starts, in the stored fixed-width form: where a window places the day. */
export const dayStart = (date: string): string => `${date}T00:00:00.000000Z`

/** The dates one group of rows covers, as metadata summaries report them. */
export interface DateSpan<Group> {
  /** What the group is (a GPU, a GPU and model, a listing), from its first row. */
  readonly group: Group
  readonly first: string
  readonly last: string
  readonly rows: number
}

/** First and last date and the number of rows of each group, in groups' first-seen order. */
export class DateSpans<Group> {
  private readonly spans = new Map<string, { group: Group; first: string; last: string; rows: number }>()

  /** Counts one row dated `date` in the group keyed `key`; `group` names the group when it is new. */
  add(key: string, date: string, group: () => Group): void {
    const span = this.spans.get(key)
    if (span === undefined) {
      this.spans.set(key, { group: group(), first: date, last: date, rows: 1 })
      return
    }
    if (date < span.first) span.first = date
    if (date > span.last) span.last = date
    span.rows++
  }

  values(): IterableIterator<DateSpan<Group>> {
    return this.spans.values()
  }
}
