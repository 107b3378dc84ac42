/**
 * @gpu-market/storage-redis through the Promise API: `redis(url, prefix)` is the storage, and
 * every process that opens the same URL and prefix shares one market. Here two markets in one
 * process: one writes, the other reads over its own connection.
 *
 *   GPU_MARKET_REDIS_URL=redis://127.0.0.1:6379 npx tsx examples/redis-market.ts
 */
import { createMarket } from "@gpu-market/core"
import { redactUrl, redis } from "@gpu-market/storage-redis"
import { Redis } from "ioredis"
import { analyst } from "./sample-market"

const url = process.env.GPU_MARKET_REDIS_URL ?? "redis://127.0.0.1:6379"
// A fresh namespace per run, removed at the end, so the example never meets an earlier run's data.
const prefix = `gpu-market-example-${Date.now().toString(36)}`

const observations = [{
  vendor: "lambda", vendor_gpu_name: "H100 SXM5 80GB", region: "us-east", gpu_canonical_name: "h100-sxm",
  gpu_manufacturer: "nvidia", gpu_model: "H100", gpu_count: 8, gpu_memory_gb: 80, contract_type: "ondemand",
  price_usd_per_gpu_hour: 2.49, raw_price: 19.92, raw_price_unit: "usd_per_instance_hour", extracted_at: "2026-06-01T00:00:00Z"
}]

try {
  const writer = await createMarket({ storage: redis(url, prefix) })
  const reader = await createMarket({ storage: redis(url, prefix) })
  await writer.ingest.rental(observations)
  const token = await writer.tokens.create(analyst)
  const page = await reader.rental.prices.latest({ vendor: ["lambda"] }, { token })
  console.log(`${redactUrl(url)} under ${prefix}: ${page.data.length} row, ${page.data[0]?.vendor} ${page.data[0]?.price_usd_per_gpu_hour}`)
  await writer.close()
  await reader.close()
} finally {
  // Deletes this run's keys.
  const client = new Redis(url, { lazyConnect: true })
  await client.connect()
  for await (const keys of client.scanStream({ match: `${prefix}:*`, count: 500 })) if (keys.length > 0) await client.unlink(...(keys as Array<string>))
  await client.quit()
}
