import * as Effect from "effect/Effect"
import type { MarketError } from "../errors.js"
import type { RentalPrice } from "../schema/rental-price.js"
import type { RentalPriceStore } from "../storage/contract.js"
import type { Predicate, Scope } from "../storage/plan.js"
import { unavailable } from "./storage.js"

/** Rows read from the store per page while a walk goes through a market. */
const ROWS_PER_READ = 10_000

/**
 * Hands `visit` every rental row of `scope` matching `predicates`, one GPU at a time (those the
 * predicates name, else every GPU the store knows), read a page at a time through the store's
 * keyset pages: a GPU is the anchor every backend indexes, so each page is an index range, and a
 * walk over a large market holds one page of rows. Current rows are read by price, as `/latest`
 * reads them; rows of the past by `valid_from`, as `/history` does.
 */
export const eachRentalRow = (
  store: RentalPriceStore["Type"],
  scope: Scope,
  predicates: ReadonlyArray<Predicate>,
  visit: (row: RentalPrice) => void
): Effect.Effect<void, MarketError> =>
  Effect.gen(function* () {
    if (predicates.some((p) => p.op === "in" && p.values.length === 0)) return
    const named = predicates.find((p) => p.op === "in" && p.field === "gpu_canonical_name")
    const gpus = named?.op === "in" ? named.values : (yield* Effect.mapError(store.gpus, unavailable)).map((g) => g.gpu_canonical_name)
    const rest = predicates.filter((p) => p !== named)
    const sort = { by: scope._tag === "latest" ? "price_usd_per_gpu_hour" : "valid_from", order: "asc" } as const
    for (const gpu of gpus) {
      const plan = { scope, predicates: [{ op: "in" as const, field: "gpu_canonical_name", values: [gpu] }, ...rest], sort, limit: ROWS_PER_READ }
      let after: { readonly value: string | number; readonly tie: string } | undefined
      for (;;) {
        const page = yield* Effect.mapError(store.page({ ...plan, after }), unavailable)
        for (const row of page) visit(row)
        if (page.length < ROWS_PER_READ) break
        const last = page[page.length - 1]!
        after = { value: last[sort.by], tie: last.product_key }
      }
    }
  })
