/**
 * @gpu-market/storage-redis: the gpu-market stores in Redis, shared by any number of processes.
 * Rows are msgpack (msgpackr records); pages walk sorted-set indexes kept on write; every write
 * is one checked Lua batch; requests fail fast with a `StorageError` while Redis is away.
 */
import { type PortableMarketStorage, portableStorage, type Storage, type StorageError } from "@gpu-market/core"
import { storageContext, type Stores } from "@gpu-market/core/storage"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { makeClient, type RedisOptions } from "./client.js"
import { makeHardwarePriceStore } from "./hardware-prices.js"
import { makeIndexStore } from "./indexes.js"
import { makeLlmTokenPriceStore } from "./llm-token-prices.js"
import { makeProcurementStore } from "./procurement.js"
import { makeRateLimitStore } from "./rate-limits.js"
import { makeReferenceDataStore } from "./reference.js"
import { makeRentalPriceStore } from "./rental-prices.js"
import { makeSettingsStore } from "./settings.js"
import { makeTokenStore } from "./tokens.js"
import { makeTransactionStore } from "./transactions.js"
import { makeEventLogStore } from "./event-log.js"

export type { RedisOptions } from "./client.js"

/**
 * Connects for the life of the scope and builds the stores. Fails with a `StorageError` when
 * Redis cannot be reached within the connect timeout; once connected, requests fail fast while
 * Redis is away and the connection comes back by itself.
 */
export const make = (options: RedisOptions): Effect.Effect<Stores, StorageError, Scope.Scope> =>
  Effect.flatMap(makeClient(options), (client) => Effect.map(makeEventLogStore(client), (eventLogStore) => ({
    rentalStore: makeRentalPriceStore(client),
    tokenStore: makeTokenStore(client),
    rateLimitStore: makeRateLimitStore(client),
    settingsStore: makeSettingsStore(client),
    llmTokenPriceStore: makeLlmTokenPriceStore(client),
    indexStore: makeIndexStore(client),
    hardwarePriceStore: makeHardwarePriceStore(client),
    transactionStore: makeTransactionStore(client),
    procurementStore: makeProcurementStore(client),
    referenceDataStore: makeReferenceDataStore(client),
    eventLogStore
  })))

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
export const redis = (url: string, prefix?: string): PortableMarketStorage => {
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
