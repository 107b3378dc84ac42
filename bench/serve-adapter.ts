import { NodeRuntime } from "@effect/platform-node"
import { marketLayer, withRateLimits } from "@gpu-market/core"
import { layer as serverLayer } from "@gpu-market/http-adapter"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Layer } from "effect"

/**
 * Child process: the real standalone server (the http-adapter layer on @effect/platform-node)
 * over the benchmark file, launched as `main.ts` launches it (rate limits in this process, as
 * `gpu-market serve` counts them on SQLite) but without demo seeding, which would write demo rows
 * into the market being measured.
 */
const port = Number(process.env.BENCH_PORT)
const filename = process.env.BENCH_DB
if (!Number.isInteger(port) || filename === undefined) throw new Error("BENCH_PORT and BENCH_DB are required")

NodeRuntime.runMain(Layer.launch(
  serverLayer({ port, host: "127.0.0.1" }).pipe(Layer.provide(marketLayer), Layer.provide(withRateLimits(SqliteStorage.layer({ filename }), "process")))
))
