import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createMarket, type RentalPriceObservationInput, type Storage, type StorageError } from "@gpu-market/core"
import { nodeHandler } from "@gpu-market/http-adapter"
import { redis } from "@gpu-market/storage-redis"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import type { Layer } from "effect"
import { mkdtempSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { dayIso, LAST_DAY, observations, seed } from "./support/market"
import { type RedisServer, startRedis, uniquePrefix } from "./support/redis"
import { collect } from "./support/feed-messages"

/**
 * History and live join without a gap: export, write, then follow the change feed from the
 * export's watermark (`Last-Event-ID`). The feed delivers every row the write opened, once, and
 * none the export already held; a sentinel written last bounds the wait. On SQLite and Redis,
 * in real time (the feed's follower polls and blocks on the real clock).
 */

const WINDOW = `start=${dayIso(0)}&end=${new Date(Date.now() + 86_400_000).toISOString().slice(0, 10)}`

/** Rows of a JSON Lines body. */
const lines = (text: string) => text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as { product_key: string })

const joinsWithoutAGap = async (storage: Layer.Layer<Storage, StorageError>) => {
  const market = await createMarket({ storage })
  const api = await nodeHandler(market)
  const server = createServer((req, res) => api.handle(req, res))
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const exportRows = async () => {
    const reply = await fetch(`${base}/v2/gpu/rental/prices/history?${WINDOW}&format=jsonl`, { headers: { authorization: "Bearer all" } })
    assert.strictEqual(reply.status, 200)
    return { watermark: reply.headers.get("x-market-watermark")!, rows: lines(await reply.text()) }
  }
  try {
    await market.runtime.runPromise(seed)
    const before = await exportRows()
    // New products, and a new price for products the export holds.
    const changed: Array<RentalPriceObservationInput> = [
      ...observations(LAST_DAY).slice(0, 5).map((o) => ({ ...o, price_usd_per_gpu_hour: 9.5, raw_price: 9.5 * o.gpu_count, extracted_at: new Date().toISOString() })),
      ...Array.from({ length: 5 }, (_, i) => ({ ...observations(LAST_DAY)[0]!, vendor_sku: `joined-${i}`, extracted_at: new Date().toISOString() }))
    ]
    await market.ingest.rental(changed)
    const sentinel = { ...observations(LAST_DAY)[0]!, vendor_sku: "sentinel", extracted_at: new Date().toISOString() }
    await market.ingest.rental([sentinel])
    const after = await exportRows()
    const held = new Set(before.rows.map((r) => r.product_key))
    const opened = after.rows.map((r) => r.product_key).filter((k) => !held.has(k))
    assert.strictEqual(opened.length, changed.length + 1, "the write opens a row per observation")

    const messages = await collect(market.events({ data_type: "gpu_rental_prices" }, { token: "all", lastEventId: before.watermark }),
      (m) => m.type === "rental_price" && m.row.vendor_sku === "sentinel", 30_000)
    const delivered = messages.flatMap((m) => (m.type === "rental_price" ? [m.row.product_key] : []))
    // Every row the write opened, each once, the sentinel last; none the export held.
    assert.deepStrictEqual([...delivered].sort(), [...opened].sort())
    assert.strictEqual(new Set(delivered).size, delivered.length)
    assert.isFalse(delivered.some((k) => held.has(k)))
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()))
    await market.close()
  }
}

describe("an export, then a write, then the feed from the watermark", () => {
  let redisServer: RedisServer
  beforeAll(async () => {
    redisServer = await startRedis()
  }, 60_000)
  afterAll(async () => {
    await redisServer?.stop()
  })

  it("joins without a gap on SQLite", () =>
    joinsWithoutAGap(SqliteStorage.layer({ filename: join(mkdtempSync(join(tmpdir(), "gpu-market-export-feed-")), "market.db") })), 120_000)

  it("joins without a gap on Redis", () => joinsWithoutAGap(redis(redisServer.url, uniquePrefix("export-feed"))), 120_000)
})
