import { assert, describe, it } from "@effect/vitest"
import {
  createMarket, type FeedMessage, type IndexDefinitionInput, type Market, MarketProblemError, MAX_LAG, type PrincipalInput, RECHECK_MS,
  type RentalPriceObservationInput
} from "@gpu-market/core"
import { nodeHandler } from "@gpu-market/http-adapter"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { collect } from "./support/feed-messages.js"

/**
 * The change feed through the Promise API on a real SQLite file: what each token receives
 * (granted types, held indices, its history floor, its query), the kinds of event a write
 * logs and that a refused write logs none, the 410 past the log's retention, and a slow
 * consumer dropped with an id that resumes it without loss. Real time: the feed is a process
 * follower of the file.
 */

const file = (label: string) => join(mkdtempSync(join(tmpdir(), `gpu-market-feed-${label}-`)), "market.db")

const principal = (id: string, over: Partial<PrincipalInput>): PrincipalInput => ({
  id, name: id, grants: {}, indices: "all", legacy_custom_index: false, procurement: false, rate_limit_per_minute: 100_000, ...over
})
const unrestricted = { history: { _tag: "unrestricted" } } as const

const rental = (sku: string, gpu: string, price: number, at: string): RentalPriceObservationInput => ({
  vendor: "v-feed", vendor_gpu_name: gpu.toUpperCase(), vendor_sku: sku, region: "us-east", gpu_canonical_name: gpu,
  gpu_manufacturer: "nvidia", gpu_model: gpu, gpu_count: 1, gpu_memory_gb: 80, contract_type: "ondemand",
  price_usd_per_gpu_hour: price, raw_price: price, raw_price_unit: "usd_per_instance_hour", extracted_at: at
})

const administered = (id: string): IndexDefinitionInput => ({
  id, index_type: "gpu_rental_price", row_type: "daily", asset: "gpu_compute_rental", tenor: "on_demand",
  publication: "end_of_utc_day", interval: "P1D", title: `Index ${id}`, description: `Test index ${id}.`, gpu_family: "H100",
  gpu_group: "h100-sxm", region_group: "global", contract_type: "ondemand", vendor_category: "all", source: "administered",
  gpu_model: "h100-sxm", inputs: { kind: "administered", administrator: "Example Administrator" }
})

/** The first answer of a subscription: its first message, or the problem it was refused with. */
const first = (market: Market, query: object, options: { readonly token: string; readonly lastEventId?: string }) =>
  market.events(query, options)[Symbol.asyncIterator]().next().then((r) => r.value as FeedMessage, (e: unknown) => e as MarketProblemError)

const summary = (m: FeedMessage) =>
  m.type === "dropped" ? `dropped ${m.reason}`
  : m.type === "index_value" ? `${m.type} ${(m.row as { id: string }).id} ${(m.row as { timestamp: string }).timestamp}`
  : m.type === "rental_price" || m.type === "rental_price_withdrawal"
    ? `${m.type} ${(m.row as { gpu_canonical_name: string }).gpu_canonical_name} ${(m.row as { valid_from: string }).valid_from.slice(0, 10)}`
    : m.type

/**
 * A market on a SQLite file of its own and the same file served over node:http (`options` for the
 * handler); `run` gets the market and the feed's URL, and everything is closed after, whatever it did.
 */
const overHttp = async (label: string, options: { readonly feedHeartbeatMs?: number }, run: (market: Market, url: string) => Promise<void>) => {
  const db = file(label)
  const market = await createMarket({ storage: SqliteStorage.sqlite(db) })
  const handler = await nodeHandler(market, { baseUrl: "http://127.0.0.1", ...options })
  const server = createServer(handler.handle)
  try {
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
    await run(market, `http://127.0.0.1:${(server.address() as AddressInfo).port}/v2/events`)
  } finally {
    server.closeAllConnections()
    server.close()
    await market.close()
  }
}

describe("the change feed on SQLite: Promise API, and HTTP heartbeats", () => {
  it("sends each token what it may see and asked for, one event per new row, withdrawal and index value", { timeout: 60_000 }, async () => {
    const market = await createMarket({ storage: SqliteStorage.sqlite(file("entitled")) })
    try {
      await market.tokens.create(principal("feed-floor", {
        grants: { gpu_rental_prices: { history: { _tag: "since", date: "2026-06-01" } }, gpu_rental_indexes: unrestricted },
        indices: ["adm-a"]
      }), "floor")
      await market.tokens.create(principal("feed-all", {
        grants: { gpu_rental_prices: unrestricted, gpu_rental_indexes: unrestricted, llm_token_prices: unrestricted }
      }), "all")
      await market.ingest.indexDefinitions([administered("adm-a"), administered("adm-b")])

      // Refused before any stream: a type not granted, an index not held, a bad id or parameter.
      const refusals = await Promise.all([
        first(market, { data_type: "gpu_hardware_prices" }, { token: "floor" }),
        first(market, { index_id: "adm-b" }, { token: "floor" }),
        first(market, {}, { token: "floor", lastEventId: "not-an-id" }),
        first(market, { vendor: "v-feed" }, { token: "floor" }),
        first(market, {}, { token: "nobody" }),
        first(market, { last_event_id: "not-an-id" }, { token: "floor" })
      ])
      assert.deepStrictEqual(refusals.map((e) => (e as MarketProblemError).status), [403, 404, 422, 422, 401, 422])
      // A bad id is named where it came from: the header, or the query parameter.
      const badIdAt = (e: unknown) => (e as MarketProblemError).problem.errors?.[0]?.parameter
      assert.deepStrictEqual([badIdAt(refusals[2]), badIdAt(refusals[5])], ["Last-Event-ID", "last_event_id"])

      // From the start of the log: the floor token, everything; the full token, A100 only.
      const lastOne = (m: FeedMessage) => summary(m) === "index_value adm-a 2026-06-20"
      const floor = collect(market.events({}, { token: "floor", lastEventId: "0" }), lastOne)
      const a100 = collect(market.events({ gpu: "a100-sxm-80gb" }, { token: "all", lastEventId: "0" }), lastOne)

      await market.ingest.rental([rental("h", "h100-sxm", 2, "2026-05-01T00:00:00Z"), rental("a", "a100-sxm-80gb", 1.5, "2026-05-01T00:00:00Z")])
      // A refused batch writes nothing, so logs nothing.
      const refused = await market.ingest.rental([rental("x", "h100-sxm", -1, "2026-06-10T00:00:00Z")]).then(() => undefined, (e: unknown) => e)
      assert.instanceOf(refused, MarketProblemError)
      await market.ingest.rental([rental("h", "h100-sxm", 2.5, "2026-06-10T00:00:00Z"), rental("a", "a100-sxm-80gb", 1.75, "2026-06-10T00:00:00Z")])
      // Seen again at the same price: no new row, no event.
      await market.ingest.rental([rental("h", "h100-sxm", 2.5, "2026-06-11T00:00:00Z")])
      const [latest] = (await market.rental.prices.latest({ gpu_canonical_name: "h100-sxm" }, { token: "all" })).data
      await market.ingest.withdrawRental([latest!.base_product_key], "2026-06-12T00:00:00Z")
      await market.ingest.indexValues([{ id: "adm-a", timestamp: "2026-06-19", value: 2.1 }, { id: "adm-b", timestamp: "2026-06-19", value: 3.1 }])
      await market.ingest.indexValues([{ id: "adm-b", timestamp: "2026-06-20", value: 3.2 }, { id: "adm-a", timestamp: "2026-06-20", value: 2.2 }])

      assert.deepStrictEqual((await floor).map(summary), [
        // The May rows lie below the floor; the withdrawal at 06-12 does not.
        "rental_price h100-sxm 2026-06-10", "rental_price a100-sxm-80gb 2026-06-10", "rental_price_withdrawal h100-sxm 2026-06-10",
        "index_value adm-a 2026-06-19", "index_value adm-a 2026-06-20"
      ])
      assert.deepStrictEqual((await a100).map(summary), [
        "rental_price a100-sxm-80gb 2026-05-01", "rental_price a100-sxm-80gb 2026-06-10",
        "index_value adm-a 2026-06-19", "index_value adm-b 2026-06-19", "index_value adm-b 2026-06-20", "index_value adm-a 2026-06-20"
      ])
      // The row is the row the endpoints serve.
      const withdrawn = (await floor).find((m) => m.type === "rental_price_withdrawal")!
      const history = await market.rental.prices.history({ gpu_canonical_name: "h100-sxm", start: "2026-06-01" }, { token: "all" })
      assert.deepStrictEqual((withdrawn as { row: unknown }).row, history.data.find((r) => r.valid_to !== null))
    } finally {
      await market.close()
    }
  })

  it("over HTTP, a quiet stream gets heartbeat comments and the headers that keep proxies from buffering it", { timeout: 60_000 }, async () => {
    await overHttp("heartbeat", { feedHeartbeatMs: 100 }, async (market, url) => {
      await market.tokens.create(principal("feed-all", { grants: { gpu_rental_prices: unrestricted } }), "all")
      const response = await fetch(url, { headers: { authorization: "Bearer all" } })
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.headers.get("content-type"), "text/event-stream")
      assert.strictEqual(response.headers.get("cache-control"), "no-store")
      assert.strictEqual(response.headers.get("x-accel-buffering"), "no")
      assert.isNotNull(response.headers.get("x-ratelimit-remaining"))
      const reader = response.body!.getReader()
      let text = ""
      while ((text.match(/^: ping$/gm) ?? []).length < 2) text += new TextDecoder().decode((await reader.read()).value)
      assert.match(text, /^retry: 1000$/m)
      assert.notMatch(text, /^data:/m)
      await reader.cancel()
    })
  })

  it("ends a revoked token's subscriptions within RECHECK_MS, in process and over HTTP, and refuses it a new one (401)", { timeout: 60_000 }, async () => {
    await overHttp("revoked", {}, async (market, url) => {
      await market.tokens.create(principal("feed-revoked", { grants: { gpu_rental_prices: unrestricted } }), "revoked")
      const response = await fetch(url, { headers: { authorization: "Bearer revoked" } })
      assert.strictEqual(response.status, 200)
      const inProcess = collect(market.events({}, { token: "revoked" }), (m) => m.type === "dropped", RECHECK_MS + 10_000)
      await market.ingest.rental([rental("r1", "h100-sxm", 2, "2026-06-10T00:00:00Z")])
      await market.tokens.revoke("feed-revoked")
      const revokedAt = Date.now()
      const got = await inProcess
      assert.deepStrictEqual(got.map(summary).at(-1), "dropped revoked")
      assert.isAtMost(Date.now() - revokedAt, RECHECK_MS + 5_000)
      const reader = response.body!.getReader()
      let text = ""
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += new TextDecoder().decode(chunk.value)
      assert.isAtMost(Date.now() - revokedAt, RECHECK_MS + 5_000)
      assert.match(text, /^event: dropped\ndata: .*"reason":"revoked"/m)
      assert.strictEqual((await fetch(url, { headers: { authorization: "Bearer revoked" } })).status, 401)
      assert.strictEqual(((await first(market, {}, { token: "revoked" })) as MarketProblemError).status, 401)
    })
  })

  it("answers 410 for an id past the log's retention, and resumes one within it after exactly that event", { timeout: 60_000 }, async () => {
    const market = await createMarket({ storage: SqliteStorage.layer({ filename: file("retention"), eventRetention: 5 }) })
    try {
      await market.tokens.create(principal("feed-all", { grants: { gpu_rental_prices: unrestricted } }), "all")
      for (let i = 0; i < 10; i++) await market.ingest.rental([rental(`s${i}`, "h100-sxm", 2, "2026-06-10T00:00:00Z")])
      const expired = await first(market, {}, { token: "all", lastEventId: "4" })
      assert.instanceOf(expired, MarketProblemError)
      assert.strictEqual((expired as MarketProblemError).status, 410)
      assert.strictEqual((expired as MarketProblemError).code, "event_id_expired")
      // An id from no log this file ever wrote is the same 410: resync.
      assert.strictEqual(((await first(market, {}, { token: "all", lastEventId: "99" })) as MarketProblemError).status, 410)
      const resumed = await collect(market.events({}, { token: "all", lastEventId: "5" }), (m) => m.id === "10")
      assert.deepStrictEqual(resumed.map((m) => m.id), ["6", "7", "8", "9", "10"])
      assert.deepStrictEqual(resumed.map((m) => (m.type === "rental_price" ? m.row.vendor_sku : m.type)), ["s5", "s6", "s7", "s8", "s9"])
    } finally {
      await market.close()
    }
  })

  it("drops a consumer that falls behind with an id that resumes it, without loss or duplicates", { timeout: 60_000 }, async () => {
    const market = await createMarket({ storage: SqliteStorage.sqlite(file("slow")) })
    try {
      await market.tokens.create(principal("feed-all", { grants: { gpu_rental_prices: unrestricted } }), "all")
      const total = MAX_LAG + 700
      const batch = Array.from({ length: total }, (_, i) => rental(`p${i}`, "h100-sxm", 2, "2026-06-10T00:00:00Z"))
      const isBatch = (m: FeedMessage) => m.type === "rental_price" && (m.row.vendor_sku ?? "").startsWith("p")
      // A subscriber that keeps up tells when the process has read every event (resuming if it too
      // was dropped); the slow one takes one event and stops reading.
      let fastCount = 0
      const counting = (async () => {
        let from: string | undefined
        for (;;) {
          for await (const m of market.events({}, from === undefined ? { token: "all" } : { token: "all", lastEventId: from })) {
            from = m.id
            if (isBatch(m) && ++fastCount === total) return
          }
        }
      })()
      const slow = market.events({}, { token: "all" })[Symbol.asyncIterator]()
      const firstOfSlow = slow.next()
      // Both follow from now once they are open: written to until the slow one has an event.
      let opened: IteratorResult<FeedMessage> | undefined
      for (let warm = 0; opened === undefined; warm++) {
        await market.ingest.rental([rental(`warm${warm}`, "h100-sxm", 2, "2026-06-10T00:00:00Z")])
        opened = await Promise.race([firstOfSlow, new Promise<undefined>((r) => setTimeout(() => r(undefined), 100))])
      }
      const received: Array<FeedMessage> = [opened.value]
      for (let i = 0; i < batch.length; i += 500) await market.ingest.rental(batch.slice(i, i + 500))
      await counting
      for (;;) {
        const { value } = await slow.next()
        received.push(value)
        if (value.type === "dropped") break
      }
      const dropped = received[received.length - 1]!
      assert.deepStrictEqual(dropped.type === "dropped" && dropped.reason, "slow_consumer")
      // Resumed from the drop's id: the rest, each once.
      const rest = await collect(market.events({}, { token: "all", lastEventId: dropped.id }), (m) => isBatch(m) && m.type === "rental_price" && m.row.vendor_sku === `p${total - 1}`)
      const skus = [...received, ...rest].filter(isBatch).map((m) => (m.type === "rental_price" ? m.row.vendor_sku : m.type))
      assert.isBelow(received.filter(isBatch).length, total)
      assert.strictEqual(skus.length, total)
      assert.strictEqual(new Set(skus).size, total)
    } finally {
      await market.close()
    }
  })
})
