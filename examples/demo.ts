/**
 * @gpu-market/demo: seed a small deterministic demo market (every data type, through today) into
 * a SQLite file, then read it with a demo token through the Promise API.
 *
 *   npx tsx examples/demo.ts
 */
import { createMarket, marketLayer } from "@gpu-market/core"
import { DEMO_TOKENS, seedDemo } from "@gpu-market/demo"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Effect, Layer } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const dir = mkdtempSync(join(tmpdir(), "gpu-market-example-demo-"))
const filename = join(dir, "market.db")
try {
  // Seeding is an Effect over the market's services: 14 days, 3 vendors, 4 GPUs.
  const MarketLive = marketLayer.pipe(Layer.provideMerge(SqliteStorage.layer({ filename })))
  const report = await Effect.runPromise(seedDemo({ days: 14, vendors: 3, gpus: 4 }).pipe(Effect.provide(MarketLive)))
  console.log(`seeded ${report.days} days through ${report.lastDay}; tokens ${DEMO_TOKENS.map((t) => t.secret).join(", ")}`)

  const market = await createMarket({ storage: SqliteStorage.sqlite(filename) })
  const page = await market.rental.prices.latest({ gpu_search: ["h100"], sort_by: "price_usd_per_gpu_hour", page_size: 3 }, { token: "demo-all" })
  for (const row of page.data) console.log(`${row.vendor} ${row.gpu_canonical_name} ${row.region} ${row.price_usd_per_gpu_hour}`)
  await market.close()
} finally {
  rmSync(dir, { recursive: true, force: true })
}
