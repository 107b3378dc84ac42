import { Options } from "@effect/cli"
import { marketLayer } from "@gpu-market/core"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { redactUrl } from "@gpu-market/storage-redis"
import { Effect, Layer, Option } from "effect"

/**
 * Where a command's market lives: a SQLite file (`--db`, default `$GPU_MARKET_DB` or
 * `./data/market.db`, as `npm start`) or a Redis server (`--redis`, default
 * `$GPU_MARKET_REDIS_URL`). Redis wins when both are given.
 */

/** The storage options every command that touches data takes. */
export const storageOptions = {
  db: Options.text("db").pipe(
    Options.withDescription("SQLite file of the market (created with its folder); default $GPU_MARKET_DB or ./data/market.db"),
    Options.optional
  ),
  redis: Options.text("redis").pipe(
    Options.withDescription("Redis URL (redis://host:6379/0) to use instead of SQLite; default $GPU_MARKET_REDIS_URL"),
    Options.optional
  ),
  redisPrefix: Options.text("redis-prefix").pipe(
    Options.withDescription("key prefix of this market in Redis (several markets can share one server); default $GPU_MARKET_REDIS_PREFIX or gpu-market"),
    Options.optional
  )
}

/** Parsed storage options. */
export interface StorageChoice {
  readonly db: Option.Option<string>
  readonly redis: Option.Option<string>
  readonly redisPrefix: Option.Option<string>
}

/** Where the market is, resolved against the environment, for messages. */
export const describeStorage = (choice: StorageChoice): string => {
  const redis = Option.getOrElse(choice.redis, () => process.env.GPU_MARKET_REDIS_URL)
  return redis !== undefined && redis !== "" ? `redis ${redactUrl(redis)}` : Option.getOrElse(choice.db, () => process.env.GPU_MARKET_DB ?? "./data/market.db")
}

/** The chosen storage backend. */
export const storageOn = (choice: StorageChoice) => {
  const redis = Option.getOrElse(choice.redis, () => process.env.GPU_MARKET_REDIS_URL)
  return redis !== undefined && redis !== ""
    ? Layer.unwrapEffect(Effect.map(
        // Loaded only when asked for, so SQLite users never load the Redis client.
        Effect.promise(() => import("@gpu-market/storage-redis")),
        (RedisStorage) => RedisStorage.layer(Option.match(Option.orElse(choice.redisPrefix, () => Option.fromNullable(process.env.GPU_MARKET_REDIS_PREFIX)), {
          onNone: () => ({ url: redis }),
          onSome: (prefix) => ({ url: redis, prefix })
        }))
      ))
    : SqliteStorage.layer({ filename: describeStorage(choice) })
}

/** The market's services over the chosen storage. */
export const marketOn = (choice: StorageChoice) => marketLayer.pipe(Layer.provideMerge(storageOn(choice)))
