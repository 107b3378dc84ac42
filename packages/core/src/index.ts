/**
 * @gpu-market/core: schemas, the query engine, auth, market services, the write path and the
 * storage contract. Everything that is not I/O.
 */
export * from "./errors.js"
export * from "./schema/envelope.js"
export * from "./schema/problem.js"
export * from "./schema/rental-price.js"
export * from "./schema/rental-metadata.js"
export * from "./auth/principal.js"
export * from "./auth/history.js"
export * from "./auth/token-hash.js"
export * from "./auth/entitlements.js"
export { Auth } from "./auth/auth.js"
export { RateLimits, type RateLimitStatus } from "./auth/rate-limits.js"
export * from "./query/time.js"
export * from "./query/params.js"
export * from "./query/window.js"
export * from "./query/collection.js"
export { PageTokens, type PageTokenState } from "./query/page-token.js"
export * from "./storage/plan.js"
export * from "./storage/contract.js"
export { type MarketStorage, type PortableStorage, portableStorage, type Stores, storageContext } from "./storage/stores.js"
export * as MemoryStorage from "./storage/memory.js"
export { RentalPrices, rentalPricesCollection, endpoints as rentalPricesEndpoints, MAX_SEARCH_GPUS } from "./market/rental-prices.js"
export { RentalPriceIngest, baseProductKey, productKey, planChanges, decodeObservations } from "./ingest/rental-prices.js"
export type { IngestSummary } from "./ingest/batch.js"
export * from "./schema/llm-token-price.js"
export * from "./schema/llm-metadata.js"
export * from "./storage/llm-token-prices.js"
export { evaluateLlmTokenPricePlan, summariseLlmModels } from "./storage/memory-llm-token-prices.js"
export {
  LlmTokenPrices, llmTokenPricesCollection, endpoints as llmTokenPricesEndpoints, llmOutlierRule, MAX_SEARCH_MODELS
} from "./market/llm-token-prices.js"
export {
  LlmTokenPriceIngest, basePriceKey, priceKey, planLlmChanges, decodeLlmObservations, judgeOutliers, outlierReference,
  isOutlierPrice, OUTLIER_RATIO, OUTLIER_MIN_PROVIDERS, OUTLIER_GROUP, type LlmIngestSummary
} from "./ingest/llm-token-prices.js"
export * from "./schema/hardware-price.js"
export * from "./schema/hardware-metadata.js"
export * from "./storage/hardware.js"
export { dayStart, evaluateHardwarePlan, inHardwareScope, makeMemoryHardwarePriceStore, summariseHardware } from "./storage/memory-hardware.js"
export { HardwarePrices, hardwarePricesCollection, endpoints as hardwarePricesEndpoints } from "./market/hardware-prices.js"
export {
  HardwarePriceIngest, decodeHardwareObservations, isSellerIdentityField, listingKeyOf, SELLER_IDENTITY_WORDS,
  type HardwareIngestSummary
} from "./ingest/hardware-prices.js"
export * from "./schema/transaction.js"
export * from "./storage/transactions.js"
export { evaluateTransactionPlan, summariseTransactions } from "./storage/memory-transactions.js"
export { Transactions, transactionsCollection, endpoints as transactionsEndpoints } from "./market/transactions.js"
export {
  TransactionIngest, blendRow, decodeDeals, formCohorts, publishCohorts, ROLLING_DAYS, seriesId, transactionRowKey,
  type DecodedDeal, type FormedCohort, type Publication, type SeriesKey, type TransactionIngestSummary
} from "./ingest/transactions.js"
export * from "./schema/indexes.js"
export * from "./storage/indexes.js"
export { evaluateIndexPlan, indexCoverage } from "./storage/memory-indexes.js"
export { Indexes, indexesCollection, endpoints as indexesEndpoints, holdsIndex, LegacyCurrentParams } from "./market/indexes.js"
export { IndexIngest, type IndexDefineSummary } from "./ingest/indexes.js"
export { IndexComputation, type IndexComputationSummary } from "./ingest/index-computation.js"
export * as IndexMethod from "./ingest/index-method.js"
export { layer as marketLayer, type MarketServices } from "./market/layer.js"
export * from "./schema/procurement.js"
export * from "./storage/procurement.js"
export { evaluateResourcePlan, makeMemoryProcurementStore } from "./storage/memory-procurement.js"
export * from "./adapters/problem.js"
export * from "./adapters/catalogue.js"
export { admit, makeOperations, OperationError, writeNames, type Operations, type WriteName } from "./adapters/operations.js"
export {
  buildMarket, createMarket, memory, runOperation, toProblemError, type Market, type MarketOptions, type MarketTransport,
  type MarketWrites
} from "./adapters/direct.js"
export { layer as procurementLayer, type ProcurementServices } from "./procurement/layer.js"
export { Discovery, type DiscoveryRequest } from "./procurement/discovery.js"
export { Offers, OFFER_LIFETIME_MILLIS, OFFER_REQUESTS_PER_MINUTE, DEFAULT_OFFER_LIMIT, isExpired } from "./procurement/offers.js"
export { Procurements, IdempotencyKey, type ProcurementResult } from "./procurement/procurements.js"
export { requireProcurement } from "./procurement/access.js"
export { Resources, ResourceListParams, RESOURCES_PATH, type ResourceListRequest } from "./procurement/resources.js"
export { Lifecycle, PROCUREMENT_TRANSITIONS, RESOURCE_TRANSITIONS } from "./procurement/lifecycle.js"
export { parseOfferRequest, MAX_OFFER_REQUEST_BYTES } from "./procurement/request.js"
export {
  SupplyProvider, ProviderError, makeSimulated as makeSimulatedProvider, simulatedLayer as simulatedProviderLayer,
  SIMULATED_CONTRACTS, SIMULATED_STORAGE, type SimulatedProviderOptions, type SupplyCatalog, type SupplyProduct, type ContractTerms,
  type QuoteRequest, type Quote, type ProvisionOrder, type OperationStatus
} from "./procurement/provider.js"
