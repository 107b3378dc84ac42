import * as Effect from "effect/Effect"
import { EventLogStore } from "../storage/event-log.js"
import * as Schema from "effect/Schema"
import { searchTooBroad, validationFailed } from "../errors.js"
import { OUTLIER_GROUP, OUTLIER_MIN_PROVIDERS, OUTLIER_RATIO } from "../ingest/llm-token-prices.js"
import { collection, type EndpointDef, type MarketRequest, type Params } from "../query/collection.js"
import { PageTokens } from "../query/page-token.js"
import { PageCache } from "./page-cache.js"
import { bounds, HexKey, list, resolved, single, Slug } from "../query/filters.js"
import { CommaList, MAX_LIST_VALUES, normaliseName, Token, withMessage } from "../query/params.js"
import type { LlmTokenPriceMetadata, LlmOutlierRule } from "../schema/llm-metadata.js"
import type { LlmTokenPrice } from "../schema/llm-token-price.js"
import { LlmTokenPriceStore } from "../storage/llm-token-prices.js"
import type { Predicate } from "../storage/plan.js"
import { metadataBody, type MetadataRequest } from "./metadata.js"
import { pagedEndpoints } from "./pages.js"
import { unavailable } from "./storage.js"
import { llmTokenPriceTable } from "../storage/tables.js"

const Key = HexKey()
/** `exclude_outliers`: exactly `true` or `false`, a boolean once decoded (and in OpenAPI). */
const Flag = Schema.compose(Schema.String, Schema.BooleanFromString).pipe(
  Schema.annotations(withMessage("expected true or false"))
)

const slugs = (what: string) => list(`${what} (lower-case slugs)`, Slug)

/** The LLM token price type: its filters, sorts and tie-breaker. It needs no anchor. */
export const llmTokenPricesCollection = collection({
  dataType: "llm_token_prices",
  service: "llm.tokenPrices",
  params: {
    model: slugs("models"),
    serving_provider: slugs("serving providers"),
    source: slugs("sources"),
    price_type: slugs("price types"),
    region: slugs("regions"),
    base_price_key: single(Key),
    price_key: single(Key),
    ...bounds("price_usd_per_1m_tokens"),
    model_search: resolved(CommaList(Token, "search terms")),
    exclude_outliers: resolved(Flag)
  },
  sortFields: llmTokenPriceTable.sortable,
  tieBreaker: llmTokenPriceTable.tie,
  anchors: []
})

/** The type's paged endpoints: name, default sort, anchor rule and default span. */
export const endpoints = {
  latest: { name: "latest", defaultSort: { by: "model", order: "asc" }, needsAnchor: false },
  asOf: { name: "asOf", defaultSort: { by: "model", order: "asc" }, needsAnchor: false },
  history: { name: "history", defaultSort: { by: "valid_from", order: "desc" }, needsAnchor: false, defaultSpanDays: 90 }
} as const satisfies Record<string, EndpointDef>

const pages = pagedEndpoints(llmTokenPricesCollection, endpoints, "LlmTokenPrices")

/** Most models one `model_search` may resolve to. */
export const MAX_SEARCH_MODELS = MAX_LIST_VALUES

/** The outlier rule as `/metadata` states it. */
export const llmOutlierRule: LlmOutlierRule = {
  compared_within: OUTLIER_GROUP,
  ratio: OUTLIER_RATIO,
  min_serving_providers: OUTLIER_MIN_PROVIDERS,
  description:
    `A price is an outlier when it is more than ${OUTLIER_RATIO} times above or below the reference price of the same ` +
    `model, price type and metric at the instant its row opens. The reference is the median, across serving providers, ` +
    `of each provider's median price in force at that instant (every source, region and qualifier included, the ` +
    `price itself and every other price of that instant among them). With fewer than ${OUTLIER_MIN_PROVIDERS} serving ` +
    `providers there is no reference and nothing is flagged. A flag is judged again when a price that arrives later ` +
    `changes the market in force at that instant; prices of later instants never change it.`
}

const union = (lists: ReadonlyArray<ReadonlyArray<string>>) => [...new Set(lists.flat())].sort()

/** LLM token prices: `/latest`, `/as-of`, `/history` and `/metadata`. */
export class LlmTokenPrices extends Effect.Service<LlmTokenPrices>()("Market/LlmTokenPrices", {
  effect: Effect.gen(function* () {
    const store = yield* LlmTokenPriceStore
    const tokens = yield* PageTokens
    const cache = yield* PageCache
    const events = yield* EventLogStore

    /** `exclude_outliers=true` keeps rows not flagged. */
    const outliers = (params: Params): ReadonlyArray<Predicate> =>
      params.exclude_outliers === true ? [{ op: "eq", field: "is_price_outlier", value: "false" }] : []

    /**
     * Resolves `model_search` terms to models: a term matches a model when it is a substring of
     * its slug or of any name a provider ever wrote for it, ignoring case, spaces and punctuation.
     */
    // Read once per data version: every write that names a model writes LLM rows.
    const modelsAt = cache.memo("llm.tokenPrices/models", store.models)

    const resolve = (params: Params, version: string | undefined) => {
      const terms = params.model_search as ReadonlyArray<string> | undefined
      if (terms === undefined) return Effect.succeed(outliers(params))
      const normalised = terms.map(normaliseName)
      if (normalised.some((t) => t.length === 0)) {
        return Effect.fail(validationFailed([{ parameter: "model_search", message: "every term needs a letter or digit" }]))
      }
      return Effect.flatMap(Effect.mapError(modelsAt(version), unavailable), (summaries) => {
        const models = summaries
          .filter((m) => [m.model, ...m.model_names].some((s) => normalised.some((t) => normaliseName(s).includes(t))))
          .map((m) => m.model)
        return models.length > MAX_SEARCH_MODELS
          ? Effect.fail(searchTooBroad({
              parameter: "model_search", matched: models.length, what: "models", limit: MAX_SEARCH_MODELS, narrow: "the terms"
            }))
          : Effect.succeed<ReadonlyArray<Predicate>>([{ op: "in", field: "model", values: models }, ...outliers(params)])
      })
    }

    const pageOf = pages<LlmTokenPrice>({ tokens, resolve, page: store.page, version: store.version, cache, head: events.head })

    return {
      /** Prices in force now matching the filters. */
      latest: (request: MarketRequest) => pageOf.page("latest", request),
      /** Prices in force at `at`; needs historical access. */
      asOf: (request: MarketRequest) => pageOf.page("asOf", request),
      /** Prices that changed inside `[start, end)`; needs historical access. */
      history: (request: MarketRequest) => pageOf.page("history", request),
      /**
       * Every row of a paged query, read from one state of the store, with the change feed's
       * event id of that state (see `RowExport`).
       */
      export: (endpoint: keyof typeof endpoints, request: MarketRequest) => pageOf.export(endpoint, request),
      /** Models with their names, every accepted filter value, the outlier rule and the caller's history floor. */
      metadata: Effect.fn("LlmTokenPrices.metadata")((request: MetadataRequest) =>
        metadataBody(request, "llm_token_prices", store.models,
          (models): LlmTokenPriceMetadata["data"] => ({
            price_unit: "usd_per_1m_tokens",
            outlier_rule: llmOutlierRule,
            models: models.map((m) => ({
              model: m.model,
              model_family: m.model_family,
              model_creator: m.model_creator,
              model_name_variants: m.model_names,
              currently_listed: m.currently_listed,
              serving_providers: m.serving_providers,
              price_types: m.price_types
            })),
            serving_providers: union(models.map((m) => m.serving_providers)),
            sources: union(models.map((m) => m.sources)),
            price_types: union(models.map((m) => m.price_types)),
            regions: union(models.map((m) => m.regions)),
            metrics: union(models.map((m) => m.metrics)),
            qualifiers: union(models.map((m) => m.qualifiers))
          })
        )
      )
    } as const
  }),
  dependencies: [PageCache.Default]
}) {}
