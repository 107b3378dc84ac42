import { createMarket, type HardwarePriceObservationInput, type RentalPriceObservationInput } from "@gpu-market/core"
import { redis } from "@gpu-market/storage-redis"
import { sqlite } from "@gpu-market/storage-sqlite"
import { hardwareObservation } from "./hardware"

/**
 * A market writer in its own process, for the change-feed tests: `tsx test/support/feed-writer.ts`
 * with FEED_DB (a SQLite file) or FEED_REDIS_URL and FEED_REDIS_PREFIX. Batch n ingests
 * FEED_RENTAL new rental products (SKUs `b<n>-<i>`) and FEED_HARDWARE hardware observations
 * (listings `w<n>-<i>`), and prints `ack <n>` once both are stored. It stops after the batch in
 * flight when stdin closes, and prints `done`.
 */

const rentalPerBatch = Number(process.env.FEED_RENTAL ?? 4)
const hardwarePerBatch = Number(process.env.FEED_HARDWARE ?? 2)
let stopping = false
process.stdin.on("end", () => (stopping = true)).resume()

const today = new Date().toISOString().slice(0, 10)
const rental = (n: number): Array<RentalPriceObservationInput> =>
  Array.from({ length: rentalPerBatch }, (_, i) => ({
    vendor: "v-feed", vendor_gpu_name: "H100 SXM", vendor_sku: `b${n}-${i}`, region: "us-east",
    gpu_canonical_name: "h100-sxm", gpu_manufacturer: "nvidia", gpu_model: "H100", gpu_count: 1, gpu_memory_gb: 80,
    contract_type: "ondemand", price_usd_per_gpu_hour: 2 + i * 0.25, raw_price: 2 + i * 0.25,
    raw_price_unit: "usd_per_instance_hour", extracted_at: new Date().toISOString()
  }))
const hardware = (n: number): Array<HardwarePriceObservationInput> =>
  Array.from({ length: hardwarePerBatch }, (_, i) => ({ ...hardwareObservation(1, 100)!, listing_ref: `w${n}-${i}`, observed_date: today }))

const storage = process.env.FEED_DB !== undefined
  ? sqlite(process.env.FEED_DB)
  : redis(process.env.FEED_REDIS_URL!, process.env.FEED_REDIS_PREFIX)
const market = await createMarket({ storage })
for (let n = 0; !stopping; n++) {
  await market.ingest.rental(rental(n))
  await market.ingest.hardware(hardware(n))
  process.stdout.write(`ack ${n}\n`)
  // A feed's pace, so a subscriber's disconnect lands mid-stream rather than after a burst.
  await new Promise((resolve) => setTimeout(resolve, 20))
}
await market.close()
process.stdout.write("done\n")
process.exit(0)
