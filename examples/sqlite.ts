/**
 * @gpu-market/storage-sqlite: a market in one SQLite file, which outlives the market that wrote
 * it. One market writes and closes; a second one opens the same file and reads.
 *
 *   npx tsx examples/sqlite.ts
 */
import { createMarket } from "@gpu-market/core"
import { sqlite } from "@gpu-market/storage-sqlite"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { analyst } from "./sample-market"

const observations = [{
  vendor: "lambda", vendor_gpu_name: "H100 SXM5 80GB", region: "us-east", gpu_canonical_name: "h100-sxm",
  gpu_manufacturer: "nvidia", gpu_model: "H100", gpu_count: 8, gpu_memory_gb: 80, contract_type: "ondemand",
  price_usd_per_gpu_hour: 2.49, raw_price: 19.92, raw_price_unit: "usd_per_instance_hour", extracted_at: "2026-06-01T00:00:00Z"
}]

const dir = mkdtempSync(join(tmpdir(), "gpu-market-example-sqlite-"))
const file = join(dir, "market.db")
try {
  const writer = await createMarket({ storage: sqlite(file) }) // creates and migrates the file
  await writer.ingest.rental(observations)
  const token = await writer.tokens.create(analyst)
  await writer.close()

  const reader = await createMarket({ storage: sqlite(file) }) // the rows and the token are still there
  const page = await reader.rental.prices.latest({ vendor: ["lambda"] }, { token })
  console.log(`reopened: ${page.data.length} row, ${page.data[0]?.vendor} ${page.data[0]?.price_usd_per_gpu_hour}`)
  await reader.close()
} finally {
  rmSync(dir, { recursive: true, force: true })
}
