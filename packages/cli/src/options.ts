import * as Options from "@effect/cli/Options"

/** The storage options every command that touches data takes (resolved by `./storage.js`). */
export const storageOptions = {
  db: Options.text("db").pipe(
    Options.withPseudoName("file"),
    Options.withDescription("SQLite file; default $GPU_MARKET_DB or ./data/market.db"),
    Options.optional
  ),
  redis: Options.text("redis").pipe(
    Options.withPseudoName("url"),
    Options.withDescription("Redis URL instead of SQLite; default $GPU_MARKET_REDIS_URL"),
    Options.optional
  ),
  redisCluster: Options.text("redis-cluster").pipe(
    Options.withPseudoName("nodes"),
    Options.withDescription("Redis Cluster host:port,…; $GPU_MARKET_REDIS_CLUSTER_NODES"),
    Options.optional
  ),
  redisSentinels: Options.text("redis-sentinels").pipe(
    Options.withPseudoName("nodes"),
    Options.withDescription("Redis Sentinels host:port,…; $GPU_MARKET_REDIS_SENTINELS"),
    Options.optional
  ),
  redisSentinelName: Options.text("redis-sentinel-name").pipe(
    Options.withPseudoName("name"),
    Options.withDescription("primary's name; $GPU_MARKET_REDIS_SENTINEL_NAME or mymaster"),
    Options.optional
  ),
  redisPrefix: Options.text("redis-prefix").pipe(
    Options.withPseudoName("prefix"),
    Options.withDescription("key prefix; $GPU_MARKET_REDIS_PREFIX or gpu-market"),
    Options.optional
  )
}
