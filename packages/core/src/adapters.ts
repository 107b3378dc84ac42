/**
 * @gpu-market/core/adapters: what an adapter (HTTP, worker threads, another transport) is built
 * from. The catalogue of read endpoints, the operations every adapter runs (authentication, rate
 * limit, validation, entitlements, envelope), the Promise surface over a transport, and the
 * request vocabulary (collections, parameters, windows) the HTTP routes and OpenAPI are made of.
 */
export * from "./adapters/catalogue.js"
export * from "./adapters/reads.js"
export type { EventsOptions, EventsQuery, MarketFeed } from "./adapters/feed.js"
export { admit, type Admission, chargeExport, makeOperations, OperationError, type Operations, type WriteArgs, type WriteName, writeNames, type WriteResult, writeResults } from "./adapters/operations.js"
export { counterHost, CountHit, HitCounted, type RemoteCounters, remoteCounters } from "./auth/counting-messages.js"
export { buildMarket, type MarketTransport, runOperation, toProblemError } from "./adapters/direct.js"
export { bodyJson, boundedCache, pageCacheLayer, type ResponseBody, responseBody } from "./market/page-cache.js"
export { labelsOf, LATENCY_BUCKETS_SECONDS } from "./metrics.js"
export * from "./adapters/problem.js"
export * from "./query/collection.js"
export * from "./query/params.js"
export * from "./query/window.js"
export { PageTokens, type PageTokenState } from "./query/page-token.js"
export { rentalPricesCollection, endpoints as rentalPricesEndpoints, MAX_SEARCH_GPUS } from "./market/rental-prices.js"
export { hardwarePricesCollection, endpoints as hardwarePricesEndpoints } from "./market/hardware-prices.js"
export { transactionsCollection, endpoints as transactionsEndpoints } from "./market/transactions.js"
export { llmTokenPricesCollection, endpoints as llmTokenPricesEndpoints, llmOutlierRule, MAX_SEARCH_MODELS } from "./market/llm-token-prices.js"
export { indexesCollection, endpoints as indexesEndpoints, holdsIndex, LegacyCurrentParams } from "./market/indexes.js"
export { requireProcurement } from "./procurement/access.js"
export { DEFAULT_OFFER_LIMIT, isExpired } from "./procurement/offers.js"
export { ResourceListParams, RESOURCES_PATH } from "./procurement/resources.js"
export { PROCUREMENT_TRANSITIONS, RESOURCE_TRANSITIONS } from "./procurement/lifecycle.js"
export { MAX_OFFER_REQUEST_BYTES, type OfferRequestFormat, parseOfferRequest } from "./procurement/request.js"
export { MAX_BODY_DEPTH } from "./procurement/nesting.js"
export { type CsvReader, type CsvRecord, csvReader, CsvSyntaxError, parseCsvText } from "./ingest/formats/csv.js"
