import * as Effect from "effect/Effect"
import type { MarketError } from "../errors.js"
import type { RentalPrice } from "../schema/rental-price.js"
import type { RentalPriceStore } from "../storage/contract.js"
import type { Predicate, Scope } from "../storage/plan.js"
import { unavailable } from "./storage.js"

/** Rows read from the store per page while a walk goes through a market. */
const ROWS_PER_READ = 10_000

/**
 * Hands `visit` every rental row of `scope` matching `predicates`, read a page at a time through
 * the store's keyset pages (by GPU), so a walk over a large market holds one page of rows.
 */
export const eachRentalRow = (
  store: RentalPriceStore["Type"],
  scope: Scope,
  predicates: ReadonlyArray<Predicate>,
  visit: (row: RentalPrice) => void
): Effect.Effect<void, MarketError> =>
  Effect.gen(function* () {
    if (predicates.some((p) => p.op === "in" && p.values.length === 0)) return
    const sort = { by: "gpu_canonical_name", order: "asc" } as const
    let after: { readonly value: string; readonly tie: string } | undefined
    for (;;) {
      const page = yield* Effect.mapError(store.page({ scope, predicates, sort, after, limit: ROWS_PER_READ }), unavailable)
      for (const row of page) visit(row)
      if (page.length < ROWS_PER_READ) return
      const last = page[page.length - 1]!
      after = { value: last.gpu_canonical_name, tie: last.product_key }
    }
  })
