/**
 * @gpu-market/storage-redis: the gpu-market stores in Redis, shared by any number of processes.
 * Rows are msgpack (msgpackr records); pages walk sorted-set indexes kept on write; every write
 * is one checked Lua batch; requests fail fast with a `StorageError` while Redis is away.
 */
import { type PortableMarketStorage, portableStorage, type Storage, type StorageError } from "@gpu-market/core"
import { rowCacheRowsOf, storageContext, type Stores } from "@gpu-market/core/storage"
import * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { makeClient, type RedisOptions } from "./client.js"
import { makeHardwarePriceStore } from "./hardware-prices.js"
import { markStore } from "./identity.js"
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
import { upgradeHardwareTerms } from "./hardware-terms.js"
import type { RowCacheOptions } from "./table.js"

export type { RedisOptions } from "./client.js"

/**
 * Connects for the life of the scope, marks the store (`markStore`: the mark `/readyz` checks)
 * and builds the stores. Fails with a `StorageError` when Redis cannot be reached within the
 * connect timeout; once connected, requests fail fast while Redis is away and the connection
 * comes back by itself. Hardware data stored before the descriptive fields held terms is
 * rewritten to terms first (`upgradeHardwareTerms`).
 */
export const make = (options: RedisOptions): Effect.Effect<Stores, StorageError, Scope.Scope> =>
  Effect.suspend(() => {
    // A size that cannot work dies here, before anything connects.
    const rowCache: RowCacheOptions = { rows: rowCacheRowsOf(options.rowCacheRows) }
    return Effect.gen(function* () {
      const client = yield* makeClient(options)
      yield* upgradeHardwareTerms(client)
      const settingsStore = makeSettingsStore(client)
      return {
        rentalStore: makeRentalPriceStore(client, rowCache),
        tokenStore: makeTokenStore(client),
        rateLimitStore: makeRateLimitStore(client),
        settingsStore,
        llmTokenPriceStore: makeLlmTokenPriceStore(client, rowCache),
        indexStore: makeIndexStore(client),
        hardwarePriceStore: makeHardwarePriceStore(client),
        transactionStore: makeTransactionStore(client),
        procurementStore: makeProcurementStore(client),
        referenceDataStore: makeReferenceDataStore(client),
        eventLogStore: yield* makeEventLogStore(client),
        pipelines: true,
        readiness: yield* markStore(settingsStore)
      }
    })
  })


/**
 * Every store in the Redis `options` name, over one connection the layer opens and closes; calls
 * started together share round trips (`StorePipelines`).
 */
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

/** Where `options` connect, fit to print: the URL without credentials, or the nodes or sentinels. */
export const describeRedis = (options: RedisOptions): string =>
  options.cluster !== undefined
    ? `redis cluster ${options.cluster.join(",")}`
    : options.sentinels !== undefined
    ? `redis sentinel ${options.sentinelName ?? "mymaster"} via ${options.sentinels.join(",")}`
    : `redis ${redactUrl(options.url ?? "")}`

/**
 * The Redis as a market's storage: `createMarket({ storage: redis("redis://127.0.0.1:6379") })`,
 * or any topology: `redis({ cluster: ["10.0.0.1:6379", "10.0.0.2:6379"] })`,
 * `redis({ sentinels: ["10.0.0.1:26379"], sentinelName: "market" })`.
 * Portable: `createWorkerMarket({ storage: redis(url) })` connects from each worker.
 */
export const redis = (where: string | RedisOptions, prefix?: string): PortableMarketStorage => {
  const base: RedisOptions = typeof where === "string" ? { url: where } : where
  const options: RedisOptions = prefix === undefined ? base : { ...base, prefix }
  return portableStorage(layer(options), { module: import.meta.url, options })
}

const list = (text: string) => text.split(",").map((s) => s.trim()).filter((s) => s !== "")

/**
 * The options the environment names, or `undefined` when it names no Redis. The topology is one
 * of `GPU_MARKET_REDIS_URL`, `GPU_MARKET_REDIS_CLUSTER_NODES` (`host:port,host:port`) and
 * `GPU_MARKET_REDIS_SENTINELS` (`host:port,…`, with `GPU_MARKET_REDIS_SENTINEL_NAME`, default
 * `mymaster`); with it `GPU_MARKET_REDIS_PREFIX`, `GPU_MARKET_REDIS_USERNAME`,
 * `GPU_MARKET_REDIS_PASSWORD`, `GPU_MARKET_REDIS_READ_FROM_REPLICAS` (`1`/`true`) and
 * `GPU_MARKET_REDIS_REPLICAS_TO_ACK` (a whole number). Throws, naming the variable, on a
 * value it cannot use or on two topologies at once.
 */
export const environmentOptions = (env: Readonly<Record<string, string | undefined>> = process.env): RedisOptions | undefined => {
  const read = (name: string) => {
    const v = env[`GPU_MARKET_REDIS_${name}`]?.trim()
    return v === undefined || v === "" ? undefined : v
  }
  const url = read("URL"), cluster = read("CLUSTER_NODES"), sentinels = read("SENTINELS")
  const named = [url && "GPU_MARKET_REDIS_URL", cluster && "GPU_MARKET_REDIS_CLUSTER_NODES", sentinels && "GPU_MARKET_REDIS_SENTINELS"].filter(Boolean)
  if (named.length === 0) return undefined
  if (named.length > 1) throw new Error(`${named.join(" and ")} are both set; set one`)
  const toAck = read("REPLICAS_TO_ACK")
  if (toAck !== undefined && !/^\d+$/.test(toAck)) throw new Error(`GPU_MARKET_REDIS_REPLICAS_TO_ACK is ${JSON.stringify(toAck)}; expected a whole number`)
  const replicas = read("READ_FROM_REPLICAS")
  if (replicas !== undefined && !/^(1|0|true|false)$/.test(replicas)) throw new Error(`GPU_MARKET_REDIS_READ_FROM_REPLICAS is ${JSON.stringify(replicas)}; expected 1 or 0`)
  const optional = { prefix: read("PREFIX"), username: read("USERNAME"), password: read("PASSWORD"), sentinelName: read("SENTINEL_NAME") }
  return {
    ...(url !== undefined ? { url } : cluster !== undefined ? { cluster: list(cluster) } : { sentinels: list(sentinels!) }),
    ...Object.fromEntries(Object.entries(optional).filter(([, v]) => v !== undefined)),
    ...(toAck === undefined ? {} : { replicasToAck: Number(toAck) }),
    ...(replicas === "1" || replicas === "true" ? { readFromReplicas: true } : {})
  }
}

/** `layer` from the environment (`environmentOptions`); one of the topology variables is required. */
export const layerConfig: Layer.Layer<Storage, StorageError | ConfigError.ConfigError> = Layer.unwrapEffect(
  Effect.suspend(() => {
    try {
      const options = environmentOptions()
      return options === undefined
        ? Effect.fail(ConfigError.MissingData([], "one of GPU_MARKET_REDIS_URL, GPU_MARKET_REDIS_CLUSTER_NODES, GPU_MARKET_REDIS_SENTINELS is required"))
        : Effect.succeed(layer(options))
    } catch (e) {
      return Effect.fail(ConfigError.InvalidData([], (e as Error).message))
    }
  })
)
