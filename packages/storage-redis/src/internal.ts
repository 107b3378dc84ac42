/**
 * Internals of the backend for its own tests and the benchmarks: not part of the package's
 * exports (its public surface is `index.ts`).
 */
export { fromRedis, makeClient, type RedisClient, type RedisOptions, type Script, script } from "./client.js"
export { Batch, BATCH_ATTEMPTS, untilApplied } from "./batch.js"
export { cachedByVersion, replies, type Versioned } from "./reads.js"
export { type Codec, decode, encode, makeCodec } from "./codec.js"
export { CorruptValue, InvalidPlan, isOwnFailure } from "./errors.js"
export { type Keys, makeKeys } from "./keys.js"
export { AFTER_VALUE, decodeText, encodeMember, encodeText, encodeValue, memberText, memberTie } from "./lex.js"
export {
  type Bound, type Bounds, makeTable, type StoredRow, type Subset, type Table, type TableSpec, versionScopeBounds
} from "./table.js"
export { makeRentalPriceStore, rentalTable } from "./rental-prices.js"
export { makeTokenStore } from "./tokens.js"
export { makeSettingsStore } from "./settings.js"
export { makeRateLimitStore } from "./rate-limits.js"
export { llmTokenPriceSpec, makeLlmTokenPriceStore, type StoredLlmTokenPrice } from "./llm-token-prices.js"
export { indexValueSpec, makeIndexStore } from "./indexes.js"
export { hardwareTable, makeHardwarePriceStore, type StoredHardwarePrice } from "./hardware-prices.js"
export { makeTransactionStore, transactionSpec } from "./transactions.js"
export { makeProcurementStore, OFFER_RETENTION_MILLIS, ownerTag, resourceTable, type StoredResource } from "./procurement.js"
export * from "./index.js"
