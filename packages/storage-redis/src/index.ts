/**
 * @gpu-market/storage-redis: the gpu-market stores in Redis, shared by any number of processes.
 * Rows are msgpack (msgpackr records); pages walk sorted-set indexes kept on write; every write
 * is one checked Lua batch; requests fail fast with a `StorageError` while Redis is away.
 */
import { type MarketStorage, portableStorage, type Storage, storageContext, type StorageError, type Stores } from "@gpu-market/core"
import { Config, type ConfigError, Effect, Layer, type Scope } from "effect"
import { makeClient, type RedisOptions } from "./client.js"
import { makeHardwarePriceStore } from "./hardware-prices.js"
import { makeIndexStore } from "./indexes.js"
import { makeLlmTokenPriceStore } from "./llm-token-prices.js"
import { makeProcurementStore } from "./procurement.js"
import { makeRateLimitStore } from "./rate-limits.js"
import { makeRentalPriceStore } from "./rental-prices.js"
import { makeSettingsStore } from "./settings.js"
import { makeTokenStore } from "./tokens.js"
import { makeTransactionStore } from "./transactions.js"

export { fromRedis, makeClient, type RedisClient, type RedisOptions, type Script, script } from "./client.js"
export { Batch, BATCH_ATTEMPTS, untilApplied } from "./batch.js"
export { cachedByVersion, replies, type Versioned } from "./reads.js"
export { type Codec, decode, encode, makeCodec } from "./codec.js"
export { type Keys, makeKeys } from "./keys.js"
export { AFTER_VALUE, decodeText, encodeMember, encodeText, encodeValue, memberText, memberTie } from "./lex.js"
export {
  type Bound, type Bounds, InvalidPlan, makeTable, type StoredRow, type Subset, type Table, type TableSpec, versionScopeBounds
} from "./table.js"
export { makeRentalPriceStore, rentalTable } from "./rental-prices.js"
export { makeTokenStore } from "./tokens.js"
export { makeSettingsStore } from "./settings.js"
export { makeRateLimitStore } from "./rate-limits.js"
export { llmTokenPriceTable, makeLlmTokenPriceStore, type StoredLlmTokenPrice } from "./llm-token-prices.js"
export { indexValueTable, makeIndexStore } from "./indexes.js"
export { hardwareTable, makeHardwarePriceStore, type StoredHardwarePrice } from "./hardware-prices.js"
export { makeTransactionStore, transactionTable } from "./transactions.js"
export { makeProcurementStore, OFFER_RETENTION_MILLIS, resourceTable, type StoredResource } from "./procurement.js"

/**
 * Connects for the life of the scope and builds the stores. Fails with a `StorageError` when
 * Redis cannot be reached within the connect timeout; once connected, requests fail fast while
 * Redis is away and the connection comes back by itself.
 */
export const make = (options: RedisOptions): Effect.Effect<Stores, StorageError, Scope.Scope> =>
  Effect.map(makeClient(options), (client) => ({
    rentalStore: makeRentalPriceStore(client),
    tokenStore: makeTokenStore(client),
    rateLimitStore: makeRateLimitStore(client),
    settingsStore: makeSettingsStore(client),
    llmTokenPriceStore: makeLlmTokenPriceStore(client),
    indexStore: makeIndexStore(client),
    hardwarePriceStore: makeHardwarePriceStore(client),
    transactionStore: makeTransactionStore(client),
    procurementStore: makeProcurementStore(client)
  }))

/** Every store in the Redis at `options.url`, over one connection the layer opens and closes. */
export const layer = (options: RedisOptions): Layer.Layer<Storage, StorageError> =>
  Layer.scopedContext(Effect.map(make(options), storageContext))

/** `url` fit to print: its user and password left out. */
export const redactUrl = (url: string): string => {
  try {
    const u = new URL(url)
    u.username = ""
    u.password = ""
    return u.toString()
  } catch {
    return "(unparseable URL)"
  }
}

/**
 * The Redis at `url` as a market's storage: `createMarket({ storage: redis("redis://127.0.0.1:6379") })`.
 * Portable: `createWorkerMarket({ storage: redis(url) })` connects from each worker.
 */
export const redis = (url: string, prefix?: string): MarketStorage => {
  const options: RedisOptions = prefix === undefined ? { url } : { url, prefix }
  return portableStorage(layer(options), { module: import.meta.url, options })
}

/** `layer` from `GPU_MARKET_REDIS_URL` (required) and `GPU_MARKET_REDIS_PREFIX` (default `gpu-market`). */
export const layerConfig: Layer.Layer<Storage, StorageError | ConfigError.ConfigError> = Layer.unwrapEffect(
  Effect.map(
    Config.all({
      url: Config.string("GPU_MARKET_REDIS_URL"),
      prefix: Config.string("GPU_MARKET_REDIS_PREFIX").pipe(Config.withDefault("gpu-market"))
    }),
    (options) => layer(options)
  )
)
