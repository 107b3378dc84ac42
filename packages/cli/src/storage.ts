import {
  decodeMarketSettings, type IngestBoundsConfig, marketRuntimeLayer, type MarketSettings, marketSettingsConfig, marketSettingsProblem, type RateLimitMode
} from "@gpu-market/core"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import { wholeNumberFromEnvironment } from "./environment.js"

/**
 * Where a command's market lives: a SQLite file (`--db`, default `$GPU_MARKET_DB` or
 * `./data/market.db`, as `npm start`) or Redis: one server (`--redis`, default
 * `$GPU_MARKET_REDIS_URL`), a Redis Cluster (`--redis-cluster`, default
 * `$GPU_MARKET_REDIS_CLUSTER_NODES`) or a Sentinel-watched primary (`--redis-sentinels` and
 * `--redis-sentinel-name`, default `$GPU_MARKET_REDIS_SENTINELS`, `$GPU_MARKET_REDIS_SENTINEL_NAME`),
 * keys under `--redis-prefix` or `$GPU_MARKET_REDIS_PREFIX`. A topology given on the command line
 * replaces the environment's; the rest of the Redis settings come from the environment
 * (`environmentOptions` of the Redis backend). Redis wins when both are given. The Redis backend
 * is loaded only when it is chosen, so a SQLite start never loads the Redis client.
 */

/** Parsed storage options (`./options.js`); none given means the environment decides. */
export interface StorageChoice {
  readonly db: Option.Option<string>
  readonly redis: Option.Option<string>
  readonly redisCluster: Option.Option<string>
  readonly redisSentinels: Option.Option<string>
  readonly redisSentinelName: Option.Option<string>
  readonly redisPrefix: Option.Option<string>
}

/** The choice the environment alone makes, as `npm start` reads it. */
export const fromEnvironment: StorageChoice = {
  db: Option.none(), redis: Option.none(), redisCluster: Option.none(), redisSentinels: Option.none(), redisSentinelName: Option.none(), redisPrefix: Option.none()
}

type Resolved =
  | { readonly _tag: "sqlite"; readonly filename: string }
  | { readonly _tag: "redis"; readonly env: Readonly<Record<string, string | undefined>> }

const TOPOLOGY = ["GPU_MARKET_REDIS_URL", "GPU_MARKET_REDIS_CLUSTER_NODES", "GPU_MARKET_REDIS_SENTINELS"] as const

/** The environment with the command line's Redis options written over it, if it names Redis. */
const resolve = (choice: StorageChoice): Resolved => {
  const given = [choice.redis, choice.redisCluster, choice.redisSentinels]
  const env: Record<string, string | undefined> = { ...process.env }
  // A topology on the command line replaces the environment's, whichever that was.
  if (given.some(Option.isSome)) given.forEach((o, i) => (env[TOPOLOGY[i]!] = Option.getOrUndefined(o)))
  for (const [name, o] of [["GPU_MARKET_REDIS_SENTINEL_NAME", choice.redisSentinelName], ["GPU_MARKET_REDIS_PREFIX", choice.redisPrefix]] as const) {
    if (Option.isSome(o)) env[name] = o.value
  }
  return TOPOLOGY.some((name) => (env[name] ?? "") !== "")
    ? { _tag: "redis", env }
    : { _tag: "sqlite", filename: Option.getOrElse(choice.db, () => process.env.GPU_MARKET_DB ?? "./data/market.db") }
}

/** The Redis backend, loaded, and the options the environment and command line give it. */
const redisBackend = (env: Resolved & { readonly _tag: "redis" }) =>
  Effect.flatMap(Effect.promise(() => import("@gpu-market/storage-redis")), (R) =>
    Effect.try({ try: () => ({ R, options: R.environmentOptions(env.env)! }), catch: (e) => e as Error }))

/** The SQLite file the choice names, or none where it names Redis. */
export const sqliteFileOf = (choice: StorageChoice): Option.Option<string> => {
  const where = resolve(choice)
  return where._tag === "sqlite" ? Option.some(where.filename) : Option.none()
}

/** Where the market is, for messages: the file, or the Redis URL without its credentials, or the nodes. */
export const describeStorage = (choice: StorageChoice): Effect.Effect<string, Error> => {
  const where = resolve(choice)
  return where._tag === "sqlite" ? Effect.succeed(where.filename) : Effect.map(redisBackend(where), ({ R, options }) => R.describeRedis(options))
}

/** How a command uses its storage: `bulk` loads many rows (an import); `serve` serves them, and checks a SQLite file's integrity meanwhile. */
export interface StorageUse {
  readonly bulk?: boolean
  readonly serve?: boolean
}

/**
 * WAL pages a bulk load's SQLite connection writes between checkpoints (`SqliteOptions.checkpointPages`):
 * about 1 GiB, so a page its writes change again and again is copied into the file once in a while
 * rather than after every write, which an import's large writes would otherwise cost each time (BENCHMARKS.md).
 */
const BULK_CHECKPOINT_PAGES = 250_000

/** What the command line gives of the market's settings; each wins over its variable. */
export interface GivenSettings {
  /** `--rate-limits`. */
  readonly rateLimits?: Option.Option<RateLimitMode>
  /** `--page-cache-mb`. */
  readonly pageCacheMb?: Option.Option<number>
  /** An import's or a sync's bounds (`--bounds`, its policy). */
  readonly bounds?: IngestBoundsConfig
}

/**
 * The market's settings of a command: the command line's over the environment's
 * (`marketSettingsConfig`: `$GPU_MARKET_RATE_LIMITS`, `$GPU_MARKET_PAGE_CACHE_MB`,
 * `$GPU_MARKET_HARDWARE_VOCABULARY`, …), decoded as `createMarket` decodes its options. Rate
 * limits default by backend: `process` on SQLite, where one server per file is the deployment
 * `npm start` makes (several servers on one file pass `shared`), and `shared` on Redis, which is
 * there to be shared; the workers of one `serve --workers N` count in their primary. Settings that cannot work fail before anything opens, naming the variable.
 */
export const settingsOn = (choice: StorageChoice, given: GivenSettings = {}): Effect.Effect<MarketSettings & { readonly rateLimits: RateLimitMode }, Error> =>
  Effect.gen(function* () {
    const environment = yield* Effect.mapError(marketSettingsConfig, (e) => new Error(marketSettingsProblem(e)))
    const rateLimits = Option.getOrElse(given.rateLimits ?? Option.none(), () => environment.rateLimits ?? (resolve(choice)._tag === "sqlite" ? "process" : "shared"))
    const pageCacheMb = Option.getOrElse(given.pageCacheMb ?? Option.none(), () => environment.pageCacheMb)
    const settings = yield* Effect.try({
      try: () => decodeMarketSettings({
        ...environment, rateLimits, ...(pageCacheMb === undefined ? {} : { pageCacheMb }), ...(given.bounds === undefined ? {} : { bounds: given.bounds })
      }),
      catch: (e) => new Error(ParseResult.isParseError(e) ? marketSettingsProblem(e) : String(e))
    })
    return { ...settings, rateLimits }
  })

/** `$GPU_MARKET_ROW_CACHE_ROWS`: rows of each data type a process keeps for its pages (docs/guides/caching.md, "Row cache"); unset is the backend's default. */
const rowCacheRowsFromEnvironment = wholeNumberFromEnvironment("GPU_MARKET_ROW_CACHE_ROWS", "a whole number of rows (0 turns the row cache off)")

/** The chosen storage backend. */
export const storageOn = (choice: StorageChoice, use: StorageUse = {}) => {
  const where = resolve(choice)
  // A bulk load serves no pages, so keeps no rows and does not read the row cache's size.
  if (where._tag === "sqlite" && use.bulk === true) {
    return SqliteStorage.layer({ filename: where.filename, checkpointPages: BULK_CHECKPOINT_PAGES, bulk: true })
  }
  return Layer.unwrapEffect(Effect.map(rowCacheRowsFromEnvironment, (rows) => {
    const rowCache = rows === undefined ? {} : { rowCacheRows: rows }
    return where._tag === "sqlite"
      ? SqliteStorage.layer({ filename: where.filename, ...rowCache, integrityCheck: use.serve === true })
      : Layer.unwrapEffect(Effect.map(redisBackend(where), ({ R, options }) => R.layer({ ...options, ...rowCache })))
  }))
}

/**
 * The market over the chosen storage, assembled as every other way of running it is
 * (`marketRuntimeLayer`), with the settings of `settingsOn`; an import's write paths check
 * `bounds` when given.
 */
export const marketOn = (choice: StorageChoice, use: StorageUse = {}, bounds?: IngestBoundsConfig) =>
  Layer.unwrapEffect(Effect.map(settingsOn(choice, bounds === undefined ? {} : { bounds }), (settings) =>
    marketRuntimeLayer(settings, { storage: storageOn(choice, use) })))
