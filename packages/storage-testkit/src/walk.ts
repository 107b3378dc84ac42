import { assert } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { type PagePlan, type Predicate, type Scope, sortValue } from "@gpu-market/core/storage"

/**
 * Follows keyset positions from the first page of `plan` to the last (at most 1000 pages), as a
 * caller would: each position is the last row's sort value and its `tie` field.
 */
export const walk = <Row extends Readonly<Record<string, unknown>>, E>(
  page: (plan: PagePlan) => Effect.Effect<ReadonlyArray<Row>, E>,
  plan: PagePlan,
  tie: keyof Row & string
) =>
  Effect.gen(function* () {
    const pages: Array<ReadonlyArray<Row>> = []
    let after: PagePlan["after"] = undefined
    for (let i = 0; i < 1000; i++) {
      const rows: ReadonlyArray<Row> = yield* page({ ...plan, after })
      pages.push(rows)
      if (rows.length < plan.limit) break
      const last = rows[rows.length - 1]!
      after = { value: sortValue(last, plan.sort.by), tie: last[tie] as string }
    }
    return pages
  })

/** The plans `assertPagesMatchReference` tries: every scope × extra predicates × sort × order. */
export interface PlanMatrix {
  readonly scopes: ReadonlyArray<Scope>
  /** The predicate every plan carries, keeping to the test's own rows. */
  readonly mine: Predicate
  readonly extra: ReadonlyArray<ReadonlyArray<Predicate>>
  readonly sorts: ReadonlyArray<string>
  /** The page size. */
  readonly limit: number
}

/**
 * Asserts that, for every plan of `matrix`, walking the store's pages gives exactly the
 * reference's one-page answer over `rows`, in pages of at most `limit` rows. Returns how many
 * rows were compared in all.
 */
export const assertPagesMatchReference = <Row extends Readonly<Record<string, unknown>>, E>(
  page: (plan: PagePlan) => Effect.Effect<ReadonlyArray<Row>, E>,
  evaluate: (rows: ReadonlyArray<Row>, plan: PagePlan) => ReadonlyArray<Row>,
  rows: ReadonlyArray<Row>,
  tie: keyof Row & string,
  matrix: PlanMatrix
) =>
  Effect.gen(function* () {
    let compared = 0
    const { scopes, mine, extra, sorts, limit } = matrix
    for (const scope of scopes) for (const preds of extra) for (const by of sorts) for (const order of ["asc", "desc"] as const) {
      const plan: PagePlan = { scope, predicates: [mine, ...preds], sort: { by, order }, after: undefined, limit }
      const pages = yield* walk(page, plan, tie)
      const expected = evaluate(rows, { ...plan, limit: rows.length })
      assert.deepStrictEqual(pages.flat(), expected, `${JSON.stringify(scope)} ${JSON.stringify(preds)} ${by} ${order}`)
      assert.isTrue(pages.every((p) => p.length <= limit))
      compared += expected.length
    }
    return compared
  })
