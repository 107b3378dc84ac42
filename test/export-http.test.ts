import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createMarket, type LocalMarket } from "@gpu-market/core"
import { nodeHandler } from "@gpu-market/http-adapter"
import { redis } from "@gpu-market/storage-redis"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { mkdtempSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assertCsvHolds, assertJsonlHolds, assertParquetHolds } from "./support/exports"
import { dayIso, LAST_DAY, seed } from "./support/market"
import { type RedisServer, startRedis, uniquePrefix } from "./support/redis"

/**
 * Exports over HTTP, through a mounted Node handler: `format=` and `Accept` choose the file,
 * which streams with its name, type and watermark and holds the rows the pages hold; an estimate
 * sizes it; bad parameters are the page's problems; an export counts as `EXPORT_REQUESTS`
 * requests; and a store lost mid-export cuts the connection, so the body cannot pass for whole.
 * Real time: the fixture's days lie in the past, and every window here is explicit.
 */

const HISTORY = `/v2/gpu/rental/prices/history?start=${dayIso(0)}&end=${dayIso(LAST_DAY + 1)}`

/** A market seeded with the fixture, served by `nodeHandler` on a free port. */
const serve = async (market: LocalMarket) => {
  await market.runtime.runPromise(seed)
  const api = await nodeHandler(market)
  const server: Server = createServer((req, res) => api.handle(req, res))
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { base, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

const get = (base: string, path: string, token: string, headers: Record<string, string> = {}) =>
  fetch(base + path, { headers: { authorization: `Bearer ${token}`, ...headers } })

/** Every row of `path`, walking `meta.next`. */
const walk = async (base: string, path: string, token: string) => {
  const rows: Array<Record<string, unknown>> = []
  let next: string | null = `${path}&page_size=1000`
  while (next !== null) {
    const body = await (await get(base, next, token)).json() as { data: Array<Record<string, unknown>>; meta: { next: { url: string } | null } }
    rows.push(...body.data)
    next = body.meta.next === null ? null : body.meta.next.url.slice(base.length)
  }
  return rows
}

describe("exports over HTTP", () => {
  let market: LocalMarket
  let served: Awaited<ReturnType<typeof serve>>
  beforeAll(async () => {
    market = await createMarket({ storage: SqliteStorage.layer({ filename: join(mkdtempSync(join(tmpdir(), "gpu-market-export-http-")), "market.db") }) })
    served = await serve(market)
  }, 120_000)
  afterAll(async () => {
    await served?.close()
    await market?.close()
  })

  it("streams each format with its name, type and watermark, holding the rows the pages hold", async () => {
    const rows = await walk(served.base, HISTORY, "all")
    assert.isAbove(rows.length, 100)
    for (const [ask, type, file] of [
      [{ query: "&format=csv" }, "text/csv; charset=utf-8", "gpu-rental-prices-history.csv"],
      [{ accept: "application/x-ndjson" }, "application/x-ndjson", "gpu-rental-prices-history.jsonl"],
      [{ query: "&format=parquet" }, "application/vnd.apache.parquet", "gpu-rental-prices-history.parquet"]
    ] as const) {
      const reply = await get(served.base, HISTORY + ("query" in ask ? ask.query : ""), "all", "accept" in ask ? { accept: ask.accept } : {})
      assert.strictEqual(reply.status, 200)
      assert.strictEqual(reply.headers.get("content-type"), type)
      assert.strictEqual(reply.headers.get("content-disposition"), `attachment; filename="${file}"`)
      assert.match(reply.headers.get("x-market-watermark") ?? "", /^\d+$/)
      const bytes = new Uint8Array(await reply.arrayBuffer())
      if (type.startsWith("text/csv")) assertCsvHolds("gpu_rental_prices", bytes, rows)
      else if (type === "application/x-ndjson") assertJsonlHolds(bytes, rows)
      else await assertParquetHolds("gpu_rental_prices", bytes, rows)
    }
  })

  it("estimates rows and bytes per format without writing the file", async () => {
    const estimate = await (await get(served.base, `${HISTORY}&estimate=true`, "all")).json() as { rows: number; bytes: Record<string, number>; watermark: string }
    const csv = await (await get(served.base, `${HISTORY}&format=csv`, "all")).arrayBuffer()
    const jsonl = await (await get(served.base, `${HISTORY}&format=jsonl`, "all")).arrayBuffer()
    const parquet = await (await get(served.base, `${HISTORY}&format=parquet`, "all")).arrayBuffer()
    assert.strictEqual(estimate.rows, (await walk(served.base, HISTORY, "all")).length)
    assert.strictEqual(estimate.bytes.csv, csv.byteLength)
    assert.strictEqual(estimate.bytes.jsonl, jsonl.byteLength)
    // Exact up to one row group (25,000 rows), which this export fits in.
    assert.strictEqual(estimate.bytes.parquet, parquet.byteLength)
  })

  it("refuses what the page refuses, with the same problem, and a bad format by name", async () => {
    const page = await get(served.base, HISTORY, "current")
    const exported = await get(served.base, `${HISTORY}&format=csv`, "current")
    assert.strictEqual(exported.status, page.status)
    assert.strictEqual(exported.headers.get("content-type"), "application/problem+json")
    assert.strictEqual(((await exported.json()) as { code: string }).code, ((await page.json()) as { code: string }).code)
    const bad = await get(served.base, `${HISTORY}&format=xlsx`, "all")
    assert.strictEqual(bad.status, 422)
    const problem = await bad.json() as { errors: Array<{ parameter: string }> }
    assert.deepStrictEqual(problem.errors.map((e) => e.parameter), ["format"])
    const unknown = await get(served.base, `${HISTORY}&format=csv&colour=red`, "all")
    assert.strictEqual(unknown.status, 422)
  })

  it("counts an export as ten requests against the rate limit", async () => {
    await market.tokens.create({
      id: "t-fifteen", name: "fifteen", grants: { gpu_rental_prices: { history: { _tag: "unrestricted" } } }, indices: "all",
      legacy_custom_index: false, procurement: false, rate_limit_per_minute: 15
    }, "fifteen")
    const first = await get(served.base, `${HISTORY}&format=jsonl`, "fifteen")
    assert.strictEqual(first.status, 200)
    assert.strictEqual(first.headers.get("x-ratelimit-remaining"), "5")
    await first.arrayBuffer()
    const second = await get(served.base, `${HISTORY}&format=jsonl`, "fifteen")
    assert.strictEqual(second.status, 429)
  })
})

describe("an export over HTTP whose store fails mid-stream", () => {
  let server: RedisServer
  beforeAll(async () => {
    server = await startRedis()
  }, 60_000)
  afterAll(async () => {
    await server?.stop()
  })

  it("cuts the connection: the body ends in an error, never as a short file", async () => {
    const market = await createMarket({ storage: redis(server.url, uniquePrefix("export-http")) })
    const served = await serve(market)
    try {
      // Enough rows that, read one per batch, the export is still running when the store goes.
      await market.ingest.rental(Array.from({ length: 3000 }, (_, i) => ({
        vendor: "v-bulk", vendor_gpu_name: "H100", vendor_sku: `sku-${i}`, region: "us-east", gpu_canonical_name: "h100-sxm",
        gpu_manufacturer: "nvidia", gpu_model: "H100", gpu_count: 1, gpu_memory_gb: 80, contract_type: "ondemand",
        price_usd_per_gpu_hour: 2, raw_price: 2, raw_price_unit: "usd_per_instance_hour", extracted_at: dayIso(LAST_DAY)
      })))
      const reply = await get(served.base, `${HISTORY}&format=jsonl&page_size=1`, "all")
      assert.strictEqual(reply.status, 200)
      const reader = reply.body!.getReader()
      assert.isFalse((await reader.read()).done)
      await server.kill()
      let failed: unknown
      try {
        for (;;) if ((await reader.read()).done) break
      } catch (e) {
        failed = e
      }
      assert.isDefined(failed, "the body must not end cleanly")
    } finally {
      await served.close()
      await market.close()
    }
  }, 120_000)
})
