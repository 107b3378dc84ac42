/**
 * The market in worker threads: the same calls as the Promise API, answered off the main thread.
 *
 *   npx tsx examples/worker.ts
 */
import { createMarket } from "@gpu-market/core"
import { sqlite } from "@gpu-market/storage-sqlite"
import { createWorkerMarket } from "@gpu-market/worker"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { seedSample } from "./sample-market"

const file = join(mkdtempSync(join(tmpdir(), "gpu-market-worker-")), "market.db")
const seeded = await createMarket({ storage: sqlite(file) })
const token = await seedSample(seeded)
await seeded.close()

const market = await createWorkerMarket({ storage: sqlite(file), poolSize: 2 })
const page = await market.rental.prices.latest({ gpu_canonical_name: ["h100-sxm"], sort_by: "price_usd_per_gpu_hour" }, { token })
console.log(`${page.data.length} rows from ${market.threadIds().length} workers; cheapest ${page.data[0]?.vendor}`)
await market.close()
