/**
 * A plain node:http service with routes of its own that mounts the market under /market.
 *
 *   PORT=3000 npx tsx examples/http-server.ts    (PORT defaults to a free port)
 */
import { createMarket } from "@gpu-market/core"
import { nodeHandler } from "@gpu-market/http-adapter"
import { sqlite } from "@gpu-market/storage-sqlite"
import { mkdtempSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { seedSample } from "./sample-market"

const file = join(mkdtempSync(join(tmpdir(), "gpu-market-http-")), "market.db")
const market = await createMarket({ storage: sqlite(file) })
const token = await seedSample(market)

const server = createServer()
await new Promise<void>((resolve) => server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", resolve))
const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

const api = await nodeHandler(market, { baseUrl: `${origin}/market` })
server.on("request", (req, res) => {
  if (req.url === "/health") return res.end("ok\n")
  if (req.url?.startsWith("/market/")) return api.handle(req, res)
  res.writeHead(404).end("not found\n")
})

console.log(`listening on ${origin} (market under ${origin}/market)`)
console.log(`curl -H 'Authorization: Bearer ${token}' '${origin}/market/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm&page_size=2'`)
process.on("SIGTERM", () => server.close(() => void market.close()))
