/**
 * @gpu-market/core: the GPU market as a library, with no I/O of its own. The Promise API
 * (`createMarket`), the Effect services and their layers, the row and query schemas, the typed
 * errors and their RFC 9457 problems, principals and grants, and the procurement service.
 *
 * Backend authors: `@gpu-market/core/storage`. Adapter authors: `@gpu-market/core/adapters`.
 * The conformance suite every backend runs: `@gpu-market/storage-testkit`.
 */

// The Promise API
export {
  createMarket, type LocalMarket, memory, type Market, type MarketOptions, type MarketWrites
} from "./adapters/direct.js"
export {
  decodeMarketSettings, type MarketParts, type MarketRuntime, marketRuntimeLayer, MarketSettings, marketSettingsConfig, type MarketSettingsInput, marketSettingsProblem
} from "./adapters/runtime.js"
export { MarketProblemError, problemOf } from "./adapters/problem.js"
export type {
  CallOptions, EndpointName, HardwarePriceQuery, IndexQuery, LlmTokenPriceQuery, MarketReads, RentalPriceQuery, RentalPriceSummaryHistoryQuery,
  RentalPriceSummaryQuery, TransactionQuery
} from "./adapters/reads.js"
export type { EventsOptions, EventsQuery, MarketFeed } from "./adapters/feed.js"
export { type PortableMarketStorage, type PortableStorage, portableStorage } from "./storage/stores.js"
export { type Storage, StorageError } from "./storage/contract.js"

// The Effect API: services and layers
export { layer as marketLayer, type MarketServices } from "./market/layer.js"
export { RentalPrices } from "./market/rental-prices.js"
export { MAX_SUMMARY_POINTS, SUMMARY_GROUPS, SUMMARY_INTERVALS, type SummaryGroup, type SummaryInterval } from "./market/rental-summaries.js"
export { type OfferStatistics, quantile } from "./market/price-statistics.js"
export { HardwarePrices } from "./market/hardware-prices.js"
export { Transactions } from "./market/transactions.js"
export { LlmTokenPrices } from "./market/llm-token-prices.js"
export { Indexes } from "./market/indexes.js"
export {
  type DropReason, Feed, type FeedError, type FeedItem, type FeedMessage, feedMessage, FeedQuery, IDLE_TICK_MS, MAX_LAG, RECHECK_MS, RING_SIZE
} from "./feed/feed.js"
export { DEFAULT_PAGE_CACHE_BYTES, PageCache, PageCacheBytes } from "./market/page-cache.js"
export { EXPORT_BATCH, EXPORT_REQUESTS, type RowExport } from "./export/rows.js"
export type { ExportName, ExportOptions, MarketExport, MarketExports } from "./adapters/export.js"
export {
  encodeExport, estimateExport, EXPORT_SCHEMA_VERSION, type ExportColumn, exportColumns, type ExportEstimate, type ExportFormat, exportFormats, exportMedia, PARQUET_ROW_GROUP
} from "./export/formats.js"
export { baseProductKey, type BulkLoad, MIN_IMPORT_BATCH, productKey, RentalPriceIngest } from "./ingest/rental-prices.js"
export type { IngestSummary } from "./ingest/versions.js"
export { type RentalObservation, usdPerGpuHour, USD_PER_GPU_HOUR_PLACES, USD_PER_GPU_HOUR_TOLERANCE } from "./ingest/rental-normalise.js"
export {
  type GpuCatalog, GpuCatalogEntry, type GpuCatalogEntryInput, makeGpuCatalog, resolveGpu, SHIPPED_GPUS, spellingKey
} from "./catalog/gpu-catalog.js"
export { type DroppedTerms, HardwarePriceIngest, type HardwareIngestSummary, isSellerIdentityField, SELLER_IDENTITY_WORDS, storedRowInTerms } from "./ingest/hardware-prices.js"
export { TransactionIngest, type TransactionIngestSummary } from "./ingest/transactions.js"
export {
  basePriceKey, isOutlierPrice, type LlmIngestSummary, LlmTokenPriceIngest, OUTLIER_MIN_PROVIDERS, OUTLIER_RATIO, outlierReference, priceKey
} from "./ingest/llm-token-prices.js"
export { IndexIngest, type IndexDefineSummary } from "./ingest/indexes.js"
export { DEFAULT_INDEX_PREFIX, DefaultIndexes, type DefaultIndexSummary } from "./ingest/default-indexes.js"
export {
  FormatImport, type FormatImportOptions, type FormatImportSummary, refusedRecords, type SkypilotImportOptions, type SkypilotStreamOptions
} from "./ingest/formats/import.js"
export {
  describeCounts, describePlace, type FileFormat, type ImportCounts, ImportPolicy, type ImportReport, importReport, judged, notTheFormat, parseImportPolicy, type Quarantined,
  QuarantineRule, type Rejection, REJECTION_REASONS, type RejectionReason, sniffFormat, type SourcePlace, writeRejectionReason
} from "./ingest/formats/report.js"
export type { Conversion, ConversionIssue, Converted } from "./ingest/formats/conversion.js"
export {
  fromSkypilot, SKYPILOT_CLOUDS_WITH_CONVENTIONS, type SkypilotConverter, skypilotConverter, type SkypilotObservation, type SkypilotOptions
} from "./ingest/formats/skypilot.js"
export { fromLitellm, LITELLM_SOURCE, type LitellmKey, litellmKey, type LitellmObservation, type LitellmOptions } from "./ingest/formats/litellm.js"
export { FxRateRecord, GpuCatalogRecord, type GpuCatalogRecordInput, ReferenceDataIngest, type ReferenceIngestSummary } from "./ingest/reference-data.js"
export { FX_COVER_DAYS } from "./ingest/fx.js"
export { type Bound, DEFAULT_INGEST_BOUNDS, IngestBounds, ingestBounds, type IngestBoundsConfig } from "./ingest/bounds.js"
export { IndexComputation, type IndexComputationSummary } from "./ingest/index-computation.js"
/** The index methodology as functions: vendor medians, the median of medians, p5/p95. */
export * as IndexMethod from "./ingest/index-method.js"
export { Auth, type Credential } from "./auth/auth.js"
export { newTokenSecret } from "./auth/token-hash.js"
export {
  RATE_LIMIT_MODES, type RateLimitCount, type RateLimitMode, RateLimits, type RateLimitStatus, withRateLimits
} from "./auth/rate-limits.js"
export { PageTokens } from "./query/page-token.js"
export { type RequestOrigin, requestOrigin } from "./query/collection.js"

// Errors and problems
export * from "./errors.js"
export * from "./schema/problem.js"

// Principals, grants and instants
export * from "./auth/principal.js"
export { describeToken, TOKEN_PATH, TokenBody, TokenGrantView, tokenView, TokenView } from "./auth/token-view.js"
export {
  formatDate, formatInstant, MAX_INSTANT, MICROS_PER_DAY, MICROS_PER_MS, type Micros, MIN_INSTANT, parseDate, parseDateTime
} from "./query/time.js"

// Rows, inputs, metadata and envelopes
export * from "./schema/envelope.js"
export * from "./schema/market-event.js"
export * from "./schema/rental-price.js"
export * from "./schema/rental-summary.js"
export * from "./schema/price-unit.js"
export * from "./schema/fx-rate.js"
export { StoredInstant } from "./schema/versioned.js"
export * from "./schema/rental-metadata.js"
export * from "./schema/hardware-price.js"
export * from "./schema/hardware-metadata.js"
export * from "./schema/hardware-vocabulary.js"
export { hardwareTermDefaults, type HardwareTermField, hardwareTermFields, TermSlug } from "./schema/hardware-terms.js"
export * from "./schema/transaction.js"
export * from "./schema/llm-token-price.js"
export * from "./schema/llm-metadata.js"
export * from "./schema/indexes.js"
export * from "./schema/procurement.js"

// Procurement
export { layer as procurementLayer, type ProcurementServices } from "./procurement/layer.js"
export { Discovery, type DiscoveryRequest } from "./procurement/discovery.js"
export { Offers, OFFER_LIFETIME_MILLIS, OFFER_REQUESTS_PER_MINUTE } from "./procurement/offers.js"
export { IdempotencyKey, Procurements, type ProcurementResult } from "./procurement/procurements.js"
export { Resources, type ResourceListRequest } from "./procurement/resources.js"
export { Lifecycle } from "./procurement/lifecycle.js"
export {
  type ContractTerms, makeSimulated as makeSimulatedProvider, type OperationStatus, ProviderError, type ProvisionOrder, type Quote,
  type QuoteRequest, SIMULATED_CONTRACTS, SIMULATED_STORAGE, simulatedLayer as simulatedProviderLayer, type SimulatedProviderOptions,
  type SupplyCatalog, SupplyProvider, type SupplyProduct
} from "./procurement/provider.js"
