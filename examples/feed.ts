/**
 * Following the market as it changes: the change feed in-process (`market.events`) and over HTTP
 * (`GET /v2/events` through the HTTP client), while prices are written.
 *
 *   npx tsx examples/feed.ts
 */
import { createMarket, type PrincipalInput } from "@gpu-market/core"
import { nodeHandler } from "@gpu-market/http-adapter"
import { createClient } from "@gpu-market/client"
import { sqlite } from "@gpu-market/storage-sqlite"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"

const dir = mkdtempSync(join(tmpdir(), "gpu-market-feed-example-"))
const file = join(dir, "market.db")
const market = await createMarket({ storage: sqlite(file) })
const analyst: PrincipalInput = {
  id: "analyst", name: "Example analyst", grants: { gpu_rental_prices: { history: { _tag: "unrestricted" } } },
  indices: "all", legacy_custom_index: false, procurement: false, rate_limit_per_minute: 600
}
const token = await market.tokens.create(analyst)
const h100 = (vendor: string, price: number) => ({
  vendor, vendor_gpu_name: "H100 SXM5 80GB", region: "us-east", gpu_canonical_name: "h100-sxm", gpu_manufacturer: "nvidia",
  gpu_model: "H100", gpu_count: 8, gpu_memory_gb: 80, contract_type: "ondemand", price_usd_per_gpu_hour: price,
  raw_price: price * 8, raw_price_unit: "usd_per_instance_hour", extracted_at: new Date().toISOString()
})
// The same market over HTTP.
const handler = await nodeHandler(market)
const server = createServer(handler.handle)
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

// Prices keep coming while we follow them.
const writes = setInterval(() => void market.ingest.rental([h100("lambda", 2 + Math.random())]), 50)
let lastEventId: string | undefined

// In-process: the next H100 rental price change.
for await (const m of market.events({ data_type: "gpu_rental_prices", gpu: "h100-sxm" }, { token })) {
  if (m.type === "rental_price") console.log(`in-process: ${m.row.vendor} ${m.row.price_usd_per_gpu_hour > 2 ? "above" : "at"} 2 USD`)
  lastEventId = m.id
  break // or keep going; after a `dropped` message, resume with { token, lastEventId: m.id }
}
// Over HTTP, resumed by the client after a cut connection or a slow-consumer drop:
const client = createClient({ baseUrl, token })
for await (const m of client.events({ gpu: "h100-sxm" }, { lastEventId })) {
  console.log(`over HTTP: ${m.type}, after ${lastEventId === undefined ? "nothing" : "the in-process one"}`)
  break
}

clearInterval(writes)
server.closeAllConnections()
server.close()
await market.close()
rmSync(dir, { recursive: true, force: true })
