import { NodeRuntime } from "@effect/platform-node"
import { marketLayer, type RateLimitMode, withRateLimits } from "@gpu-market/core"
import { layer as serverLayer } from "@gpu-market/http-adapter"
import * as RedisStorage from "@gpu-market/storage-redis"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Layer } from "effect"

/**
 * Child process: the real standalone server (the http-adapter layer on @effect/platform-node)
 * over the benchmark file (`BENCH_DB`), or a Redis the bench loaded (`BENCH_REDIS_URL`, keys
 * under `BENCH_REDIS_PREFIX`), launched as `gpu-market serve` launches it (rate limits in this
 * process on SQLite, shared on Redis, unless `BENCH_RATE_LIMITS` says otherwise) but without demo
 * seeding, which would write demo rows into the market being measured.
 */
const port = Number(process.env.BENCH_PORT)
const filename = process.env.BENCH_DB
const redisUrl = process.env.BENCH_REDIS_URL
if (!Number.isInteger(port) || (filename === undefined && redisUrl === undefined)) throw new Error("BENCH_PORT and BENCH_DB or BENCH_REDIS_URL are required")
const storage = redisUrl !== undefined
  ? RedisStorage.layer({ url: redisUrl, prefix: process.env.BENCH_REDIS_PREFIX ?? "bench" })
  : SqliteStorage.layer({ filename: filename! })
const rateLimits = (process.env.BENCH_RATE_LIMITS ?? (redisUrl !== undefined ? "shared" : "process")) as RateLimitMode

NodeRuntime.runMain(Layer.launch(
  serverLayer({ port, host: "127.0.0.1" }).pipe(Layer.provide(marketLayer), Layer.provide(withRateLimits(storage, rateLimits)))
))
