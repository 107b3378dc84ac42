/**
 * The market as a fetch handler (`Request → Response`), for fetch-style runtimes, mounted under
 * /market; and the typed HTTP client calling through it.
 *
 *   npx tsx examples/fetch-handler.ts
 */
import { createMarket, type Page, type RentalPrice } from "@gpu-market/core"
import { fetchHandler } from "@gpu-market/http-adapter"
import { createClient } from "@gpu-market/client"
import { sqlite } from "@gpu-market/storage-sqlite"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { seedSample } from "./sample-market"

const file = join(mkdtempSync(join(tmpdir(), "gpu-market-fetch-")), "market.db")
const market = await createMarket({ storage: sqlite(file) })
const token = await seedSample(market)

const api = await fetchHandler(market, { baseUrl: "https://app.example/market" })
const response = await api.fetch(new Request(
  "https://app.example/market/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm&page_size=2",
  { headers: { authorization: `Bearer ${token}` } }
))
const page = (await response.json()) as Page<RentalPrice>
console.log(`${response.status}: ${page.data.length} rows; next page at ${page.meta.next?.url.split("?")[0]}`)

// The typed client, here over the same handler instead of the network:
const client = createClient({ baseUrl: "https://app.example/market", token, fetch: api.fetch })
let rows = 0
for await (const row of client.rental.prices.latest.rows({ gpu_canonical_name: ["h100-sxm"], page_size: 2 })) if (row.valid_to === null) rows++
console.log(`client followed meta.next.url through ${rows} rows`)
await market.close()
