import { Clock, Effect, Schema } from "effect"
import { reportedHistoryStart, requireGrant } from "../auth/entitlements"
import { StorageUnavailable } from "../errors"
import { type CollectionDef, endpointSchema, type EndpointDef, type MarketRequest, runPage } from "../query/collection"
import { PageTokens } from "../query/page-token"
import { Bound, CommaList, refuseParameters } from "../query/params"
import { MICROS_PER_MS } from "../query/time"
import { type AggregatedTransaction, BlendAxis, type TransactionMetadata } from "../schema/transaction"
import type { StorageError } from "../storage/contract"
import type { Predicate } from "../storage/plan"
import { TransactionStore } from "../storage/transactions"

const Slug = Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,99}$/))

const list = (param: string, what: string) => ({ param, field: param, kind: "list", schema: CommaList(Slug, what) }) as const

/** The aggregated transaction type: its filters, sorts and tie-breaker. It needs no anchor. */
export const transactionsCollection: CollectionDef = {
  dataType: "gpu_rental_transactions",
  basePath: "/v2/gpu/rental/transactions/aggregated",
  filters: [
    list("gpu_canonical_name", "GPU slugs"),
    list("region_group", "region groups"),
    list("contract_type", "contract types"),
    { param: "min_total_gpu_count", field: "total_gpu_count", kind: "min", schema: Bound },
    { param: "max_total_gpu_count", field: "total_gpu_count", kind: "max", schema: Bound }
  ],
  extraParams: {},
  sortFields: ["contract_type", "gpu_model", "price_usd_per_gpu_hour", "region_group", "tenor_days", "total_gpu_count", "transaction_date"],
  tieBreaker: "row_key",
  anchors: []
}

/** Transactions are events: `/history` is their only paged endpoint. */
const history = {
  name: "history", defaultSort: { by: "transaction_date", order: "desc" }, needsAnchor: false, defaultSpanDays: 90
} as const satisfies EndpointDef

const historySchema = endpointSchema(transactionsCollection, history)

const noPredicates = () => Effect.succeed<ReadonlyArray<Predicate>>([])

const unavailable = (e: StorageError) =>
  new StorageUnavailable({ detail: `storage is unavailable (${e.operation}); try again shortly` })

/** GPU rental aggregated transactions: `/history` and `/metadata` (no `/latest`, no `/as-of`). */
export class Transactions extends Effect.Service<Transactions>()("Market/Transactions", {
  effect: Effect.gen(function* () {
    const store = yield* TransactionStore
    const tokens = yield* PageTokens
    const now = Effect.map(Clock.currentTimeMillis, (ms) => ms * MICROS_PER_MS)

    return {
      /**
       * Rows whose `transaction_date` falls in `[start, end)` (a date counts at its 00:00 UTC);
       * needs historical access.
       */
      history: Effect.fn("Transactions.history")((request: MarketRequest) =>
        Effect.flatMap(now, (now) =>
          runPage<AggregatedTransaction>({
            collection: transactionsCollection,
            endpoint: history,
            schema: historySchema,
            request,
            tokens,
            now,
            resolve: noPredicates,
            page: store.page
          }))),
      /** Value sets, per-GPU coverage and the caller's history floor; any grant of the type reads it. */
      metadata: Effect.fn("Transactions.metadata")(function* (request: Pick<MarketRequest, "principal" | "query">) {
        const principal = request.principal
        yield* requireGrant(principal, transactionsCollection.dataType)
        yield* refuseParameters(request.query)
        const summary = yield* Effect.mapError(store.summary, unavailable)
        const body: TransactionMetadata = {
          data_type: "gpu_rental_transactions",
          history_starts_at: reportedHistoryStart(principal, transactionsCollection.dataType, yield* now),
          data: {
            region_groups: summary.region_groups,
            contract_types: summary.contract_types,
            tenors: summary.tenors,
            blend_axes: BlendAxis.literals,
            gpus: summary.gpus
          }
        }
        return body
      })
    } as const
  })
}) {}
