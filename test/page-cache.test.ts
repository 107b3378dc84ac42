import { assert, describe, it, layer } from "@effect/vitest"
import { Auth, createMarket, marketLayer, memory, PageCache, PageCacheBytes, type Principal, RentalPriceIngest, type RentalPriceObservationInput } from "@gpu-market/core"
import { MemoryStorage, RentalPriceStore, type Storage } from "@gpu-market/core/storage"
import * as RedisStorage from "@gpu-market/storage-redis"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Context, Effect, FastCheck as fc, Layer, ParseResult, Runtime } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { redisStorage, seeded, sqliteStorage } from "./support/backends"
import { atNow, http, type Reply, LAST_DAY, observations, seed, TOKENS } from "./support/market"
import { TestRedis, testRedisLayer, uniquePrefix } from "./support/redis"

/**
 * Hot pages from memory: a read after a write sees the write's rows on every backend, whichever
 * connection wrote; a hit reads no page from storage; the cache keeps to its budget; and callers
 * of every kind of entitlement get from the cache exactly what storage would give them.
 */

/** A store whose `page` and `spellings` calls are counted, over `context`'s rental store. */
const counted = (context: Context.Context<Storage>) => {
  const calls = { page: 0, spellings: 0 }
  const store = Context.get(context, RentalPriceStore)
  return {
    calls,
    context: Context.add(context, RentalPriceStore, {
      ...store,
      page: (plan) => Effect.zipRight(Effect.sync(() => calls.page++), store.page(plan)),
      spellings: Effect.zipRight(Effect.sync(() => calls.spellings++), store.spellings)
    })
  }
}

/** The market's services over an already open storage; `bytes` sizes its page cache. */
const marketOver = (storage: Context.Context<Storage>, bytes?: number) =>
  Layer.build(marketLayer.pipe(
    Layer.provide(bytes === undefined ? Layer.empty : PageCacheBytes.layer(bytes)),
    Layer.provideMerge(Layer.succeedContext(storage))
  ))

/** One product's observation at `day`, at `price`. */
const observation = (day: number, price: number): RentalPriceObservationInput => {
  const o = observations(day).find((x) => x.vendor === "v-alpha" && x.gpu_canonical_name === "h100-sxm" && x.gpu_count === 1 && x.contract_type === "ondemand")!
  return { ...o, price_usd_per_gpu_hour: price, raw_price: price }
}

const principal = (id: string, grants: Principal["grants"], indices: Principal["indices"] = "all"): Principal => ({
  id: id as Principal["id"], name: id, grants, indices, legacy_custom_index: false, procurement: false, rate_limit_per_minute: 1_000_000
})

const LATEST = "/api/v2/gpu/rental/prices/latest?vendor=v-alpha&gpu_canonical_name=h100-sxm&sort_by=price_usd_per_gpu_hour"

/**
 * Reads `LATEST` through `reader` (cached) while `writer` (the same store, or another connection
 * to it) writes: the first read after each write has the write's price, and a repeat is a hit.
 */
const readAfterWrite = (reader: Context.Context<Storage>, writer: Context.Context<Storage>) =>
  Effect.gen(function* () {
    yield* atNow
    const { calls, context } = counted(reader)
    const readerMarket = yield* marketOver(context)
    const writerMarket = reader === writer ? readerMarket : yield* marketOver(writer)
    const write = (o: RentalPriceObservationInput) => Effect.provide(Effect.flatMap(RentalPriceIngest, (i) => i.ingest([o])), writerMarket)
    const read = Effect.provide(http(LATEST, { token: "all" }), readerMarket)
    yield* Effect.provide(Effect.flatMap(Auth, (a) => a.issue(TOKENS.all, "all")), writerMarket)
    yield* write(observation(0, 2))
    const prices = (r: { body: any }) => r.body.data.map((row: any) => row.price_usd_per_gpu_hour)
    for (const [day, price] of [[1, 3], [2, 1.5], [3, 4.25]] as const) {
      const before = yield* read
      const again = yield* read
      assert.strictEqual(again.text, before.text, "a repeat answers the same bytes")
      // Around the same bytes, the request's own parts: its id and the caller's budget.
      assert.notStrictEqual(again.headers.get("x-request-id"), before.headers.get("x-request-id"))
      assert.strictEqual(Number(again.headers.get("x-ratelimit-remaining")), Number(before.headers.get("x-ratelimit-remaining")) - 1)
      const pages = calls.page
      yield* read
      assert.strictEqual(calls.page, pages, "a hit reads no page from storage")
      yield* write(observation(day, price))
      const after = yield* read
      assert.strictEqual(after.status, 200, after.text)
      assert.deepStrictEqual(prices(after), [price], `the first read after the write of day ${day}`)
      assert.strictEqual(calls.page, pages + 1)
    }

    // A search resolved at one version is resolved again after a write adds a GPU it matches.
    const search = Effect.provide(http("/api/v2/gpu/rental/prices/latest?vendor=v-alpha&gpu_search=hopper", { token: "all" }), readerMarket)
    assert.deepStrictEqual((yield* search).body.data, [])
    const spellings = calls.spellings
    assert.deepStrictEqual((yield* search).body.data, [])
    assert.strictEqual(calls.spellings, spellings, "a repeat resolves the search from memory")
    yield* write({
      ...observation(4, 2), vendor_gpu_name: "Hopper Test 141GB", gpu_canonical_name: "h-test", gpu_model: "HT", gpu_memory_gb: 141, vendor_sku: "h-test"
    })
    assert.deepStrictEqual((yield* search).body.data.map((row: any) => row.gpu_canonical_name), ["h-test"])
  })

const scoped = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.scoped(effect)

const tempDir = Effect.acquireRelease(Effect.sync(() => mkdtempSync(join(tmpdir(), "gpu-market-page-cache-"))), (dir) =>
  Effect.sync(() => rmSync(dir, { recursive: true, force: true })))

describe("page cache", () => {
  it("createMarket takes pageCacheMb, and refuses one that is not a number ≥ 0 with its ParseError before opening anything", async () => {
    for (const pageCacheMb of [-1, Number.NaN, Number.POSITIVE_INFINITY]) {
      await createMarket({ storage: memory(), pageCacheMb }).then(
        () => assert.fail(`${pageCacheMb} was taken`),
        (e: unknown) => {
          assert.isTrue(ParseResult.isParseError(e), String(e))
          assert.include(String(e), "pageCacheMb")
        }
      )
    }
    for (const pageCacheMb of [0, 0.5, 64]) await (await createMarket({ storage: memory(), pageCacheMb })).close()
  })

  layer(testRedisLayer(), { timeout: "240 seconds" })((it) => {
    it.effect("memory: the first read after a write returns its rows; a hit reads no page", () =>
      scoped(Effect.gen(function* () {
        const storage = yield* Layer.build(MemoryStorage.layer)
        yield* readAfterWrite(storage, storage)
      })))

    it.effect("sqlite: the first read after a write returns its rows, written by this connection or another on the same file", () =>
      scoped(Effect.gen(function* () {
        const file = join(yield* tempDir, "market.db")
        const one = yield* Layer.build(SqliteStorage.layer({ filename: file }))
        yield* readAfterWrite(one, one)
        const shared = join(yield* tempDir, "market.db")
        const [reader, writer] = [yield* Layer.build(SqliteStorage.layer({ filename: shared })), yield* Layer.build(SqliteStorage.layer({ filename: shared }))]
        yield* readAfterWrite(reader, writer)
      })))

    it.effect("redis: the first read after a write returns its rows, written by this connection or another on the same Redis", () =>
      scoped(Effect.gen(function* () {
        const server = yield* TestRedis
        const redis = (prefix: string) => Layer.build(Layer.merge(MemoryStorage.layer, RedisStorage.layer({ url: server.url, prefix })))
        const one = yield* redis(uniquePrefix("cache-one"))
        yield* readAfterWrite(one, one)
        const prefix = uniquePrefix("cache-two")
        const [reader, writer] = [yield* redis(prefix), yield* redis(prefix)]
        yield* readAfterWrite(reader, writer)
      })))

    /**
     * A seeded SQLite market behind a page cache of 64 KiB, its storage's page reads counted, and
     * a search page of `n` rows: pages of growing size fill the budget quickly.
     */
    const searchPages = Effect.gen(function* () {
      yield* atNow
      const file = join(yield* tempDir, "market.db")
      const storage = yield* Layer.build(SqliteStorage.layer({ filename: file }))
      const seed = yield* marketOver(storage)
      yield* Effect.provide(Effect.gen(function* () {
        yield* (yield* Auth).issue(TOKENS.all, "all")
        yield* (yield* RentalPriceIngest).ingest(observations(LAST_DAY))
      }), seed)
      const budget = 64 * 1024
      const { calls, context } = counted(storage)
      const market = yield* marketOver(context, budget)
      const page = (n: number) => Effect.provide(http(`${LATEST.split("&sort_by")[0]!.replace("gpu_canonical_name=h100-sxm", "gpu_search=a,h,l")}&page_size=${n}`, { token: "all" }), market)
      return { budget, cache: Context.get(market, PageCache), calls, page, storage }
    })

    it.effect("queries asked once pass through: a stream of them does not evict the page asked again and again", () =>
      scoped(Effect.gen(function* () {
        const { cache, calls, page } = yield* searchPages
        for (let ask = 0; ask < 2; ask++) yield* page(40)
        // The page's rows, the whole page as the caller was answered (a `/latest` page), and the
        // spellings its search resolved by (kept at once: every search reads them).
        assert.strictEqual(cache.stats().entries, 3, "kept on its second request")
        // Enough one-off pages to fill the budget several times over, were they kept.
        for (let n = 1; n < 40; n++) assert.strictEqual((yield* page(n)).status, 200)
        assert.strictEqual(cache.stats().entries, 3, "none of them kept")
        const reads = calls.page
        yield* page(40)
        assert.strictEqual(calls.page, reads, "the page asked again is still held")
      })))

    it.effect("the cache keeps to its budget, least recently used out first; 0 turns it off", () =>
      scoped(Effect.gen(function* () {
        const { budget, cache, calls, page, storage } = yield* searchPages
        // Each page twice: a page is kept from its second request on.
        for (let n = 1; n <= 40; n++) {
          for (let ask = 0; ask < 2; ask++) {
            const r = yield* page(n)
            assert.strictEqual(r.status, 200, r.text)
            assert.isAtMost(cache.stats().bytes, budget)
          }
        }
        assert.isBelow(cache.stats().entries, 40, "entries were evicted")
        assert.isAbove(cache.stats().entries, 0)
        const [pages, spellings] = [calls.page, calls.spellings]
        yield* page(40)
        assert.strictEqual(calls.page, pages, "the most recent page is held")
        assert.strictEqual(calls.spellings, spellings, "and its search resolved from memory")
        yield* page(1)
        assert.strictEqual(calls.page, pages + 1, "the oldest page was evicted")

        const off = counted(storage)
        const uncached = yield* marketOver(off.context, 0)
        yield* Effect.provide(http(LATEST, { token: "all" }), uncached)
        yield* Effect.provide(http(LATEST, { token: "all" }), uncached)
        assert.strictEqual(off.calls.page, 2)
        assert.deepStrictEqual(Context.get(uncached, PageCache).stats(), { entries: 0, bytes: 0, offered: 0 })
      })))
  })

  // The fixture market (46 days, four GPUs, a withdrawal) on each backend, read by two markets:
  // one with the response cache, one without.
  layer(testRedisLayer(), { timeout: "600 seconds" })((it) => {
    const historyAccess = fc.oneof(
      fc.constant({ _tag: "none" as const }),
      fc.constant({ _tag: "unrestricted" as const }),
      fc.constantFrom("2026-05-01", "2026-05-10", "2026-05-20", "2026-06-01", "2026-06-14").map((date) => ({ _tag: "since" as const, date })),
      fc.integer({ min: 0, max: 60 }).map((days) => ({ _tag: "rolling" as const, days }))
    )
    const grants = fc.record({
      rental: fc.option(historyAccess, { nil: undefined }),
      hardware: fc.boolean()
    }).map(({ rental, hardware }): Principal["grants"] => ({
      ...(rental === undefined ? {} : { gpu_rental_prices: { history: rental } }),
      ...(hardware ? { gpu_hardware_prices: { history: { _tag: "unrestricted" } } } : {})
    }))
    const instant = fc.constantFrom("2026-04-20", "2026-05-05", "2026-05-15T06:00:00Z", "2026-05-25", "2026-06-10", "2026-06-15T11:00:00Z", "2027-01-01")
    const filters = fc.subarray(["vendor=v-alpha,v-gamma", "gpu_search=h100,l40", "gpu_canonical_name=v100,a100-sxm-80gb", "contract_type=spot", "min_gpu_count=8"], { minLength: 1 })
    const sort = fc.option(fc.constantFrom("sort_by=price_usd_per_gpu_hour", "sort_by=valid_from&sort_order=desc", "sort_by=region"), { nil: undefined })
    const query = fc.record({
      endpoint: fc.constantFrom("latest", "as-of", "history"),
      filters,
      sort,
      at: instant,
      start: fc.option(instant, { nil: undefined }),
      end: fc.option(instant, { nil: undefined }),
      size: fc.constantFrom(3, 10, 1000)
    }).map((q) => {
      const params = [...q.filters, ...(q.sort === undefined ? [] : [q.sort]), `page_size=${q.size}`]
      if (q.endpoint === "as-of") params.push(`at=${q.at}`)
      if (q.endpoint === "history") {
        if (q.start !== undefined) params.push(`start=${q.start}`)
        if (q.end !== undefined) params.push(`end=${q.end}`)
      }
      return `/api/v2/gpu/rental/prices/${q.endpoint}?${params.join("&")}`
    })

    /**
     * The response cache never serves a row a caller may not see: random callers of different
     * grants and history floors ask the same queries (so one caller's entries are asked for by
     * the others), and each gets from the cache exactly what storage gives it.
     */
    const sameAsStorage = (base: Context.Context<Storage>) =>
      Effect.gen(function* () {
        const runtime = yield* Effect.runtime<never>()
        const hits = counted(base)
        const cached = yield* marketOver(hits.context)
        const uncached = yield* marketOver(base, 0)
        const auth = Context.get(cached, Auth)
        let issued = 0
        /** What a caller sees of a reply; a problem's request id is random. */
        const seen = (r: Reply) => ({ status: r.status, body: r.body?.request_id === undefined ? r.text : { ...r.body, request_id: "(random)" } })
        let pages = 0
        yield* Effect.promise(() => fc.assert(fc.asyncProperty(
          fc.array(fc.tuple(grants, fc.array(query, { minLength: 1, maxLength: 4 })), { minLength: 2, maxLength: 4 }),
          (callers) => Runtime.runPromise(runtime)(Effect.gen(function* () {
            // Every caller asks every query, so entries one caller filled are asked for by the others.
            const secrets = yield* Effect.forEach(callers, ([g]) => {
              const secret = `prop-${issued++}`
              return Effect.as(auth.issue(principal(`p-${secret}`, g), secret), secret)
            })
            const queries = callers.flatMap(([, qs]) => qs)
            for (const path of queries) for (const secret of secrets) {
              let next: string | null = path
              for (let page = 0; next !== null && page < 3; page++) {
                const fromCache: Reply = yield* Effect.provide(http(next, { token: secret }), cached)
                const fromStorage = yield* Effect.provide(http(next, { token: secret }), uncached)
                assert.deepStrictEqual(seen(fromCache), seen(fromStorage), `${secret} ${next}`)
                if (fromCache.status === 200) pages++
                next = fromCache.status === 200 && fromCache.body.meta.next !== null
                  ? fromCache.body.meta.next.url.slice("http://market.test".length)
                  : null
              }
            }
          }))
        ), { numRuns: 15 }))
        // Many pages were served from memory (a page is kept from its second request on): the
        // property held on hits, not only on misses.
        assert.isBelow(hits.calls.page, pages * 0.75, `${hits.calls.page} page reads for ${pages} pages`)
      })

    const backends = { memory: MemoryStorage.layer, sqlite: sqliteStorage, redis: redisStorage("cache-property") }
    for (const [name, storage] of Object.entries(backends)) {
      it.effect(`${name}: callers of every entitlement get from the cache exactly what storage gives them, page after page`, () =>
        scoped(Effect.gen(function* () {
          yield* atNow
          yield* sameAsStorage(yield* Layer.build(seeded(storage, seed)))
        })))
    }
  })
})
