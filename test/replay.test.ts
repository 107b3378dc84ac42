import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createMarket, type Market, type Storage, type StorageError, withRateLimits } from "@gpu-market/core"
import { RentalPriceStore, TokenStore } from "@gpu-market/core/storage"
import { redis } from "@gpu-market/storage-redis"
import * as RedisStorage from "@gpu-market/storage-redis"
import { sqlite } from "@gpu-market/storage-sqlite"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Context, Effect, Layer } from "effect"
import { Redis } from "ioredis"
import { gunzipSync } from "node:zlib"
import { seedMarket, tempDb } from "./support/adapters"
import { type LanesHost, startLanesHost } from "./support/lanes"
import { dayIso, observations, TOKENS } from "./support/market"
import { type RedisServer, startRedis, uniquePrefix } from "./support/redis"

/**
 * Replayed answers, as the standalone server and the Node handler run them: a `/latest` answer
 * is given again from memory only while the caller and the data are what it was made for. The
 * server reads through its own connection while writes come through another (a second
 * connection to the SQLite file, or a second client of the Redis), as a writer process would.
 */

const PAGE = "/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm&sort_by=price_usd_per_gpu_hour&page_size=5"

type Host = LanesHost

/** The app behind its lanes on a free port, over `storage`, as the server's `layer` puts them together. */
const startReplayingHost = (storage: Layer.Layer<Storage, StorageError>): Promise<Host> => startLanesHost(storage)

const get = async (url: string, token: string, headers: Record<string, string> = {}) => {
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}`, ...headers } })
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) }
}

const backends: ReadonlyArray<{
  readonly name: string
  readonly open: () => Promise<{ readonly reader: Layer.Layer<Storage, StorageError>; readonly writer: Layer.Layer<Storage, StorageError>; readonly close: () => Promise<void> }>
}> = [
  {
    name: "sqlite",
    open: async () => {
      const db = tempDb("replay")
      return { reader: SqliteStorage.layer({ filename: db }), writer: sqlite(db), close: async () => {} }
    }
  },
  {
    name: "redis",
    open: async () => {
      const server: RedisServer = await startRedis()
      const prefix = uniquePrefix("replay")
      return { reader: RedisStorage.layer({ url: server.url, prefix }), writer: redis(server.url, prefix), close: () => server.stop() }
    }
  }
]

for (const backend of backends) {
  describe(`replayed answers (${backend.name})`, () => {
    let writer: Market
    let host: Host
    let closeBackend = async () => {}
    beforeAll(async () => {
      const opened = await backend.open()
      closeBackend = opened.close
      writer = await createMarket({ storage: opened.writer })
      await seedMarket(writer)
      host = await startReplayingHost(opened.reader)
    }, 120_000)
    afterAll(async () => {
      await host?.close()
      await writer?.close()
      await closeBackend()
    })

    it("the same request again gets the same bytes from memory, counted against the caller's limit once", async () => {
      // A page is kept from its second request on.
      await get(host.origin + PAGE, "all")
      const before = host.replay.stats().replayed
      const first = await get(host.origin + PAGE, "all")
      const second = await get(host.origin + PAGE, "all")
      assert.strictEqual(first.status, 200)
      assert.strictEqual(second.status, 200)
      assert.strictEqual(host.replay.stats().replayed, before + 1)
      assert.isTrue(second.bytes.equals(first.bytes))
      assert.strictEqual(second.headers.get("etag"), first.headers.get("etag"))
      assert.strictEqual(second.headers.get("content-type"), "application/json")
      assert.strictEqual(second.headers.get("x-content-type-options"), "nosniff")
      assert.notStrictEqual(second.headers.get("x-request-id"), first.headers.get("x-request-id"))
      const remaining = [first, second].map((r) => Number(r.headers.get("x-ratelimit-remaining")))
      const limit = TOKENS.all.rate_limit_per_minute
      // One less each time, unless the minute's window turned between the two.
      assert.isTrue(remaining[1] === remaining[0]! - 1 || remaining[1] === limit - 1, `remaining ${remaining.join(" → ")}`)
    })

    it("a write of the type retires the answer: the next read has the new rows", async () => {
      await get(host.origin + PAGE, "all")
      const stale = await get(host.origin + PAGE, "all")
      const cheaper = observations(11).filter((o) => o.gpu_canonical_name === "h100-sxm").map((o) => ({
        ...o, price_usd_per_gpu_hour: 0.01, raw_price: 0.01 * (o.gpu_count ?? 1), extracted_at: dayIso(11)
      }))
      await writer.ingest.rental(cheaper)
      const handedOn = host.replay.stats().handedOn
      const fresh = await get(host.origin + PAGE, "all")
      assert.strictEqual(fresh.status, 200)
      assert.strictEqual(host.replay.stats().handedOn, handedOn + 1)
      assert.isFalse(fresh.bytes.equals(stale.bytes))
      const expected = await writer.rental.prices.latest({ gpu_canonical_name: "h100-sxm", sort_by: "price_usd_per_gpu_hour", page_size: 5 }, { token: "all" })
      assert.deepStrictEqual(JSON.parse(fresh.bytes.toString()).data, expected.data)
      assert.isTrue(expected.data.every((r) => r.price_usd_per_gpu_hour === 0.01))
    })

    it("a revoked token gets 401 at once, and a token whose grants changed gets what the new grants allow", async () => {
      await writer.tokens.create({ ...TOKENS.all, id: "t-replay-revoked" }, "replay-revoked")
      await writer.tokens.create({ ...TOKENS.all, id: "t-replay-flip" }, "replay-flip")
      for (const token of ["replay-revoked", "replay-flip"]) {
        await get(host.origin + PAGE, token)
        assert.strictEqual((await get(host.origin + PAGE, token)).status, 200)
      }
      await writer.tokens.revoke("t-replay-revoked")
      const revoked = await get(host.origin + PAGE, "replay-revoked")
      assert.strictEqual(revoked.status, 401)
      assert.strictEqual(revoked.headers.get("content-type"), "application/problem+json")
      await writer.tokens.create({ ...TOKENS.hardwareOnly, id: "t-replay-flip" }, "replay-flip")
      assert.strictEqual((await get(host.origin + PAGE, "replay-flip")).status, 403)
    })

    it("past the rate limit a replayable request gets 429, with the limit's headers", async () => {
      await writer.tokens.create({ ...TOKENS.limited, id: "t-replay-limited" }, "replay-limited")
      const answers = []
      for (let i = 0; i < 4; i++) answers.push(await get(host.origin + PAGE, "replay-limited"))
      assert.deepStrictEqual(answers.slice(0, 3).map((a) => a.status), [200, 200, 200])
      const last = answers[3]!
      // 429, unless the minute's window turned during the four requests (then a new window's first).
      assert.isTrue(last.status === 429 || last.headers.get("x-ratelimit-remaining") === "2", `${last.status}`)
      if (last.status === 429) {
        assert.strictEqual(last.headers.get("x-ratelimit-remaining"), "0")
        assert.isNotNull(last.headers.get("retry-after"))
      }
    })

    it("a compressed answer is replayed compressed, and decodes to the identity bytes; a conditional request gets 304", async () => {
      const identity = await get(host.origin + PAGE, "other")
      for (let i = 0; i < 2; i++) await get(host.origin + PAGE, "other", { "accept-encoding": "gzip" })
      const before = host.replay.stats().replayed
      const gzipped = await fetch(host.origin + PAGE, { headers: { authorization: "Bearer other", "accept-encoding": "gzip" } })
      // fetch decodes for its caller; the raw bytes are checked through the header and a decode of our own.
      assert.strictEqual(gzipped.headers.get("content-encoding"), "gzip")
      assert.strictEqual(host.replay.stats().replayed, before + 1)
      assert.isTrue(Buffer.from(await gzipped.arrayBuffer()).equals(identity.bytes))
      const raw = await rawGet(host.origin + PAGE, { authorization: "Bearer other", "accept-encoding": "gzip" })
      assert.isTrue(gunzipSync(raw).equals(identity.bytes))
      const conditional = await get(host.origin + PAGE, "other", { "if-none-match": identity.headers.get("etag")! })
      assert.strictEqual(conditional.status, 304)
      assert.isNotNull(conditional.headers.get("x-ratelimit-remaining"))
    })
  })
}

describe("replayed answers over SQLite while nothing changed", () => {
  it("the same request again reads nothing from the file but its change stamp, and is still counted; a write elsewhere is seen at once", async () => {
    const db = tempDb("replay-stamp")
    const writer = await createMarket({ storage: sqlite(db) })
    const reads = { tokens: 0, rental: 0 }
    // The server's own connection, its token and rental version reads counted; rate limits in
    // the process, as `serve` keeps them on SQLite (counted in the file, each request would write).
    const counted = Layer.effectContext(Effect.map(Effect.context<Storage>(), (ctx) => {
      const tokens = Context.get(ctx, TokenStore), rental = Context.get(ctx, RentalPriceStore)
      return ctx.pipe(
        Context.add(TokenStore, { ...tokens, version: Effect.suspend(() => (reads.tokens++, tokens.version)) }),
        Context.add(RentalPriceStore, { ...rental, version: Effect.suspend(() => (reads.rental++, rental.version)) })
      )
    })).pipe(Layer.provide(withRateLimits(SqliteStorage.layer({ filename: db }), "process")))
    let host: Host | undefined
    try {
      await seedMarket(writer)
      host = await startReplayingHost(counted)
      for (let i = 0; i < 2; i++) await get(host.origin + PAGE, "all")
      const checked = await get(host.origin + PAGE, "all")
      const before = { ...reads, replayed: host.replay.stats().replayed }
      const again = []
      for (let i = 0; i < 5; i++) again.push(await get(host.origin + PAGE, "all"))
      assert.deepStrictEqual(again.map((a) => a.status), [200, 200, 200, 200, 200])
      assert.isTrue(again.every((a) => a.bytes.equals(checked.bytes)))
      assert.strictEqual(host.replay.stats().replayed, before.replayed + 5)
      assert.deepStrictEqual({ tokens: reads.tokens, rental: reads.rental }, { tokens: before.tokens, rental: before.rental }, "no version read while the stamp held")
      const remaining = [checked, ...again].map((a) => Number(a.headers.get("x-ratelimit-remaining")))
      // Counted every time: one less each request, unless the minute's window turned meanwhile.
      assert.isTrue(remaining.every((r, i) => i === 0 || r === remaining[i - 1]! - 1 || r === TOKENS.all.rate_limit_per_minute - 1), remaining.join(" → "))

      // A write through the other connection moves the stamp: the next request checks, and gets the new rows.
      const cheaper = observations(11).filter((o) => o.gpu_canonical_name === "h100-sxm").map((o) => ({
        ...o, price_usd_per_gpu_hour: 0.02, raw_price: 0.02 * (o.gpu_count ?? 1), extracted_at: dayIso(11)
      }))
      await writer.ingest.rental(cheaper)
      const fresh = await get(host.origin + PAGE, "all")
      assert.isAbove(reads.rental, before.rental)
      assert.isTrue(JSON.parse(fresh.bytes.toString()).data.every((r: { price_usd_per_gpu_hour: number }) => r.price_usd_per_gpu_hour === 0.02))
      // And a revocation through it: 401 at once.
      await writer.tokens.revoke(TOKENS.all.id)
      assert.strictEqual((await get(host.origin + PAGE, "all")).status, 401)
    } finally {
      await host?.close()
      await writer.close()
    }
  })
})

describe("replayed answers over Redis while nothing changed", () => {
  it("two servers on one Redis replay with one script per request, counting into one window; a write or a revocation is seen at once", async () => {
    const server = await startRedis()
    const prefix = uniquePrefix("replay-stamped")
    const admin = new Redis(server.url)
    const hosts: Array<Host> = []
    let writer: Market | undefined
    try {
      writer = await createMarket({ storage: redis(server.url, prefix) })
      await seedMarket(writer)
      for (let i = 0; i < 2; i++) hosts.push(await startReplayingHost(RedisStorage.layer({ url: server.url, prefix })))
      // Every command the servers send, as Redis sees them (MONITOR), by connection: scripts' own calls are not theirs.
      const monitor = await admin.monitor()
      const sent = new Map<string, Array<string>>()
      monitor.on("monitor", (_time: string, args: Array<string>, source: string) => {
        if (source === "lua" || String(args[0]).toLowerCase() === "ping") return
        if (!sent.has(source)) sent.set(source, [])
        sent.get(source)!.push(String(args[0]).toLowerCase())
      })
      const sentSince = async () => {
        await admin.ping()
        const commands = [...sent.values()]
        sent.clear()
        return commands
      }
      // Each host: the app's answers (kept from the second on), then a replay checked in full, which the next ones build on.
      for (const host of hosts) for (let i = 0; i < 2; i++) await get(host.origin + PAGE, "all")
      await sentSince()
      for (const host of hosts) await get(host.origin + PAGE, "all")
      // The stamp it records is read first, so nothing its checks read (the tokens' and the type's versions) is older.
      const checks = (await sentSince()).filter((commands) => commands.includes("get"))
      assert.strictEqual(checks.length, 2)
      for (const commands of checks) assert.strictEqual(commands[0], "mget", commands.join(" "))
      const before = hosts.map((h) => h.replay.stats().replayed)
      const answers: Array<Awaited<ReturnType<typeof get>>> = []
      for (let i = 0; i < 8; i++) answers.push(await get(hosts[i % 2]!.origin + PAGE, "all"))
      const replays = (await sentSince()).flat()
      monitor.disconnect()
      assert.deepStrictEqual(answers.map((a) => a.status), Array(8).fill(200))
      assert.deepStrictEqual(hosts.map((h, i) => h.replay.stats().replayed - before[i]!), [4, 4])
      assert.isTrue(answers.every((a) => a.bytes.equals(answers[0]!.bytes)))
      // A connection's first run of a script is an EVAL, later ones EVALSHA.
      assert.deepStrictEqual(replays.map((c) => c.startsWith("eval") ? "script" : c), Array(8).fill("script"),
        "one script per request: no token or version read of its own")
      const remaining = answers.map((a) => Number(a.headers.get("x-ratelimit-remaining")))
      // One window across both servers: one less each request, unless the minute turned meanwhile.
      assert.isTrue(remaining.every((r, i) => i === 0 || r === remaining[i - 1]! - 1 || r === TOKENS.all.rate_limit_per_minute - 1), remaining.join(" → "))

      const cheaper = observations(11).filter((o) => o.gpu_canonical_name === "h100-sxm").map((o) => ({
        ...o, price_usd_per_gpu_hour: 0.03, raw_price: 0.03 * (o.gpu_count ?? 1), extracted_at: dayIso(11)
      }))
      await writer.ingest.rental(cheaper)
      for (const host of hosts) {
        const fresh = await get(host.origin + PAGE, "all")
        assert.isTrue(JSON.parse(fresh.bytes.toString()).data.every((r: { price_usd_per_gpu_hour: number }) => r.price_usd_per_gpu_hour === 0.03))
      }
      await writer.tokens.revoke(TOKENS.all.id)
      for (const host of hosts) assert.strictEqual((await get(host.origin + PAGE, "all")).status, 401)
    } finally {
      for (const host of hosts) await host.close()
      await writer?.close()
      admin.disconnect()
      await server.stop()
    }
  })
})

describe("replayed answers over Redis with process rate limits", () => {
  it("count in the process: the replays leave no counter in Redis, as shared limits do", async () => {
    const server = await startRedis()
    const admin = new Redis(server.url)
    try {
      const counters: Record<string, number> = {}
      for (const mode of ["process", "shared"] as const) {
        const prefix = uniquePrefix(`replay-${mode}`)
        const writer = await createMarket({ storage: redis(server.url, prefix) })
        const host = await startReplayingHost(withRateLimits(RedisStorage.layer({ url: server.url, prefix }), mode)).catch(async (e) => {
          await writer.close()
          throw e
        })
        try {
          await seedMarket(writer)
          const remaining: Array<number> = []
          for (let i = 0; i < 6; i++) remaining.push(Number((await get(host.origin + PAGE, "all")).headers.get("x-ratelimit-remaining")))
          assert.isAtLeast(host.replay.stats().replayed, 4)
          assert.isTrue(remaining.every((r, i) => i === 0 || r === remaining[i - 1]! - 1 || r === TOKENS.all.rate_limit_per_minute - 1), remaining.join(" → "))
          counters[mode] = (await admin.keys(`${prefix}:{rl:*`)).length
        } finally {
          await host.close()
          await writer.close()
        }
      }
      assert.deepStrictEqual(counters, { process: 0, shared: 1 })
    } finally {
      admin.disconnect()
      await server.stop()
    }
  })
})

describe("replayed answers over Redis when Redis fails", () => {
  it("killed or hung, a replayed request gets a quick 503 problem; back, the replay serves again", async () => {
    const server = await startRedis({ persistent: true })
    const prefix = uniquePrefix("replay-faults")
    let writer: Market | undefined
    let host: Host | undefined
    try {
      writer = await createMarket({ storage: redis(server.url, prefix) })
      await seedMarket(writer)
      host = await startReplayingHost(RedisStorage.layer({ url: server.url, prefix, commandTimeoutMs: 500 }))
      const serving = host
      const warm = async () => {
        for (let i = 0; i < 200; i++) {
          if ((await get(serving.origin + PAGE, "all")).status === 200) return
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
        assert.fail("the replay did not serve again")
      }
      // Kept, checked in full, then replayed on its stamp: the requests below take that lane.
      for (let i = 0; i < 4; i++) await warm()
      for (const fault of ["kill", "pause"] as const) {
        const replayed = serving.replay.stats().replayed
        if (fault === "kill") await server.kill()
        else server.pause()
        const started = Date.now()
        const down = await get(serving.origin + PAGE, "all").finally(() => fault === "pause" ? server.resume() : undefined)
        const ms = Date.now() - started
        assert.strictEqual(down.status, 503, fault)
        assert.strictEqual(JSON.parse(down.bytes.toString()).code, "storage_unavailable")
        assert.isBelow(ms, 3000, `${fault}: bounded by the command timeout`)
        assert.strictEqual(serving.replay.stats().replayed, replayed)
        if (fault === "kill") await server.restart()
        await warm()
        await warm()
        assert.isAbove(serving.replay.stats().replayed, replayed, `${fault}: replayed again`)
      }
    } finally {
      await host?.close()
      await writer?.close()
      await server.stop()
    }
  }, 60_000)
})

/** The body as sent, not decoded (fetch always decodes). */
const rawGet = async (url: string, headers: Record<string, string>): Promise<Buffer> => {
  const { request } = await import("node:http")
  return new Promise((resolve, reject) => {
    request(url, { headers }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => resolve(Buffer.concat(chunks)))
      res.on("error", reject)
    }).on("error", reject).end()
  })
}
