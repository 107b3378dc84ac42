import { NodeRuntime } from "@effect/platform-node"
import { Demo, marketLayer } from "@gpu-market/core"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Effect, Layer } from "effect"
import * as Server from "./server"

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

const main = Effect.gen(function* () {
  if (demo) {
    const report = yield* Demo.seedDemo()
    yield* Effect.sync(() => console.log(report.days > 0
      ? `Seeded the demo market from ${report.firstDay} to ${report.lastDay} (${report.days} days).`
      : `Demo market is current through ${report.lastDay}.`))
  } else {
    yield* Demo.revokeDemoTokens
  }
  yield* Layer.launch(Server.layer({ port, host, baseUrl }).pipe(
    Layer.tap(() => Effect.sync(() => {
      const lines = [`gpu-market listening on ${baseUrl} (storage: ${filename})`]
      if (demo) {
        lines.push("Demo tokens (send as Authorization: Bearer <token>):")
        for (const t of Demo.DEMO_TOKENS) lines.push(`  ${t.secret.padEnd(14)} ${t.principal.name}`)
        lines.push(`Try: curl -H 'Authorization: Bearer demo-all' '${baseUrl}/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm&page_size=5'`)
      }
      // One write, so a reader that waits for "listening" has the tokens too.
      process.stdout.write(lines.join("\n") + "\n")
    }))
  ))
}).pipe(Effect.provide(marketLayer), Effect.provide(SqliteStorage.layer({ filename })))

NodeRuntime.runMain(main)
