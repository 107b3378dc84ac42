import { assert } from "@effect/vitest"
import { marketLayer, type MarketServices, type Storage } from "@gpu-market/core"
import { MemoryStorage, SettingsStore } from "@gpu-market/core/storage"
import * as RedisStorage from "@gpu-market/storage-redis"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { type Context, Effect, Layer } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { http } from "./market"
import { TestRedis, uniquePrefix } from "./redis"

/**
 * One market on memory, SQLite and Redis, seeded through the same write paths, and a comparison
 * of what a caller sees of each, page by page. The backends share one page-token secret, so the
 * tokens in `meta.next` compare equal too.
 */

const SECRET = "backends-test-page-token-secret-0123456789abcdef"

/**
 * The shared page-token secret, and the hardware listing-key secret (so every backend publishes
 * the same listing keys), stored before the market's services read them.
 */
const sharedSecret = Layer.effectDiscard(Effect.flatMap(SettingsStore, (s) =>
  Effect.zipRight(s.getOrSet("page_token_secret", SECRET), s.getOrSet("hardware_listing_key_secret", SECRET))))

/** The market over `storage` (its secrets shared with the other backends), seeded by `seed`. */
export const seeded = <E1, R1, E2, R2>(storage: Layer.Layer<Storage, E1, R1>, seed: Effect.Effect<void, E2, R2 | MarketServices>) =>
  Layer.effectDiscard(seed).pipe(Layer.provideMerge(marketLayer), Layer.provideMerge(Layer.provideMerge(sharedSecret, storage)))

/** SQLite storage in a fresh temporary file, removed with the scope. */
export const sqliteStorage = Layer.unwrapScoped(Effect.map(
  Effect.acquireRelease(Effect.sync(() => mkdtempSync(join(tmpdir(), "gpu-market-backends-"))), (dir) =>
    Effect.sync(() => rmSync(dir, { recursive: true, force: true }))),
  (dir) => SqliteStorage.layer({ filename: join(dir, "market.db") })
))

/** Redis for every store it provides, under a fresh prefix on the suite's server; memory fills the rest. */
export const redisStorage = (label: string) => Layer.unwrapEffect(Effect.map(TestRedis, (server) =>
  Layer.merge(MemoryStorage.layer, RedisStorage.layer({ url: server.url, prefix: uniquePrefix(label) }))))

/** Builds the market seeded by `seed` on each backend, in the caller's scope: memory first, the reference. */
export const seededBackends = <E, R>(label: string, seed: Effect.Effect<void, E, R | MarketServices>) =>
  Effect.all({
    memory: Layer.build(seeded(MemoryStorage.layer, seed)),
    sqlite: Layer.build(seeded(sqliteStorage, seed)),
    redis: Layer.build(seeded(redisStorage(label), seed))
  })

/** What a caller sees of one reply; must be the same on every backend. A problem's `request_id` is random. */
const observe = (path: string, token: string) =>
  Effect.map(http(path, { token }), (r) => ({
    status: r.status,
    body: r.body?.request_id === undefined ? r.body ?? r.text : { ...r.body, request_id: "(random)" },
    limit: [r.headers.get("x-ratelimit-limit"), r.headers.get("x-ratelimit-remaining"), r.headers.get("x-ratelimit-reset")]
  }))

/**
 * Follows `first` through `meta.next` to its last page on every backend, asserting each page is
 * the same everywhere and not a 500. Returns the rows of all pages (of the first backend).
 */
export const assertSameEverywhere = (
  backends: Readonly<Record<string, Context.Context<MarketServices>>>,
  first: string,
  token = "all",
  maxPages = 500
) =>
  Effect.gen(function* () {
    const names = Object.keys(backends)
    const contexts = Object.values(backends)
    const rows: Array<unknown> = []
    let path: string | null = first
    for (let pages = 0; path !== null; pages++) {
      assert.isBelow(pages, maxPages, `${first} does not end`)
      const replies = yield* Effect.forEach(contexts, (context) => Effect.provide(observe(path!, token), context))
      assert.notStrictEqual(replies[0]!.status, 500, JSON.stringify(replies[0]!.body))
      for (let i = 1; i < replies.length; i++) assert.deepStrictEqual(replies[i], replies[0], `${names[i]} vs ${names[0]}: ${path}`)
      const body = replies[0]!.body
      if (replies[0]!.status === 200 && Array.isArray(body?.data)) rows.push(...body.data)
      const next = replies[0]!.status === 200 ? body?.meta?.next : undefined
      path = next ? next.url.slice("http://market.test".length) : null
    }
    return rows
  })
