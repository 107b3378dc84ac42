import { assert, describe, it, layer } from "@effect/vitest"
import {
  Auth, createMarket, marketLayer, MarketProblemError, RentalPriceIngest, type Storage, type StorageError, StorageUnavailable
} from "@gpu-market/core"
import { hashToken, type PagePlan, RentalPriceStore, StorageDefect, storageContext, TokenStore } from "@gpu-market/core/storage"
import * as RedisStorage from "@gpu-market/storage-redis"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import Database from "better-sqlite3"
import { Cause, Context, Effect, Exit, Layer, Logger, Option } from "effect"
import { Redis } from "ioredis"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { makeKeys } from "../packages/storage-redis/src/internal"
import { fromDatabase, makeStores, migrate } from "../packages/storage-sqlite/src/internal"
import { http, observations, type Reply, TOKENS } from "./support/market"
import { TestRedis, testRedisLayer, uniquePrefix } from "./support/redis"

/**
 * Errors mean what they say. A programming error (a plan a store will not run, a stored record
 * that does not decode) is a defect: one 500 `internal_error`, logged once where the request
 * ends, never retried. Storage trouble is a 503 `storage_unavailable` the caller may retry, and
 * is not logged. On real backends: a SQLite file and a redis-server.
 */

const LATEST = "/v2/gpu/rental/prices/latest?vendor=v-alpha"

/** What a test logger saw: each entry's level and cause. */
const captureLogs = () => {
  const entries: Array<{ readonly level: string; readonly cause: Cause.Cause<unknown> }> = []
  const logger = Logger.replace(Logger.defaultLogger, Logger.make(({ cause, logLevel }) => {
    entries.push({ level: logLevel.label, cause })
  }))
  return { logger, errors: () => entries.filter((e) => e.level === "ERROR") }
}

/** The defect a cause holds, which must be a backend's `StorageDefect`. */
const storageDefect = (cause: Cause.Cause<unknown>): StorageDefect => {
  const defect = Option.getOrUndefined(Cause.dieOption(cause))
  assert.instanceOf(defect, StorageDefect, Cause.pretty(cause))
  return defect as StorageDefect
}

const expectInternalError = (r: Reply) => {
  assert.strictEqual(r.status, 500, r.text)
  assert.strictEqual(r.body.code, "internal_error")
  assert.strictEqual(r.body.detail, "the request failed unexpectedly; it has been logged")
}

/** A backend under test: its storage (counting token look-ups) and a way to damage a stored token behind its back. */
class Backend extends Context.Tag("Test/Backend")<Backend, {
  /** Opens its own connection to the same data on every build. */
  readonly storage: Layer.Layer<Storage, StorageError>
  /** Overwrites the stored principal of a token with bytes that do not decode. */
  readonly corruptToken: (secret: string) => Effect.Effect<void>
  /** Token look-ups so far, over every connection. */
  readonly finds: () => number
}>() {}

/** `storage` with `TokenStore.find` counted, to see that nothing retries a defect. */
const countingFinds = (storage: Layer.Layer<Storage, StorageError>, count: () => void): Layer.Layer<Storage, StorageError> =>
  Layer.effectContext(Effect.map(Effect.context<Storage>(), (ctx) => {
    const tokens = Context.get(ctx, TokenStore)
    return Context.add(ctx, TokenStore, { ...tokens, find: (hash) => Effect.suspend(() => (count(), tokens.find(hash))) })
  })).pipe(Layer.provide(storage))

const sqliteBackend = Layer.sync(Backend, () => {
  const filename = join(mkdtempSync(join(tmpdir(), "gpu-market-defects-")), "market.db")
  let finds = 0
  return {
    storage: countingFinds(SqliteStorage.layer({ filename }), () => finds++),
    corruptToken: (secret) => Effect.sync(() => {
      const db = new Database(filename)
      try {
        const changed = db.prepare("UPDATE tokens SET principal_json = ? WHERE token_hash = ?").run('{"id": ', hashToken(secret)).changes
        assert.strictEqual(changed, 1)
      } finally {
        db.close()
      }
    }),
    finds: () => finds
  }
})

const redisBackend = Layer.scoped(Backend, Effect.gen(function* () {
  const server = yield* TestRedis
  const prefix = uniquePrefix("defects")
  const redis = yield* Effect.acquireRelease(Effect.sync(() => new Redis(server.url)), (r) => Effect.promise(() => r.quit()))
  let finds = 0
  return {
    storage: countingFinds(RedisStorage.layer({ url: server.url, prefix }), () => finds++),
    corruptToken: (secret) => Effect.promise(async () => {
      const created = await redis.hset(makeKeys(prefix).key("tokens", "by-hash"), hashToken(secret), Buffer.from("not msgpack"))
      assert.strictEqual(created, 0, "the token was there to overwrite")
    }),
    finds: () => finds
  }
})).pipe(Layer.provide(testRedisLayer()))

/** The market over a backend, with two tokens: `all`, and `corrupt` for a test to damage. */
const marketOver = (backend: Layer.Layer<Backend>) =>
  Layer.unwrapEffect(Effect.map(Backend, (b) =>
    Layer.effectDiscard(Effect.gen(function* () {
      const auth = yield* Auth
      yield* auth.issue(TOKENS.all, "all")
      yield* auth.issue(TOKENS.other, "corrupt")
    })).pipe(Layer.provideMerge(marketLayer), Layer.provideMerge(b.storage))
  )).pipe(Layer.provideMerge(backend))

const unknownSort: PagePlan = {
  scope: { _tag: "latest" }, predicates: [], sort: { by: "nonesuch", order: "asc" }, after: undefined, limit: 5
}

for (const [name, backend] of [["SQLite", sqliteBackend], ["Redis", redisBackend]] as const) {
  describe(`defects on ${name}`, () => {
    layer(marketOver(backend), { timeout: "60 seconds" })((it) => {
      it.effect("a stored token that does not decode: one 500 internal_error over HTTP and the Promise API, logged once, not retried", () =>
        Effect.gen(function* () {
          const b = yield* Backend
          yield* b.corruptToken("corrupt")

          const http500 = captureLogs()
          const before = b.finds()
          expectInternalError(yield* http(LATEST, { token: "corrupt" }).pipe(Effect.provide(http500.logger)))
          assert.strictEqual(b.finds() - before, 1, "looked up once")
          assert.lengthOf(http500.errors(), 1)
          const defect = storageDefect(http500.errors()[0]!.cause)
          assert.strictEqual(defect.operation, "tokens.find")

          const direct500 = captureLogs()
          const market = yield* Effect.acquireRelease(
            Effect.promise(() => createMarket({ storage: Layer.merge(b.storage, direct500.logger) })),
            (m) => Effect.promise(() => m.close())
          )
          const afterHttp = b.finds()
          const rejected = yield* Effect.flip(Effect.tryPromise(() => market.rental.prices.latest({ vendor: "v-alpha" }, { token: "corrupt" })))
          assert.instanceOf(rejected.error, MarketProblemError)
          const problem = (rejected.error as MarketProblemError).problem
          assert.strictEqual(problem.status, 500)
          assert.strictEqual(problem.code, "internal_error")
          assert.strictEqual(b.finds() - afterHttp, 1, "looked up once")
          assert.lengthOf(direct500.errors(), 1)
          assert.strictEqual(storageDefect(direct500.errors()[0]!.cause).operation, "tokens.find")

          // The record is broken, not the storage: every other token still works.
          assert.strictEqual((yield* http(LATEST, { token: "all" })).status, 200)
          assert.strictEqual((yield* Effect.promise(() => market.rental.prices.latest({ vendor: "v-alpha" }, { token: "all" }))).data.length, 0)
        }).pipe(Effect.scoped))

      it.effect("a plan sorting by a field the rows do not have dies with a StorageDefect, never a StorageError", () =>
        Effect.gen(function* () {
          const exit = yield* Effect.exit((yield* RentalPriceStore).page(unknownSort))
          assert.isTrue(Exit.isFailure(exit))
          if (Exit.isFailure(exit)) {
            assert.isTrue(Option.isNone(Cause.failureOption(exit.cause)), Cause.pretty(exit.cause))
            const defect = storageDefect(exit.cause)
            assert.strictEqual(defect.operation, "rental_prices.page")
            assert.strictEqual((defect.cause as Error).name, "InvalidPlan")
          }
        }))
    })
  })
}

describe("storage trouble on SQLite", () => {
  it.effect("a write lock held past the busy timeout: 503 storage_unavailable with each path's detail, nothing logged; released: 200", () =>
    Effect.gen(function* () {
      const filename = join(mkdtempSync(join(tmpdir(), "gpu-market-busy-")), "market.db")
      // A busy timeout of zero: the lock below is held past it at once, with no waiting.
      const db = yield* Effect.acquireRelease(Effect.sync(() => new Database(filename, { timeout: 0 })), (d) => Effect.sync(() => d.close()))
      db.pragma("journal_mode = WAL")
      const client = fromDatabase(db, filename)
      yield* migrate(client)
      const ctx = yield* Layer.build(marketLayer.pipe(Layer.provideMerge(Layer.succeedContext(storageContext(makeStores(client))))))
      yield* Effect.provide(Effect.flatMap(Auth, (auth) => auth.issue(TOKENS.all, "all")), ctx)

      const holder = yield* Effect.acquireRelease(Effect.sync(() => new Database(filename)), (d) => Effect.sync(() => d.close()))
      holder.exec("BEGIN IMMEDIATE")
      const logs = captureLogs()
      const read = yield* http(LATEST, { token: "all" }).pipe(Effect.provide(ctx), Effect.provide(logs.logger))
      const write = yield* Effect.flip(Effect.flatMap(RentalPriceIngest, (ingest) => ingest.ingest(observations(0)))).pipe(
        Effect.provide(ctx), Effect.provide(logs.logger)
      )
      holder.exec("ROLLBACK")

      assert.strictEqual(read.status, 503, read.text)
      assert.strictEqual(read.body.code, "storage_unavailable")
      assert.strictEqual(read.body.detail, "storage is unavailable (rate_limits.hit); try again shortly")
      assert.instanceOf(write, StorageUnavailable)
      assert.strictEqual(
        (write as StorageUnavailable).detail,
        "storage is unavailable (rental_prices.transact); part of the batch may be stored, each chunk of up to 25 rows whole or not at all, and sending it again is safe"
      )
      assert.lengthOf(logs.errors(), 0)
      assert.strictEqual((yield* http(LATEST, { token: "all" }).pipe(Effect.provide(ctx))).status, 200)
    }).pipe(Effect.scoped))
})
