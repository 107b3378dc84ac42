/**
 * @gpu-market/core/storage: the storage contract a backend implements, and what helps it do so.
 * One `Context.Tag` per store (each method one atomic step), the page plans stores execute, the
 * in-memory reference store whose answers every backend must equal (the conformance suite in
 * `@gpu-market/core/test` checks that), and `storageContext` to provide a backend's stores.
 */
export * from "./storage/contract.js"
export * from "./storage/plan.js"
export * from "./storage/versions.js"
export * from "./storage/marks.js"
export * from "./storage/rules.js"
export * from "./storage/table.js"
export { type GroupSummary, type RowSummary, sortedValues, summarise } from "./storage/summary.js"
export * from "./storage/tables.js"
export * from "./storage/hardware.js"
export * from "./storage/llm-token-prices.js"
export * from "./storage/transactions.js"
export * from "./storage/indexes.js"
export * from "./storage/procurement.js"
export * from "./storage/reference.js"
export * from "./storage/event-log.js"
export { StorePipelines } from "./storage/pipelining.js"
export { makeMemoryEventLog, numberedPositions } from "./storage/memory-event-log.js"
export { type PortableMarketStorage, type PortableStorage, portableStorage, type Stores, storageContext } from "./storage/stores.js"
export { type BreakerOptions, guardStorage } from "./storage/breaker.js"
export { hashToken, sameHash } from "./auth/token-hash.js"
export * as MemoryStorage from "./storage/memory.js"
export { evaluateLlmTokenPricePlan, summariseLlmModels } from "./storage/memory-llm-token-prices.js"
export { evaluateHardwarePlan, inHardwareScope, makeMemoryHardwarePriceStore, summariseHardware } from "./storage/memory-hardware.js"
export { evaluateTransactionPlan, summariseTransactions } from "./storage/memory-transactions.js"
export { evaluateIndexPlan, indexCoverage } from "./storage/memory-indexes.js"
export { evaluateResourcePlan, makeMemoryProcurementStore } from "./storage/memory-procurement.js"
export { makeMemoryReferenceDataStore, selectFxRates } from "./storage/memory-reference.js"
export { makeMemoryRateLimitStore } from "./storage/memory-rate-limits.js"
