import * as Effect from "effect/Effect"
import { EventLogStore } from "../storage/event-log.js"
import * as Schema from "effect/Schema"
import { type ParameterIssue, validationFailed } from "../errors.js"
import { collection, type EndpointDef, type MarketRequest, type Params } from "../query/collection.js"
import { PageTokens } from "../query/page-token.js"
import { PageCache } from "./page-cache.js"
import { bounds, HexKey, list, single, Slug } from "../query/filters.js"
import type { HardwarePriceMetadata } from "../schema/hardware-metadata.js"
import type { HardwarePrice } from "../schema/hardware-price.js"
import { HardwareVocabulary, type HardwareVocabularyField, type HardwareVocabularySet } from "../schema/hardware-vocabulary.js"
import { HardwarePriceStore } from "../storage/hardware.js"
import type { Predicate } from "../storage/plan.js"
import { metadataBody, type MetadataRequest } from "./metadata.js"
import { pagedEndpoints } from "./pages.js"
import { hardwarePriceTable } from "../storage/tables.js"

const ClassValue = Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,63}$/))
const Market = Schema.String.pipe(Schema.pattern(/^(primary|secondary)$/))
const Country = Schema.String.pipe(Schema.pattern(/^[A-Z]{2}$/))
const ListingKeyParam = HexKey("expected a listing_key from a previous response: 32 lower-case hex characters")

/** The hardware price type: its filters, sorts and tie-breaker. No filter names a seller. */
export const hardwarePricesCollection = collection({
  dataType: "gpu_hardware_prices",
  service: "hardware.prices",
  params: {
    gpu_canonical_name: list("GPU slugs", Slug),
    listing_key: single(ListingKeyParam),
    condition: list("conditions of the vocabulary", ClassValue),
    market: list("markets (primary, secondary)", Market),
    channel: list("channels of the vocabulary", ClassValue),
    transaction_level: list("transaction levels of the vocabulary", ClassValue),
    stock_status: list("stock statuses of the vocabulary", ClassValue),
    country: list("upper-case ISO 3166 alpha-2 country codes", Country),
    country_group: list("country groups of the vocabulary", ClassValue),
    ...bounds("price_usd")
  },
  sortFields: hardwarePriceTable.sortable,
  tieBreaker: hardwarePriceTable.tie,
  anchors: []
})

/** The type's paged endpoints: name, default sort, anchor rule and default span. */
export const endpoints = {
  latest: { name: "latest", defaultSort: { by: "gpu_canonical_name", order: "asc" }, needsAnchor: false },
  asOf: { name: "asOf", defaultSort: { by: "gpu_canonical_name", order: "asc" }, needsAnchor: false },
  history: { name: "history", defaultSort: { by: "observed_date", order: "desc" }, needsAnchor: false, defaultSpanDays: 90 }
} as const satisfies Record<string, EndpointDef>

const pages = pagedEndpoints(hardwarePricesCollection, endpoints, "HardwarePrices")

/** The filters whose values come from the hardware vocabulary. */
const vocabularyFilters: ReadonlyArray<HardwareVocabularyField> = ["condition", "market", "channel", "transaction_level", "stock_status", "country_group"]

/**
 * Refuses a filter value outside the market's vocabulary (422 naming the accepted values): no
 * row can hold it, so it is a mistake worth telling, as a malformed value is.
 */
const inVocabulary = (vocabulary: HardwareVocabularySet) => (params: Params) => {
  const issues: Array<ParameterIssue> = []
  for (const field of vocabularyFilters) {
    const refused = ((params[field] as ReadonlyArray<string> | undefined) ?? []).filter((value) => !vocabulary.accepts(field, value))
    if (refused.length > 0) issues.push({ parameter: field, message: vocabulary.refusal(field, refused) })
  }
  return issues.length > 0 ? Effect.fail(validationFailed(issues)) : Effect.succeed<ReadonlyArray<Predicate>>([])
}

/** GPU hardware prices: `/latest`, `/as-of`, `/history` and `/metadata`. */
export class HardwarePrices extends Effect.Service<HardwarePrices>()("Market/HardwarePrices", {
  effect: Effect.gen(function* () {
    const store = yield* HardwarePriceStore
    const tokens = yield* PageTokens
    const cache = yield* PageCache
    const events = yield* EventLogStore
    const vocabulary = yield* HardwareVocabulary

    const pageOf = pages<HardwarePrice>({ tokens, resolve: inVocabulary(vocabulary), page: store.page, version: store.version, cache, head: events.head })

    return {
      /** Each listing's most recent observation, filtered. */
      latest: (request: MarketRequest) => pageOf.page("latest", request),
      /** Each listing's most recent observation on or before the UTC date of `at`; needs historical access. */
      asOf: (request: MarketRequest) => pageOf.page("asOf", request),
      /** Observations whose day starts inside `[start, end)`; needs historical access. */
      history: (request: MarketRequest) => pageOf.page("history", request),
      /**
       * Every row of a paged query, read from one state of the store, with the change feed's
       * event id of that state (see `RowExport`).
       */
      export: (endpoint: keyof typeof endpoints, request: MarketRequest) => pageOf.export(endpoint, request),
      /**
       * The values of every classification filter, the vocabulary of every classification field,
       * coverage per GPU, and the caller's history floor.
       */
      metadata: Effect.fn("HardwarePrices.metadata")((request: MetadataRequest) =>
        metadataBody(request, "gpu_hardware_prices", store.summary,
          (summary): HardwarePriceMetadata["data"] => ({ filters: summary.values, vocabulary: vocabulary.values, gpus: summary.gpus })
        )
      )
    } as const
  }),
  dependencies: [PageCache.Default]
}) {}
