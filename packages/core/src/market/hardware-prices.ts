import { Clock, Effect, Schema } from "effect"
import { reportedHistoryStart, requireGrant } from "../auth/entitlements"
import { StorageUnavailable } from "../errors"
import {
  type CollectionDef, endpointSchema, type EndpointDef, type MarketRequest, runPage
} from "../query/collection"
import { PageTokens } from "../query/page-token"
import { Bound, CommaList, refuseParameters } from "../query/params"
import { MICROS_PER_MS } from "../query/time"
import type { HardwarePriceMetadata } from "../schema/hardware-metadata"
import type { HardwarePrice } from "../schema/hardware-price"
import type { StorageError } from "../storage/contract"
import { HardwarePriceStore } from "../storage/hardware"
import type { Predicate } from "../storage/plan"

const withMessage = (message: string) => Schema.annotations({ message: () => ({ message, override: true }) })
const GpuSlug = Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,99}$/))
const ClassValue = Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,63}$/))
const Market = Schema.String.pipe(Schema.pattern(/^(primary|secondary)$/))
const Country = Schema.String.pipe(Schema.pattern(/^[A-Z]{2}$/))
const ListingKeyParam = Schema.String.pipe(
  Schema.pattern(/^[0-9a-f]{32}$/),
  withMessage("expected a listing_key from a previous response: 32 lower-case hex characters")
)

const list = (param: string, what: string, item: Schema.Schema<string, string> = ClassValue) =>
  ({ param, field: param, kind: "list", schema: CommaList(item, what) }) as const

/** The hardware price type: its filters, sorts and tie-breaker. No filter names a seller. */
export const hardwarePricesCollection: CollectionDef = {
  dataType: "gpu_hardware_prices",
  basePath: "/v2/gpu/hardware/prices",
  filters: [
    list("gpu_canonical_name", "GPU slugs", GpuSlug),
    { param: "listing_key", field: "listing_key", kind: "single", schema: ListingKeyParam },
    list("condition", "lower-case conditions"),
    list("market", "markets (primary, secondary)", Market),
    list("channel", "lower-case channels"),
    list("transaction_level", "lower-case transaction levels"),
    list("stock_status", "lower-case stock statuses"),
    list("country", "upper-case ISO 3166 alpha-2 country codes", Country),
    list("country_group", "lower-case country groups"),
    { param: "min_price_usd", field: "price_usd", kind: "min", schema: Bound },
    { param: "max_price_usd", field: "price_usd", kind: "max", schema: Bound }
  ],
  extraParams: {},
  sortFields: ["condition", "gpu_canonical_name", "observed_date", "price_usd"],
  tieBreaker: "observation_id",
  anchors: []
}

const endpoints = {
  latest: { name: "latest", defaultSort: { by: "gpu_canonical_name", order: "asc" }, needsAnchor: false },
  asOf: { name: "as-of", defaultSort: { by: "gpu_canonical_name", order: "asc" }, needsAnchor: false },
  history: { name: "history", defaultSort: { by: "observed_date", order: "desc" }, needsAnchor: false, defaultSpanDays: 90 }
} as const satisfies Record<string, EndpointDef>

const schemas = {
  latest: endpointSchema(hardwarePricesCollection, endpoints.latest),
  asOf: endpointSchema(hardwarePricesCollection, endpoints.asOf),
  history: endpointSchema(hardwarePricesCollection, endpoints.history)
}

const unavailable = (e: StorageError) =>
  new StorageUnavailable({ detail: `storage is unavailable (${e.operation}); try again shortly` })

const noExtraPredicates = () => Effect.succeed<ReadonlyArray<Predicate>>([])

/** GPU hardware prices: `/latest`, `/as-of`, `/history` and `/metadata`. */
export class HardwarePrices extends Effect.Service<HardwarePrices>()("Market/HardwarePrices", {
  effect: Effect.gen(function* () {
    const store = yield* HardwarePriceStore
    const tokens = yield* PageTokens

    const now = Effect.map(Clock.currentTimeMillis, (ms) => ms * MICROS_PER_MS)
    const pageOf = (endpoint: keyof typeof endpoints, request: MarketRequest) =>
      Effect.flatMap(now, (now) =>
        runPage<HardwarePrice>({
          collection: hardwarePricesCollection,
          endpoint: endpoints[endpoint],
          schema: schemas[endpoint],
          request,
          tokens,
          now,
          resolve: noExtraPredicates,
          page: store.page
        })
      )

    return {
      /** Each listing's most recent observation, filtered. */
      latest: Effect.fn("HardwarePrices.latest")((request: MarketRequest) => pageOf("latest", request)),
      /** Each listing's most recent observation on or before the UTC date of `at`; needs historical access. */
      asOf: Effect.fn("HardwarePrices.asOf")((request: MarketRequest) => pageOf("asOf", request)),
      /** Observations whose day starts inside `[start, end)`; needs historical access. */
      history: Effect.fn("HardwarePrices.history")((request: MarketRequest) => pageOf("history", request)),
      /** The values of every classification filter, coverage per GPU, and the caller's history floor. */
      metadata: Effect.fn("HardwarePrices.metadata")(function* (request: Pick<MarketRequest, "principal" | "query">) {
        const principal = request.principal
        yield* requireGrant(principal, hardwarePricesCollection.dataType)
        yield* refuseParameters(request.query)
        const summary = yield* Effect.mapError(store.summary, unavailable)
        const body: HardwarePriceMetadata = {
          data_type: "gpu_hardware_prices",
          history_starts_at: reportedHistoryStart(principal, hardwarePricesCollection.dataType, yield* now),
          data: { filters: summary.values, gpus: summary.gpus }
        }
        return body
      })
    } as const
  })
}) {}
