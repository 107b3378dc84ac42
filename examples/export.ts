/**
 * Exports with the Promise API: a whole history window as rows and as files, its estimate, and
 * the watermark the change feed continues from.
 *
 *   npx tsx examples/export.ts
 */
import { createMarket } from "@gpu-market/core"
import { sqlite } from "@gpu-market/storage-sqlite"
import { createWriteStream, mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { pipeline } from "node:stream/promises"
import { Readable } from "node:stream"
import { seedSample } from "./sample-market"

const dir = mkdtempSync(join(tmpdir(), "gpu-market-export-"))
const market = await createMarket({ storage: sqlite(join(dir, "market.db")) })
const token = await seedSample(market)

const exported = await market.export("rental.prices.history", { start: "2026-05-01", end: "2026-07-01" }, { token })
console.log(`watermark ${exported.watermark}`)
const estimate = await exported.estimate()
console.log(`${estimate.rows} rows; csv ${estimate.bytes.csv} B, jsonl ${estimate.bytes.jsonl} B, parquet ~${estimate.bytes.parquet} B`)

for await (const row of exported.rows()) console.log(`${row.vendor} ${row.region} ${row.price_usd_per_gpu_hour}`)
await pipeline(Readable.from(exported.bytes("parquet")), createWriteStream(join(dir, "rental-history.parquet")))
console.log("wrote rental-history.parquet")

// Changes after the export: the feed continues exactly from its watermark.
const feed = market.events({ data_type: "gpu_rental_prices" }, { token, lastEventId: exported.watermark })[Symbol.asyncIterator]()
await market.ingest.rental([{
  vendor: "lambda", vendor_gpu_name: "H100 SXM5 80GB", region: "us-east", gpu_canonical_name: "h100-sxm", gpu_manufacturer: "nvidia",
  gpu_model: "H100", gpu_count: 8, gpu_memory_gb: 80, contract_type: "ondemand",
  price_usd_per_gpu_hour: 2.49, raw_price: 19.92, raw_price_unit: "usd_per_instance_hour", extracted_at: "2026-06-02T00:00:00Z"
}])
const next = await feed.next()
if (!next.done && next.value.type === "rental_price") console.log(`then ${next.value.row.vendor} ${next.value.row.price_usd_per_gpu_hour}`)
await feed.return?.()
await market.close()
