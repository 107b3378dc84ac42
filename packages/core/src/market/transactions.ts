import * as Effect from "effect/Effect"
import { EventLogStore } from "../storage/event-log.js"
import { collection, type EndpointDef, type MarketRequest } from "../query/collection.js"
import { PageTokens } from "../query/page-token.js"
import { PageCache } from "./page-cache.js"
import { bounds, list, Slug } from "../query/filters.js"
import { type AggregatedTransaction, BlendAxis, type TransactionMetadata } from "../schema/transaction.js"
import type { Predicate } from "../storage/plan.js"
import { TransactionStore } from "../storage/transactions.js"
import { metadataBody, type MetadataRequest } from "./metadata.js"
import { pagedEndpoints } from "./pages.js"
import { transactionTable } from "../storage/tables.js"

/** The aggregated transaction type: its filters, sorts and tie-breaker. It needs no anchor. */
export const transactionsCollection = collection({
  dataType: "gpu_rental_transactions",
  service: "transactions",
  params: {
    gpu_canonical_name: list("GPU slugs", Slug),
    region_group: list("region groups", Slug),
    contract_type: list("contract types", Slug),
    ...bounds("total_gpu_count")
  },
  sortFields: transactionTable.sortable,
  tieBreaker: transactionTable.tie,
  anchors: []
})

/** Transactions are events: `/history` is their only paged endpoint. */
const history = {
  name: "history", defaultSort: { by: "transaction_date", order: "desc" }, needsAnchor: false, defaultSpanDays: 90
} as const satisfies EndpointDef

/** The type's paged endpoints: only `/history`. */
export const endpoints = { history } as const

const pages = pagedEndpoints(transactionsCollection, endpoints, "Transactions")

const noPredicates = () => Effect.succeed<ReadonlyArray<Predicate>>([])

/** GPU rental aggregated transactions: `/history` and `/metadata` (no `/latest`, no `/as-of`). */
export class Transactions extends Effect.Service<Transactions>()("Market/Transactions", {
  effect: Effect.gen(function* () {
    const store = yield* TransactionStore
    const tokens = yield* PageTokens
    const cache = yield* PageCache
    const events = yield* EventLogStore
    const pageOf = pages<AggregatedTransaction>({ tokens, resolve: noPredicates, page: store.page, version: store.version, cache, head: events.head })

    return {
      /**
       * Rows whose `transaction_date` falls in `[start, end)` (a date counts at its 00:00 UTC);
       * needs historical access.
       */
      history: (request: MarketRequest) => pageOf.page("history", request),
      /**
       * Every row of a paged query, read from one state of the store, with the change feed's
       * event id of that state (see `RowExport`).
       */
      export: (endpoint: keyof typeof endpoints, request: MarketRequest) => pageOf.export(endpoint, request),
      /** Value sets, per-GPU coverage and the caller's history floor; any grant of the type reads it. */
      metadata: Effect.fn("Transactions.metadata")((request: MetadataRequest) =>
        metadataBody(request, "gpu_rental_transactions", store.summary,
          (summary): TransactionMetadata["data"] => ({
            region_groups: summary.region_groups,
            contract_types: summary.contract_types,
            tenors: summary.tenors,
            blend_axes: BlendAxis.literals,
            gpus: summary.gpus
          })
        )
      )
    } as const
  }),
  dependencies: [PageCache.Default]
}) {}
