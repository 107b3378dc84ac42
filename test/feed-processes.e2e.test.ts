import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createMarket, type FeedMessage, MarketProblemError, type PortableMarketStorage, type PrincipalInput } from "@gpu-market/core"
import { nodeHandler } from "@gpu-market/http-adapter"
import { createClient } from "@gpu-market/client"
import { redis } from "@gpu-market/storage-redis"
import { sqlite } from "@gpu-market/storage-sqlite"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { type RedisServer, startRedis, uniquePrefix } from "./support/redis"

/**
 * The change feed across processes, over real sockets: a writer process ingests rental prices
 * and hardware observations into one SQLite file or one redis-server, and this process serves
 * `GET /v2/events` from the same store. A subscriber that disconnects mid-stream and resumes
 * with its last id while the writes go on receives every event exactly once, in order; a token
 * without hardware access never receives a hardware event. Real time and real processes.
 */

const ROOT = resolve(import.meta.dirname, "..")
const RENTAL_PER_BATCH = 4
const HARDWARE_PER_BATCH = 2

const principal = (id: string, grants: PrincipalInput["grants"]): PrincipalInput => ({
  id, name: id, grants, indices: "all", legacy_custom_index: false, procurement: false, rate_limit_per_minute: 10_000
})
const unrestricted = { history: { _tag: "unrestricted" } } as const

let redisServer: RedisServer
beforeAll(async () => {
  redisServer = await startRedis()
})
afterAll(async () => {
  await redisServer?.stop()
})

/** Waits for `ready`, failing after `ms` with what it waited for. */
const until = async (what: string, ready: () => boolean, ms: number) => {
  const deadline = Date.now() + ms
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** Ids of one subscriber's messages are ordered: each part never goes back, and each message moves one forward. */
const assertOrdered = (ids: ReadonlyArray<string>) => {
  const parts = (id: string) => id.split("_").map((p) => p.split("-").map(BigInt))
  const cmp = (a: Array<bigint>, b: Array<bigint>) => (a[0]! !== b[0]! ? (a[0]! < b[0]! ? -1 : 1) : a[1] === b[1] ? 0 : (a[1] ?? 0n) < (b[1] ?? 0n) ? -1 : 1)
  for (let i = 1; i < ids.length; i++) {
    const before = parts(ids[i - 1]!), now = parts(ids[i]!)
    const moves = now.map((p, k) => cmp(before[k]!, p))
    assert.isTrue(moves.every((m) => m <= 0) && moves.some((m) => m < 0), `${ids[i - 1]} then ${ids[i]}`)
  }
}

/** Batch and item of a row the writer wrote (`b<n>-<i>` SKUs): rows of a product arrive in write order. */
const rentalOrder = (m: FeedMessage) => {
  const sku = (m as { readonly row: { readonly vendor_sku: string } }).row.vendor_sku
  const [n, i] = sku.slice(1).split("-").map(Number) as [number, number]
  return n * 1000 + i
}

const backends: ReadonlyArray<readonly [string, () => { readonly storage: () => PortableMarketStorage; readonly env: Record<string, string>; readonly start: string }]> = [
  ["one SQLite file", () => {
    const db = join(mkdtempSync(join(tmpdir(), "gpu-market-feed-")), "market.db")
    return { storage: () => sqlite(db), env: { FEED_DB: db }, start: "0" }
  }],
  ["one redis-server", () => {
    const prefix = uniquePrefix("feed")
    return {
      storage: () => redis(redisServer.url, prefix),
      env: { FEED_REDIS_URL: redisServer.url, FEED_REDIS_PREFIX: prefix },
      start: "0-0_0-0_0-0_0-0_0-0"
    }
  }]
]

describe.each(backends)("the change feed across processes, %s", (_name, setup) => {
  it("resumes without loss or duplicates while writes go on, and keeps hardware from a token without it", { timeout: 90_000 }, async () => {
    const { storage, env, start } = setup()
    const admin = await createMarket({ storage: storage() })
    await admin.tokens.create(principal("feed-full", { gpu_rental_prices: unrestricted, gpu_hardware_prices: unrestricted }), "full")
    await admin.tokens.create(principal("feed-rental", { gpu_rental_prices: unrestricted }), "rental-only")
    const served = await createMarket({ storage: storage() })
    const handler = await nodeHandler(served, { baseUrl: "http://127.0.0.1", feedHeartbeatMs: 200 })
    const server: Server = createServer(handler.handle)
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    let writer: ChildProcess | undefined
    try {
      // No reconnecting here: a stream the server ends fails the subscriber (the test ends them by closing the server).
      const client = createClient({ baseUrl: base, token: "full", maxRetries: 0 })
      // A token without hardware asking for it is refused before any stream starts.
      const refused = await client.events({ data_type: "gpu_hardware_prices" }, { token: "rental-only" })[Symbol.asyncIterator]().next().then(
        () => undefined, (e: unknown) => e)
      assert.instanceOf(refused, MarketProblemError)
      assert.strictEqual((refused as MarketProblemError).status, 403)

      writer = spawn(resolve(ROOT, "node_modules/.bin/tsx"), ["test/support/feed-writer.ts"], {
        cwd: ROOT, env: { ...process.env, ...env, FEED_RENTAL: String(RENTAL_PER_BATCH), FEED_HARDWARE: String(HARDWARE_PER_BATCH) },
        stdio: ["pipe", "pipe", "pipe"], detached: true
      })
      let log = ""
      writer.stdout!.on("data", (c: Buffer) => (log += c.toString()))
      writer.stderr!.on("data", (c: Buffer) => (log += c.toString()))
      const exited = new Promise<void>((done) => writer!.once("exit", () => done()))
      const acked = () => [...log.matchAll(/^ack (\d+)$/gm)].length

      // The full token: from the start of the log, cut off mid-stream, resumed from its last id.
      const full: Array<FeedMessage> = []
      let expected = Number.POSITIVE_INFINITY
      const follow = async (lastEventId: string, stopAfter: number) => {
        for await (const m of client.events({}, { lastEventId })) {
          full.push(m)
          if (full.length >= stopAfter) break
        }
      }
      // The rental-only token, from the start, with no query: everything it may see.
      const rentalOnly: Array<FeedMessage> = []
      const followRental = (async () => {
        for await (const m of client.events({}, { token: "rental-only", lastEventId: start })) rentalOnly.push(m)
      })().catch(() => {})

      await follow(start, 30)
      const cutAt = acked()
      // Writes go on while it is away.
      await until("writes while the subscriber is away", () => acked() >= cutAt + 5, 30_000)
      const resumed = follow(full[full.length - 1]!.id, Number.POSITIVE_INFINITY).catch(() => {})
      await until("more batches", () => acked() >= 20, 30_000)
      writer.stdin!.end()
      await exited
      assert.match(log, /^done$/m)
      expected = acked() * (RENTAL_PER_BATCH + HARDWARE_PER_BATCH)
      await until(`${expected} events`, () => full.length >= expected, 20_000)
      // No duplicate arrives late either.
      await new Promise((r) => setTimeout(r, 300))
      assert.strictEqual(full.length, expected)
      assert.isTrue(full.every((m) => m.type === "rental_price" || m.type === "hardware_observation"))
      const rentalRows = full.filter((m) => m.type === "rental_price")
      const hardwareRows = full.filter((m) => m.type === "hardware_observation")
      assert.strictEqual(new Set(rentalRows.map((m) => (m as { row: { product_key: string } }).row.product_key)).size, acked() * RENTAL_PER_BATCH)
      assert.strictEqual(new Set(hardwareRows.map((m) => (m as { row: { observation_id: string } }).row.observation_id)).size, acked() * HARDWARE_PER_BATCH)
      assertOrdered(full.map((m) => m.id))
      const order = rentalRows.map(rentalOrder)
      assert.deepStrictEqual(order, [...order].sort((a, b) => a - b))

      await until("the rental-only subscriber", () => rentalOnly.length >= acked() * RENTAL_PER_BATCH, 20_000)
      await new Promise((r) => setTimeout(r, 300))
      assert.strictEqual(rentalOnly.length, acked() * RENTAL_PER_BATCH)
      assert.isTrue(rentalOnly.every((m) => m.type === "rental_price" && m.data_type === "gpu_rental_prices"))
      assert.deepStrictEqual(rentalOnly.map(rentalOrder), order)
      // Closed: the subscribers' streams end and they cannot reconnect.
      const closed = new Promise<void>((r) => server.close(() => r()))
      server.closeAllConnections()
      await Promise.all([resumed, followRental, closed])
    } finally {
      if (writer !== undefined && writer.exitCode === null && writer.signalCode === null) {
        try { process.kill(-writer.pid!, "SIGKILL") } catch { /* gone already */ }
      }
      if (server.listening) {
        const closed = new Promise<void>((r) => server.close(() => r()))
        server.closeAllConnections()
        await closed
      }
      await served.close()
      await admin.close()
    }
  })
})
