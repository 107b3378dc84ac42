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
export { type Stores, storageContext } from "./storage/stores"
export * as MemoryStorage from "./storage/memory"
export { RentalPrices, rentalPricesCollection, endpoints as rentalPricesEndpoints, MAX_SEARCH_GPUS } from "./market/rental-prices"
export { RentalPriceIngest, baseProductKey, productKey, planChanges, decodeObservations } from "./ingest/rental-prices"
export type { IngestSummary } from "./ingest/batch"
export * from "./schema/llm-token-price"
export * from "./schema/llm-metadata"
export * from "./storage/llm-token-prices"
export { evaluateLlmTokenPricePlan, summariseLlmModels } from "./storage/memory-llm-token-prices"
export {
  LlmTokenPrices, llmTokenPricesCollection, endpoints as llmTokenPricesEndpoints, llmOutlierRule, MAX_SEARCH_MODELS
} from "./market/llm-token-prices"
export {
  LlmTokenPriceIngest, basePriceKey, priceKey, planLlmChanges, decodeLlmObservations, judgeOutliers, outlierReference,
  isOutlierPrice, OUTLIER_RATIO, OUTLIER_MIN_PROVIDERS, OUTLIER_GROUP, type LlmIngestSummary
} from "./ingest/llm-token-prices"
export * from "./schema/hardware-price"
export * from "./schema/hardware-metadata"
export * from "./storage/hardware"
export { dayStart, evaluateHardwarePlan, inHardwareScope, makeMemoryHardwarePriceStore, summariseHardware } from "./storage/memory-hardware"
export { HardwarePrices, hardwarePricesCollection, endpoints as hardwarePricesEndpoints } from "./market/hardware-prices"
export {
  HardwarePriceIngest, decodeHardwareObservations, isSellerIdentityField, listingKeyOf, SELLER_IDENTITY_WORDS,
  type HardwareIngestSummary
} from "./ingest/hardware-prices"
export * from "./schema/transaction"
export * from "./storage/transactions"
export { evaluateTransactionPlan, summariseTransactions } from "./storage/memory-transactions"
export { Transactions, transactionsCollection, endpoints as transactionsEndpoints } from "./market/transactions"
export {
  TransactionIngest, blendRow, decodeDeals, formCohorts, publishCohorts, ROLLING_DAYS, seriesId, transactionRowKey,
  type DecodedDeal, type FormedCohort, type Publication, type SeriesKey, type TransactionIngestSummary
} from "./ingest/transactions"
export * from "./schema/indexes"
export * from "./storage/indexes"
export { evaluateIndexPlan, indexCoverage } from "./storage/memory-indexes"
export { Indexes, indexesCollection, endpoints as indexesEndpoints, holdsIndex, LegacyCurrentParams } from "./market/indexes"
export { IndexIngest, type IndexDefineSummary } from "./ingest/indexes"
export { IndexComputation, type IndexComputationSummary } from "./ingest/index-computation"
export * as IndexMethod from "./ingest/index-method"
export * as Demo from "./demo/index"
export { layer as marketLayer, type MarketServices } from "./market/layer"
export * from "./schema/procurement"
export * from "./storage/procurement"
export { evaluateResourcePlan, makeMemoryProcurementStore } from "./storage/memory-procurement"
export * from "./adapters/problem"
export * from "./adapters/catalogue"
export { admit, makeOperations, OperationError, writeNames, type Operations, type WriteName } from "./adapters/operations"
export {
  buildMarket, createMarket, memory, runOperation, toProblemError, type Market, type MarketOptions, type MarketTransport,
  type MarketWrites
} from "./adapters/direct"
export { layer as procurementLayer, type ProcurementServices } from "./procurement/layer"
export { Discovery, type DiscoveryRequest } from "./procurement/discovery"
export { Offers, OFFER_LIFETIME_MILLIS, OFFER_REQUESTS_PER_MINUTE, DEFAULT_OFFER_LIMIT, isExpired } from "./procurement/offers"
export { Procurements, IdempotencyKey, type ProcurementResult } from "./procurement/procurements"
export { requireProcurement } from "./procurement/access"
export { Resources, ResourceListParams, RESOURCES_PATH, type ResourceListRequest } from "./procurement/resources"
export { Lifecycle, PROCUREMENT_TRANSITIONS, RESOURCE_TRANSITIONS } from "./procurement/lifecycle"
export { parseOfferRequest, MAX_OFFER_REQUEST_BYTES } from "./procurement/request"
export {
  SupplyProvider, ProviderError, makeSimulated as makeSimulatedProvider, simulatedLayer as simulatedProviderLayer,
  SIMULATED_CONTRACTS, SIMULATED_STORAGE, type SimulatedProviderOptions, type SupplyCatalog, type SupplyProduct, type ContractTerms,
  type QuoteRequest, type Quote, type ProvisionOrder, type OperationStatus
} from "./procurement/provider"
export { MarketRpcs, Read, Write, WorkerConfig, WorkerStorage } from "./adapters/worker-contract"
export { createWorkerMarket, type WorkerMarket, type WorkerMarketOptions } from "./adapters/worker"
