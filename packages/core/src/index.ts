/**
 * @gpu-market/core: schemas, the query engine, auth, market services, the write path and the
 * storage contract. Everything that is not I/O.
 */
export * from "./errors"
export * from "./schema/envelope"
export * from "./schema/problem"
export * from "./schema/rental-price"
export * from "./schema/rental-metadata"
export * from "./auth/principal"
export * from "./auth/history"
export * from "./auth/token-hash"
export * from "./auth/entitlements"
export { Auth } from "./auth/auth"
export { RateLimits, type RateLimitStatus } from "./auth/rate-limits"
export * from "./query/time"
export * from "./query/params"
export * from "./query/window"
export * from "./query/collection"
export { PageTokens, type PageTokenState } from "./query/page-token"
export * from "./storage/plan"
export * from "./storage/contract"
export * as MemoryStorage from "./storage/memory"
export { RentalPrices, rentalPricesCollection, MAX_SEARCH_GPUS } from "./market/rental-prices"
export { RentalPriceIngest, baseProductKey, productKey, planChanges, decodeObservations } from "./ingest/rental-prices"
export type { IngestSummary } from "./ingest/batch"
export * from "./schema/llm-token-price"
export * from "./schema/llm-metadata"
export * from "./storage/llm-token-prices"
export { evaluateLlmTokenPricePlan, summariseLlmModels } from "./storage/memory-llm-token-prices"
export { LlmTokenPrices, llmTokenPricesCollection, llmOutlierRule, MAX_SEARCH_MODELS } from "./market/llm-token-prices"
export {
  LlmTokenPriceIngest, basePriceKey, priceKey, planLlmChanges, decodeLlmObservations, judgeOutliers, outlierReference,
  isOutlierPrice, OUTLIER_RATIO, OUTLIER_MIN_PROVIDERS, OUTLIER_GROUP, type LlmIngestSummary
} from "./ingest/llm-token-prices"
export * from "./schema/hardware-price"
export * from "./schema/hardware-metadata"
export * from "./storage/hardware"
export { evaluateHardwarePlan, inHardwareScope, makeMemoryHardwarePriceStore, summariseHardware } from "./storage/memory-hardware"
export { HardwarePrices, hardwarePricesCollection } from "./market/hardware-prices"
export {
  HardwarePriceIngest, decodeHardwareObservations, isSellerIdentityField, listingKeyOf, SELLER_IDENTITY_WORDS,
  type HardwareIngestSummary
} from "./ingest/hardware-prices"
export * from "./schema/transaction"
export * from "./storage/transactions"
export { evaluateTransactionPlan, summariseTransactions } from "./storage/memory-transactions"
export { Transactions, transactionsCollection } from "./market/transactions"
export {
  TransactionIngest, blendRow, decodeDeals, formCohorts, publishCohorts, ROLLING_DAYS, seriesId, transactionRowKey,
  type DecodedDeal, type FormedCohort, type Publication, type SeriesKey, type TransactionIngestSummary
} from "./ingest/transactions"
export * from "./schema/indexes"
export * from "./storage/indexes"
export { evaluateIndexPlan, indexCoverage } from "./storage/memory-indexes"
export { Indexes, indexesCollection, holdsIndex } from "./market/indexes"
export { IndexIngest, type IndexDefineSummary } from "./ingest/indexes"
export { IndexComputation, type IndexComputationSummary } from "./ingest/index-computation"
export * as IndexMethod from "./ingest/index-method"
export * as Demo from "./demo/index"
export { layer as marketLayer, type MarketServices } from "./market/layer"
