import * as Effect from "effect/Effect"
import { EventLogStore } from "../storage/event-log.js"
import { searchTooBroad, validationFailed } from "../errors.js"
import { collection, type EndpointDef, type MarketRequest, type Params } from "../query/collection.js"
import { PageTokens } from "../query/page-token.js"
import { PageCache } from "./page-cache.js"
import { bounds, HexKey, list, resolved, single, Slug } from "../query/filters.js"
import { CommaList, MAX_LIST_VALUES, normaliseName, Token } from "../query/params.js"
import type { RentalPrice } from "../schema/rental-price.js"
import type { RentalPriceMetadata } from "../schema/rental-metadata.js"
import { type GpuSpelling, RentalPriceStore } from "../storage/contract.js"
import type { Predicate } from "../storage/plan.js"
import { metadataBody, type MetadataRequest } from "./metadata.js"
import { pagedEndpoints } from "./pages.js"
import { rentalSummaries } from "./rental-summaries.js"
import { unavailable } from "./storage.js"
import { rentalPriceTable } from "../storage/tables.js"

const Key = HexKey()

/** The rental price type: its parameters, sorts, anchors and tie-breaker. */
export const rentalPricesCollection = collection({
  dataType: "gpu_rental_prices",
  service: "rental.prices",
  params: {
    vendor: list("vendor slugs", Slug),
    gpu_canonical_name: list("GPU slugs", Slug),
    region: list("regions"),
    contract_type: list("contract types"),
    base_product_key: single(Key),
    product_key: single(Key),
    availability: single(Token),
    ...bounds("price_usd_per_gpu_hour"),
    ...bounds("gpu_count"),
    ...bounds("gpu_memory_gb"),
    gpu_search: resolved(CommaList(Token, "search terms"))
  },
  sortFields: rentalPriceTable.sortable,
  tieBreaker: rentalPriceTable.tie,
  anchors: ["vendor", "gpu_canonical_name", "gpu_search", "base_product_key", "product_key"]
})

/** The type's paged endpoints: name, default sort, anchor rule and default span. */
export const endpoints = {
  latest: { name: "latest", defaultSort: { by: "gpu_canonical_name", order: "asc" }, needsAnchor: true },
  asOf: { name: "asOf", defaultSort: { by: "gpu_canonical_name", order: "asc" }, needsAnchor: true },
  history: { name: "history", defaultSort: { by: "valid_from", order: "desc" }, needsAnchor: false, defaultSpanDays: 30 }
} as const satisfies Record<string, EndpointDef>

const pages = pagedEndpoints(rentalPricesCollection, endpoints, "RentalPrices")

/** Most GPUs one `gpu_search` may resolve to. */
export const MAX_SEARCH_GPUS = MAX_LIST_VALUES

/** The GPUs named by any of `terms` (normalised): a term is a substring of a spelling the GPU ever had. */
export const gpusMatching = (spellings: ReadonlyArray<GpuSpelling>, terms: ReadonlyArray<string>): ReadonlySet<string> => {
  const gpus = new Set<string>()
  for (const s of spellings) {
    const name = normaliseName(s.spelling)
    if (terms.some((t) => name.includes(t))) gpus.add(s.gpu_canonical_name)
  }
  return gpus
}

/** GPU rental prices: `/latest`, `/as-of`, `/history`, `/metadata`, `/summary` and `/summary/history`. */
export class RentalPrices extends Effect.Service<RentalPrices>()("Market/RentalPrices", {
  effect: Effect.gen(function* () {
    const store = yield* RentalPriceStore
    const tokens = yield* PageTokens
    const cache = yield* PageCache
    const events = yield* EventLogStore

    /**
     * Resolves `gpu_search` terms to catalog GPUs: a term matches a GPU when it is a substring of
     * any spelling the GPU ever had, ignoring case, spaces and punctuation.
     */
    // Read once per data version: every write that adds a spelling writes rental rows.
    const spellingsAt = cache.memo("rental.prices/spellings", store.spellings)

    const resolveSearch = (params: Params, version: string | undefined) => {
      const terms = params.gpu_search as ReadonlyArray<string> | undefined
      if (terms === undefined) return Effect.succeed<ReadonlyArray<Predicate>>([])
      const normalised = terms.map(normaliseName)
      if (normalised.some((t) => t.length === 0)) {
        return Effect.fail(validationFailed([{ parameter: "gpu_search", message: "every term needs a letter or digit" }]))
      }
      return Effect.flatMap(Effect.mapError(spellingsAt(version), unavailable), (spellings) => {
        const gpus = gpusMatching(spellings, normalised)
        return gpus.size > MAX_SEARCH_GPUS
          ? Effect.fail(searchTooBroad({ parameter: "gpu_search", matched: gpus.size, what: "GPUs", limit: MAX_SEARCH_GPUS, narrow: "the terms" }))
          : Effect.succeed<ReadonlyArray<Predicate>>([{ op: "in", field: "gpu_canonical_name", values: [...gpus].sort() }])
      })
    }

    const pageOf = pages<RentalPrice>({ tokens, resolve: resolveSearch, page: store.page, version: store.version, cache, head: events.head })

    return {
      ...rentalSummaries({ collection: rentalPricesCollection, store, tokens, resolve: resolveSearch, cache }),
      /** Current rows matching the filters; needs an anchor. */
      latest: (request: MarketRequest) => pageOf.page("latest", request),
      /** Rows in force at `at`; needs an anchor and historical access. */
      asOf: (request: MarketRequest) => pageOf.page("asOf", request),
      /** Rows whose price changed inside `[start, end)`; needs historical access. */
      history: (request: MarketRequest) => pageOf.page("history", request),
      /**
       * Every row of a paged query, read from one state of the store, with the change feed's
       * event id of that state (see `RowExport`).
       */
      export: (endpoint: keyof typeof endpoints, request: MarketRequest) => pageOf.export(endpoint, request),
      /** Anchors, GPUs with their spellings and vendors, and the caller's history floor. */
      metadata: Effect.fn("RentalPrices.metadata")((request: MetadataRequest) =>
        metadataBody(request, "gpu_rental_prices", store.gpus,
          (gpus): RentalPriceMetadata["data"] => ({
            anchors: rentalPricesCollection.anchors,
            gpus: gpus.map((g) => ({
              gpu_canonical_name: g.gpu_canonical_name,
              gpu_manufacturer: g.gpu_manufacturer,
              gpu_model_variants: g.spellings,
              currently_listed: g.currently_listed,
              vendors: g.vendors
            }))
          })
        )
      )
    } as const
  }),
  dependencies: [PageCache.Default]
}) {}
