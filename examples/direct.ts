/**
 * The Promise API: the market in-process for an app that does not use Effect.
 *
 *   npx tsx examples/direct.ts
 */
import { createMarket, MarketProblemError } from "@gpu-market/core"
import { sqlite } from "@gpu-market/storage-sqlite"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { seedSample } from "./sample-market"

const file = join(mkdtempSync(join(tmpdir(), "gpu-market-direct-")), "market.db")

const market = await createMarket({ storage: sqlite(file) })
const token = await seedSample(market)

const page = await market.rental.prices.latest(
  { gpu_canonical_name: ["h100-sxm"], sort_by: "price_usd_per_gpu_hour", page_size: 2 },
  { token }
)
for (const row of page.data) console.log(`${row.vendor} ${row.region} ${row.price_usd_per_gpu_hour}`)

// Every page, following meta.next:
let rows = 0
for await (const p of market.rental.prices.latest.pages({ gpu_canonical_name: ["h100-sxm"], page_size: 2 }, { token })) rows += p.data.length
console.log(`${rows} rows in all pages`)

try {
  await market.rental.prices.latest({}, { token })
} catch (e) {
  if (e instanceof MarketProblemError) console.log(`${e.status} ${e.code}: ${e.problem.detail}`)
}
await market.close()
