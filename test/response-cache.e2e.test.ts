import { assert, layer } from "@effect/vitest"
import { Auth, marketLayer, PageCache, type Storage, type StorageError } from "@gpu-market/core"
import { MemoryStorage } from "@gpu-market/core/storage"
import * as RedisStorage from "@gpu-market/storage-redis"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Context, Effect, Layer } from "effect"
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { waitFor } from "./support/crash"
import { http, TOKENS } from "./support/market"
import { killGroup, TestRedis, testRedisLayer, uniquePrefix } from "./support/redis"

/**
 * The response cache and a writer in another process: a page served from the cache is not served
 * again once another process on the same SQLite file or the same Redis wrote rows of its type;
 * the next read has them. The writer is test/support/feed-writer.ts (rental rows of vendor
 * `v-feed`, `h100-sxm`, SKUs `b<n>-<i>`).
 */

const ROOT = resolve(import.meta.dirname, "..")
const PAGE = "/api/v2/gpu/rental/prices/latest?vendor=v-feed&gpu_canonical_name=h100-sxm&sort_by=price_usd_per_gpu_hour&page_size=10"

/**
 * Runs the feed writer over `env` until it acknowledged its first batch, then stops it and waits
 * for it to finish the batch in flight; killed with its group whatever happens. The SKUs it wrote.
 */
const writeOnce = (env: Readonly<Record<string, string>>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const child = spawn(resolve(ROOT, "node_modules/.bin/tsx"), ["test/support/feed-writer.ts"], {
        cwd: ROOT, env: { ...process.env, ...env, FEED_RENTAL: "2", FEED_HARDWARE: "1" }, stdio: ["pipe", "pipe", "pipe"], detached: true
      })
      const log = { text: "" }
      child.stdout.on("data", (c: Buffer) => (log.text += c.toString()))
      child.stderr.on("data", (c: Buffer) => (log.text += c.toString()))
      return { child, log }
    }),
    ({ child, log }) => Effect.promise(async () => {
      await waitFor(`the writer's first batch (${log.text})`, () => /^ack 0$/m.test(log.text), 60_000)
      child.stdin.end()
      await waitFor(`the writer's end (${log.text})`, () => /^done$/m.test(log.text), 60_000)
      const batches = [...log.text.matchAll(/^ack (\d+)$/gm)].length
      return Array.from({ length: batches }, (_, n) => [`b${n}-0`, `b${n}-1`]).flat().sort()
    }),
    ({ child }) => Effect.sync(() => killGroup(child, "SIGKILL"))
  )

/** The market over `storage`, a token issued, the page read until the cache holds it; then a write from another process, and the next read. */
const seenAfterWrite = (storage: Layer.Layer<Storage, StorageError>, writerEnv: Readonly<Record<string, string>>) =>
  Effect.gen(function* () {
    const market = yield* Layer.build(marketLayer.pipe(Layer.provideMerge(storage)))
    yield* Effect.provide(Effect.flatMap(Auth, (auth) => auth.issue(TOKENS.all, "all")), market)
    const read = Effect.provide(http(PAGE, { token: "all" }), market)
    const skus = (body: { readonly data: ReadonlyArray<{ readonly vendor_sku: string }> }) => body.data.map((row) => row.vendor_sku).sort()
    const cache = Context.get(market, PageCache)
    // Asked twice, the page is kept; the third answer is the cache's.
    for (let i = 0; i < 3; i++) assert.deepStrictEqual(skus((yield* read).body), [])
    assert.isAbove(cache.stats().entries, 0, "the page is in the cache")
    const written = yield* writeOnce(writerEnv)
    const after = yield* read
    assert.strictEqual(after.status, 200, after.text)
    assert.include(written, "b0-0")
    // The page holds its ten cheapest: every row the writer wrote while fewer than ten.
    const seen = skus(after.body)
    assert.strictEqual(seen.length, Math.min(10, written.length), "the next read has the other process's rows")
    for (const sku of seen) assert.include(written, sku)
  })

const tempDir = Effect.acquireRelease(Effect.sync(() => mkdtempSync(join(tmpdir(), "gpu-market-response-cache-"))), (dir) =>
  Effect.sync(() => rmSync(dir, { recursive: true, force: true })))

layer(testRedisLayer(), { timeout: "180 seconds" })("the response cache and a write through another process", (it) => {
  it.effect("sqlite: a second process writing to the same file retires the cached page; the next read has its rows", () =>
    Effect.scoped(Effect.gen(function* () {
      const file = join(yield* tempDir, "market.db")
      yield* seenAfterWrite(SqliteStorage.layer({ filename: file }), { FEED_DB: file })
    })), { timeout: 120_000 })

  it.effect("redis: a second process writing to the same Redis retires the cached page; the next read has its rows", () =>
    Effect.scoped(Effect.gen(function* () {
      const server = yield* TestRedis
      const prefix = uniquePrefix("response-cache")
      yield* seenAfterWrite(Layer.merge(MemoryStorage.layer, RedisStorage.layer({ url: server.url, prefix })), { FEED_REDIS_URL: server.url, FEED_REDIS_PREFIX: prefix })
    })), { timeout: 120_000 })
})
