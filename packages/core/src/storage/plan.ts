import type { SortOrder } from "../schema/envelope.js"

/**
 * What storage executes: normalised predicates, a scope in time, a sort with its keyset
 * position, and a limit. Storage never returns more than `limit` rows and never returns rows for
 * the core to filter.
 */

/** A predicate on one row field. Field names come from the data type's definition, never a caller. */
export type Predicate =
  | { readonly op: "in"; readonly field: string; readonly values: ReadonlyArray<string> }
  | { readonly op: "eq"; readonly field: string; readonly value: string }
  | { readonly op: "gte"; readonly field: string; readonly value: number }
  | { readonly op: "lte"; readonly field: string; readonly value: number }

/**
 * Which versions of a row are in play. `latest`: rows in force now (`valid_to` null).
 * `asOf`: rows in force at `at`. `window`: rows whose version started in `[start, end)`.
 * Instants are in the stored fixed-width form, so they compare as text.
 */
export type Scope =
  | { readonly _tag: "latest" }
  | { readonly _tag: "asOf"; readonly at: string }
  | { readonly _tag: "window"; readonly start: string; readonly end: string }

/**
 * A keyset position: the last row's sort value and its unique tie-breaker. A null sort value
 * sorts as the empty string (first ascending, last descending); text filters never hold "".
 */
export interface Position {
  readonly value: string | number
  readonly tie: string
}

/**
 * One page to fetch. Rows are ordered by `(sort.by, tie-breaker)`, both in `sort.order`, with a
 * null sort value ordered as the empty string.
 */
export interface PagePlan {
  readonly scope: Scope
  readonly predicates: ReadonlyArray<Predicate>
  readonly sort: { readonly by: string; readonly order: SortOrder }
  readonly after: Position | undefined
  readonly limit: number
}

/** A row's value for sorting and keyset positions: null sorts as the empty string. */
export const sortValue = (row: Readonly<Record<string, unknown>>, field: string): string | number =>
  (row[field] ?? "") as string | number
