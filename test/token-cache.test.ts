import { assert, layer } from "@effect/vitest"
import { Auth, marketLayer, type MarketServices, type Storage, type StorageError } from "@gpu-market/core"
import { guardStorage, MemoryStorage, RateLimitStore, TokenStore } from "@gpu-market/core/storage"
import * as RedisStorage from "@gpu-market/storage-redis"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Context, Effect, Layer } from "effect"
import { tempDb } from "./support/adapters"
import { atNow, http, TOKENS } from "./support/market"
import { TestRedis, testRedisLayer, uniquePrefix } from "./support/redis"

/**
 * Token lookups are cached in the process under the token store's version: a request with a
 * cached token reads the version and nothing of the token table (counted, on every backend), and
 * a token revoked or changed through another connection to the same store (as another process
 * would) is seen by the very next request.
 */

interface Counts { finds: number; versions: number }

/** `storage` with `TokenStore.find` and `TokenStore.version` counted. */
const counted = (storage: Layer.Layer<Storage, StorageError>, counts: Counts): Layer.Layer<Storage, StorageError> =>
  Layer.effectContext(Effect.map(Effect.context<Storage>(), (ctx) => {
    const tokens = Context.get(ctx, TokenStore)
    return Context.add(ctx, TokenStore, {
      ...tokens,
      find: (hash) => Effect.suspend(() => (counts.finds++, tokens.find(hash))),
      version: Effect.suspend(() => (counts.versions++, tokens.version))
    })
  })).pipe(Layer.provide(storage))

/** A backend: a storage to serve from and, for the shared ones, how to open another connection to it. */
interface Backend {
  readonly storage: Layer.Layer<Storage, StorageError>
  readonly other: Layer.Layer<Storage, StorageError> | undefined
}

const backends: ReadonlyArray<readonly [string, Effect.Effect<Backend, never, TestRedis>]> = [
  ["memory", Effect.succeed({ storage: MemoryStorage.layer, other: undefined })],
  ["sqlite", Effect.sync(() => {
    const filename = tempDb("token-cache")
    return { storage: SqliteStorage.layer({ filename }), other: SqliteStorage.layer({ filename }) }
  })],
  ["redis", Effect.map(TestRedis, (server) => {
    const options = { url: server.url, prefix: uniquePrefix("token-cache") }
    return { storage: RedisStorage.layer(options), other: RedisStorage.layer(options) }
  })]
]

const LATEST = "/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm&page_size=5"

/** Runs `body` with the market's services over `backend`'s storage (counted), the `all` and `other` tokens issued. */
const withMarket = <A, E>(backend: Backend, counts: Counts, body: Effect.Effect<A, E, MarketServices | Storage>) =>
  Effect.gen(function* () {
    yield* atNow
    const auth = yield* Auth
    yield* auth.issue(TOKENS.all, "all")
    yield* auth.issue(TOKENS.other, "other")
    return yield* body
  }).pipe(Effect.provide(marketLayer.pipe(Layer.provideMerge(counted(backend.storage, counts)))))

layer(testRedisLayer(), { timeout: "60 seconds" })("token lookups cached under the store's version", (it) => {
  for (const [name, open] of backends) {
    it.effect(`${name}: a cached token is not looked up again; a token issued here moves the version and empties the cache`, () =>
      Effect.gen(function* () {
        const counts: Counts = { finds: 0, versions: 0 }
        yield* withMarket(yield* open, counts, Effect.gen(function* () {
          const start = { ...counts }
          for (let i = 0; i < 20; i++) assert.strictEqual((yield* http(LATEST, { token: "all" })).status, 200)
          assert.deepStrictEqual({ finds: counts.finds - start.finds, versions: counts.versions - start.versions }, { finds: 1, versions: 20 })
          // An unknown token is looked up every time: only tokens that exist are kept.
          assert.strictEqual((yield* http(LATEST, { token: "nope" })).status, 401)
          assert.strictEqual((yield* http(LATEST, { token: "nope" })).status, 401)
          assert.strictEqual(counts.finds - start.finds, 3)
          yield* (yield* Auth).issue({ ...TOKENS.all, id: "t-new" }, "new")
          assert.strictEqual((yield* http(LATEST, { token: "all" })).status, 200)
          assert.strictEqual(counts.finds - start.finds, 4)
        }))
      }))

    it.effect(`${name}: a revoke or a change through another connection is seen by the next request`, () =>
      Effect.gen(function* () {
        const backend = yield* open
        // Memory has no other connection: the change goes through this market's own store.
        const elsewhere = <A, E>(change: Effect.Effect<A, E, Auth | TokenStore>) =>
          backend.other === undefined
            ? change
            : Effect.provide(change, Auth.Default.pipe(Layer.provideMerge(backend.other)))
        const counts: Counts = { finds: 0, versions: 0 }
        yield* withMarket(backend, counts, Effect.gen(function* () {
          assert.strictEqual((yield* http(LATEST, { token: "all" })).status, 200)
          assert.strictEqual((yield* http(LATEST, { token: "other" })).status, 200)
          const finds = counts.finds
          assert.strictEqual((yield* http(LATEST, { token: "all" })).status, 200)
          assert.strictEqual(counts.finds, finds, "served from the cache")

          // A new limit for `all`'s token: the next request is judged by it, and counted once.
          yield* elsewhere(Effect.flatMap(Auth, (auth) => auth.issue({ ...TOKENS.all, rate_limit_per_minute: 7 }, "all")))
          const limited = (yield* http(LATEST, { token: "all" })).headers
          assert.deepStrictEqual([limited.get("x-ratelimit-limit"), limited.get("x-ratelimit-remaining")], ["7", "4"])
          // `other`'s token now reaches another principal: counted under that one.
          yield* elsewhere(Effect.flatMap(Auth, (auth) => auth.issue({ ...TOKENS.other, id: "t-moved", rate_limit_per_minute: 5 }, "other")))
          const moved = (yield* http(LATEST, { token: "other" })).headers
          assert.deepStrictEqual([moved.get("x-ratelimit-limit"), moved.get("x-ratelimit-remaining")], ["5", "4"])

          assert.isTrue(yield* elsewhere(Effect.flatMap(TokenStore, (tokens) => tokens.revoke(TOKENS.all.id))))
          const revoked = yield* http(LATEST, { token: "all" })
          assert.strictEqual(revoked.status, 401)
          assert.strictEqual(revoked.body.code, "unauthenticated")
          assert.strictEqual((yield* http(LATEST, { token: "other" })).status, 200, "other principals' tokens still work")
        }))
      }))
  }
})

layer(testRedisLayer(), { timeout: "60 seconds" })("one round trip on Redis", (it) => {
  it.effect("a cached token's version read and its rate-limit count are both sent before either is answered, behind the breaker as served", () =>
    Effect.gen(function* () {
      const server = yield* TestRedis
      const events: Array<string> = []
      const traced = <A, E>(name: string, effect: Effect.Effect<A, E>) =>
        Effect.suspend(() => (events.push(`${name} sent`), effect)).pipe(Effect.ensuring(Effect.sync(() => events.push(`${name} answered`))))
      const storage = Layer.effectContext(Effect.map(Effect.context<Storage>(), (ctx) => {
        const tokens = Context.get(ctx, TokenStore), limits = Context.get(ctx, RateLimitStore)
        return ctx.pipe(
          Context.add(TokenStore, { ...tokens, version: traced("version", tokens.version) }),
          Context.add(RateLimitStore, { hit: (key, window, now) => traced("count", limits.hit(key, window, now)) })
        )
      })).pipe(Layer.provide(guardStorage(RedisStorage.layer({ url: server.url, prefix: uniquePrefix("round-trip") }))))
      yield* withMarket({ storage, other: undefined }, { finds: 0, versions: 0 }, Effect.gen(function* () {
        assert.strictEqual((yield* http(LATEST, { token: "all" })).status, 200)
        for (let i = 0; i < 20; i++) {
          events.length = 0
          assert.strictEqual((yield* http(LATEST, { token: "all" })).status, 200)
          assert.deepStrictEqual(events.slice(0, 2).sort(), ["count sent", "version sent"], events.join(", "))
        }
      }))
    }))
})
