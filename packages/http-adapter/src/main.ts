import { NodeRuntime } from "@effect/platform-node"
import * as RedisStorage from "@gpu-market/storage-redis"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { serve } from "./serve"

/**
 * `npm start`: the HTTP API on 127.0.0.1:$PORT (8787) from the SQLite file $GPU_MARKET_DB
 * (./data/market.db). In demo mode (the default; GPU_MARKET_DEMO=0 turns it off) the demo
 * market is seeded on first run, extended to today on later runs, and the demo tokens work.
 */
const port = Number(process.env.PORT ?? 8787)
const host = process.env.HOST ?? "127.0.0.1"
const filename = process.env.GPU_MARKET_DB ?? "./data/market.db"
const baseUrl = process.env.GPU_MARKET_BASE_URL ?? `http://${host}:${port}`
const demo = process.env.GPU_MARKET_DEMO !== "0"
// GPU_MARKET_REDIS_URL switches to Redis (keys under GPU_MARKET_REDIS_PREFIX); SQLite otherwise.
const redisUrl = process.env.GPU_MARKET_REDIS_URL
const storage = redisUrl === undefined || redisUrl === ""
  ? { layer: SqliteStorage.layer({ filename }), name: filename }
  : { layer: RedisStorage.layerConfig, name: `redis ${RedisStorage.redactUrl(redisUrl)}` }

NodeRuntime.runMain(serve({ storage, port, host, baseUrl, demo }))
