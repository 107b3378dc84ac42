import { cmp } from "./rules.js"
import type { SummaryDef } from "./table.js"

/** One group's summary (`SummaryDef`), its values in first-seen order. */
export interface GroupSummary {
  /** The group's `groupBy` values, in their order. */
  readonly key: ReadonlyArray<unknown>
  /** Distinct non-null values of each `groupValues` field, in the order rows named them. */
  readonly values: ReadonlyMap<string, ReadonlySet<unknown>>
  /** The first and last `span` date and the number of rows. */
  readonly span: { readonly first: string; readonly last: string; readonly rows: number }
  /** How many distinct `distinct` values its rows hold. */
  readonly distinct: number
  /** Whether one of its rows is current. */
  readonly listed: boolean
}

/** A summary of rows: distinct values over all rows, and the groups ordered by key. */
export interface RowSummary {
  readonly values: ReadonlyMap<string, ReadonlySet<unknown>>
  readonly groups: ReadonlyArray<GroupSummary>
}

const distinctOf = (fields: ReadonlyArray<string>) => new Map(fields.map((f) => [f, new Set<unknown>()]))

/** The reference summary of `rows` as `def` says: a scan, what every backend's summary must equal. */
export const summarise = (def: SummaryDef, rows: Iterable<Readonly<Record<string, unknown>>>): RowSummary => {
  const values = distinctOf(def.values)
  const groups = new Map<string, {
    key: ReadonlyArray<unknown>; values: Map<string, Set<unknown>>; span: { first: string; last: string; rows: number }
    distinct: Set<unknown>; listed: boolean
  }>()
  for (const r of rows) {
    for (const [f, seen] of values) if (r[f] !== null) seen.add(r[f])
    const key = def.groupBy.map((f) => r[f])
    const id = JSON.stringify(key)
    const date = def.span === null ? "" : String(r[def.span])
    let g = groups.get(id)
    if (g === undefined) {
      g = { key, values: distinctOf(def.groupValues), span: { first: date, last: date, rows: 0 }, distinct: new Set(), listed: false }
      groups.set(id, g)
    }
    for (const [f, seen] of g.values) if (r[f] !== null) seen.add(r[f])
    if (date < g.span.first) g.span.first = date
    if (date > g.span.last) g.span.last = date
    g.span.rows++
    if (def.distinct !== null) g.distinct.add(r[def.distinct])
    if (def.listed && r.valid_to === null) g.listed = true
  }
  const byKey = (a: GroupSummary, b: GroupSummary) => {
    for (let i = 0; i < a.key.length; i++) {
      const c = cmp(a.key[i] as string, b.key[i] as string)
      if (c !== 0) return c
    }
    return 0
  }
  return {
    values,
    groups: [...groups.values()].map((g): GroupSummary => ({ ...g, distinct: g.distinct.size })).sort(byKey)
  }
}

/** A field's distinct values, sorted as every backend sorts them. */
export const sortedValues = <A>(summary: { readonly values: ReadonlyMap<string, ReadonlySet<unknown>> }, field: string): Array<A> =>
  [...(summary.values.get(field) ?? [])].sort((a, b) => cmp(a as string, b as string)) as Array<A>
