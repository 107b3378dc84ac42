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
  redisCluster: Options.text("redis-cluster").pipe(
    Options.withDescription("Redis Cluster seed nodes (host:port,host:port) to use instead of SQLite; default $GPU_MARKET_REDIS_CLUSTER_NODES"),
    Options.optional
  ),
  redisSentinels: Options.text("redis-sentinels").pipe(
    Options.withDescription("Redis Sentinels (host:port,host:port) that name the primary to use instead of SQLite; default $GPU_MARKET_REDIS_SENTINELS"),
    Options.optional
  ),
  redisSentinelName: Options.text("redis-sentinel-name").pipe(
    Options.withDescription("master name the sentinels monitor; default $GPU_MARKET_REDIS_SENTINEL_NAME or mymaster"),
    Options.optional
  ),
  redisPrefix: Options.text("redis-prefix").pipe(
    Options.withDescription("key prefix of this market in Redis (several markets can share one server); default $GPU_MARKET_REDIS_PREFIX or gpu-market"),
    Options.optional
  )
}
