import { afterAll, assert, beforeAll, describe, it, layer } from "@effect/vitest"
import {
  Auth, createMarket, marketLayer, type Market, type RateLimitMode, RATE_LIMIT_MODES, type Storage, type StorageError, withRateLimits
} from "@gpu-market/core"
import { MemoryStorage } from "@gpu-market/core/storage"
import { fetchHandler } from "@gpu-market/http-adapter"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import Database from "better-sqlite3"
import { Effect, Layer, TestClock } from "effect"
import { statSync } from "node:fs"
import { seedMarket, tempDb } from "./support/adapters"
import { http, TOKENS } from "./support/market"
import { redisStorageLayer, TestRedis, testRedisLayer } from "./support/redis"

/**
 * The two rate-limit modes: `process` counts in memory with the same fixed windows, headers and
 * 429s as `shared` counts in storage, on every backend (TestClock moves time); and in `process`
 * mode the read path of a SQLite market writes nothing to its file, 401s and 429s included.
 */

const MINUTE_MS = 60_000
/** 10 s into a window: 50 s until it resets. */
const T0 = 1_000 * MINUTE_MS + 10_000

/** What a caller sees of its budget: status, then `X-RateLimit-Limit`, `-Remaining`, `-Reset`, `Retry-After`. */
const budget = (token: string) =>
  Effect.map(http("/v2/gpu/rental/prices/metadata", { token }), (r) =>
    [r.status, ...["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "retry-after"].map((h) => r.headers.get(h))].join(" "))

/** The market over `storage` with its rate limits kept per `mode`, and the `limited` (3 a minute) and `all` tokens. */
const marketOver = <E, R>(storage: Layer.Layer<Storage, E, R>, mode: RateLimitMode) =>
  Layer.effectDiscard(Effect.gen(function* () {
    const auth = yield* Auth
    yield* auth.issue(TOKENS.limited, "limited")
    yield* auth.issue(TOKENS.all, "all")
  })).pipe(Layer.provideMerge(marketLayer), Layer.provideMerge(withRateLimits(storage, mode)))

const backends: ReadonlyArray<readonly [string, () => Layer.Layer<Storage, StorageError, TestRedis>]> = [
  ["memory", () => MemoryStorage.layer],
  ["sqlite", () => SqliteStorage.layer({ filename: tempDb("rate-limit-modes") })],
  ["redis", () => redisStorageLayer("rate-limit-modes")]
]

layer(testRedisLayer(), { timeout: "60 seconds" })("rate-limit modes count the same windows", (it) => {
  for (const [backend, storage] of backends) {
    for (const mode of RATE_LIMIT_MODES) {
      it.effect(`${backend}, ${mode}: three in a window, the fourth 429, a fresh budget in the next window, keys apart`, () =>
        Effect.gen(function* () {
          yield* TestClock.setTime(T0)
          const seen = [yield* budget("limited"), yield* budget("limited"), yield* budget("limited"), yield* budget("limited")]
          seen.push(yield* budget("all"))
          yield* TestClock.adjust(49_000)
          seen.push(yield* budget("limited"))
          yield* TestClock.adjust(1_000)
          seen.push(yield* budget("limited"))
          assert.deepStrictEqual(seen, [
            "200 3 2 50 ", "200 3 1 50 ", "200 3 0 50 ", "429 3 0 50 50",
            "200 100000 99999 50 ",
            "429 3 0 1 1",
            "200 3 2 60 "
          ])
        }).pipe(Effect.provide(marketOver(storage(), mode))))
    }
  }
})

describe("process rate limits on SQLite: the read path writes nothing", () => {
  const db = tempDb("no-writes")
  let seeding: Market
  beforeAll(async () => {
    seeding = await createMarket({ storage: SqliteStorage.sqlite(db) })
    await seedMarket(seeding)
  }, 120_000)
  afterAll(() => seeding.close())

  /** `PRAGMA data_version` of an observer's connection moves when any other connection commits. */
  const observe = () => {
    const observer = new Database(db, { readonly: true })
    const file = (name: string) => {
      const s = statSync(name, { bigint: true })
      return `${s.size} ${s.mtimeNs}`
    }
    return {
      state: () => ({ dataVersion: observer.pragma("data_version", { simple: true }), db: file(db), wal: file(`${db}-wal`) }),
      close: () => observer.close()
    }
  }

  const requests = [
    ["all", "/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm&page_size=5", 200],
    ["all", "/v2/gpu/rental/prices/history?start=2026-05-01&end=2026-05-08&vendor=v-beta", 200],
    ["all", "/v2/gpu/rental/prices/metadata", 200],
    ["current", "/v2/gpu/rental/prices/history?start=2026-05-01&end=2026-05-08", 403],
    ["nope", "/v2/gpu/rental/prices/metadata", 401]
  ] as const

  const serve = async (mode: RateLimitMode, handle: (fetch: (path: string, token: string) => Promise<number>) => Promise<void>) => {
    const market = await createMarket({ storage: SqliteStorage.sqlite(db), rateLimits: mode })
    try {
      const handler = await fetchHandler(market, { baseUrl: "http://market.test" })
      await handle(async (path, token) => {
        const res = await handler.fetch(new Request(`http://market.test${path}`, { headers: { authorization: `Bearer ${token}` } }))
        await res.arrayBuffer()
        return res.status
      })
    } finally {
      await market.close()
    }
  }

  it("100 requests (pages, metadata, 403s, 401s, 429s) leave the file, its WAL and its data version as they were", async () => {
    const observer = observe()
    try {
      await serve("process", async (fetch) => {
        const before = observer.state()
        for (let i = 0; i < 20; i++) {
          for (const [token, path, status] of requests) assert.strictEqual(await fetch(path, token), status, `${token} ${path}`)
        }
        // `limited` may make 3 requests a minute: the rest are 429s, counted in memory.
        const limited = await Promise.all(Array.from({ length: 10 }, () => fetch("/v2/gpu/rental/prices/metadata", "limited")))
        assert.isAtLeast(limited.filter((s) => s === 429).length, 4)
        assert.deepStrictEqual(observer.state(), before)
      })
      // The same observer sees the write a shared-mode request makes: the check can fail.
      await serve("shared", async (fetch) => {
        const before = observer.state()
        assert.strictEqual(await fetch("/v2/gpu/rental/prices/metadata", "all"), 200)
        assert.notStrictEqual(observer.state().dataVersion, before.dataVersion)
      })
    } finally {
      observer.close()
    }
  })
})
