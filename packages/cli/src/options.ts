import * as Options from "@effect/cli/Options"

/** The storage options every command that touches data takes (resolved by `./storage.js`). */
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
