import { createMarket } from "@gpu-market/core"
import { nodeHandler } from "@gpu-market/http-adapter"
import { sqlite } from "@gpu-market/storage-sqlite"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"

/**
 * A host service on node:http with a route of its own (`/health`) that mounts the market's Node
 * handler under `/market`, on a free port; `stripPrefix` hands the market URLs without it.
 */
export const startHost = async (db: string, options: { readonly stripPrefix?: boolean } = {}) => {
  const server: Server = createServer()
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const market = await createMarket({ storage: sqlite(db) })
  const handler = await nodeHandler(market, { baseUrl: `${origin}/market` })
  server.on("request", (req, res) => {
    if (req.url === "/health") return res.end("ok")
    if (req.url?.startsWith("/market/")) {
      if (options.stripPrefix === true) req.url = req.url.slice("/market".length)
      return handler.handle(req, res)
    }
    res.statusCode = 404
    res.end("host: not found")
  })
  return {
    origin,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await market.close()
    }
  }
}
