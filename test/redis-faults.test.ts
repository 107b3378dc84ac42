import { assert, describe, layer } from "@effect/vitest"
import { Auth, marketLayer, RentalPriceIngest } from "@gpu-market/core"
import { currentVersions, MemoryStorage, putVersions, rentalPriceKeys, RentalPriceStore } from "@gpu-market/core/storage"
import { rentalRow } from "@gpu-market/storage-testkit"
import { Effect, Either, Fiber, Layer, Schedule } from "effect"
import { http, LAST_DAY, observations, TOKENS } from "./support/market"
import { redisStorageLayer, TestRedis, testRedisLayer } from "./support/redis"

/**
 * Redis going away under a running app: requests fail fast with a 503 problem instead of
 * hanging, the app recovers by itself when Redis returns, and a write cut by a crash is applied
 * whole or not at all. The server keeps an fsynced append-only file, so a kill loses nothing
 * that was acknowledged. Real time throughout: the bounds are about real waiting.
 */

const COMMAND_TIMEOUT_MS = 500

const seed = Effect.gen(function* () {
  yield* (yield* RentalPriceIngest).ingest(observations(LAST_DAY))
  yield* (yield* Auth).issue(TOKENS.all, "all")
})

const storage = Layer.merge(MemoryStorage.layer, redisStorageLayer("faults", { commandTimeoutMs: COMMAND_TIMEOUT_MS }))
const app = Layer.effectDiscard(seed).pipe(Layer.provideMerge(marketLayer), Layer.provideMerge(storage))
const env = app.pipe(Layer.provideMerge(testRedisLayer({ persistent: true })))

const LATEST = "/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm&page_size=5"

/** Real milliseconds an effect took, with its result. */
const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const start = Date.now()
    const result = yield* effect
    return { result, ms: Date.now() - start }
  })

/** Asks until the app answers 200, as a client retrying after a 503 would. */
const untilOk = http(LATEST, { token: "all" }).pipe(
  Effect.filterOrFail((r) => r.status === 200),
  Effect.retry(Schedule.spaced("50 millis").pipe(Schedule.intersect(Schedule.recurs(200))))
)

describe("Redis faults", () => {
  layer(env, { timeout: "60 seconds", excludeTestServices: true })((it) => {
    it.effect("Redis killed: a quick 503 storage_unavailable; restarted: the same app serves again", () =>
      Effect.gen(function* () {
        const redis = yield* TestRedis
        const before = yield* http(LATEST, { token: "all" })
        assert.strictEqual(before.status, 200)
        yield* Effect.promise(() => redis.kill())
        const { result: down, ms } = yield* timed(http(LATEST, { token: "all" }))
        assert.strictEqual(down.status, 503)
        assert.strictEqual(down.body.code, "storage_unavailable")
        assert.match(down.headers.get("content-type") ?? "", /application\/problem\+json/)
        assert.isBelow(ms, 3000, "fails fast, does not wait for Redis")
        yield* Effect.promise(() => redis.restart())
        const back = yield* untilOk
        assert.deepStrictEqual(back.body.data, before.body.data, "nothing acknowledged was lost")
      }))

    it.effect("Redis hung: requests fail within the command timeout, then recover", () =>
      Effect.gen(function* () {
        const redis = yield* TestRedis
        redis.pause()
        const { result: hung, ms } = yield* timed(http(LATEST, { token: "all" })).pipe(Effect.ensuring(Effect.sync(() => redis.resume())))
        assert.strictEqual(hung.status, 503)
        assert.strictEqual(hung.body.code, "storage_unavailable")
        assert.isBelow(ms, 3000, "bounded by the command timeout")
        assert.strictEqual((yield* untilOk).status, 200)
      }))

    it.effect("a write cut by a kill is applied whole or not at all", () =>
      Effect.gen(function* () {
        const redis = yield* TestRedis
        const store = yield* RentalPriceStore
        const ns = `cut-${Date.now().toString(36)}`
        const batches = Array.from({ length: 100 }, (_, b) =>
          Array.from({ length: 300 }, (_, i) => rentalRow({ vendor: `${ns}-${b}`, gpu_canonical_name: `${ns}-gpu`, vendor_sku: `sku-${i}` })))
        const writer = yield* Effect.fork(Effect.forEach(batches, (open) => Effect.either(putVersions(store.transact, rentalPriceKeys, open))))
        // Kills Redis as soon as the first batch is in, while the others are still being written.
        const firstIn = currentVersions(store.transact, [batches[0]![0]!.base_product_key]).pipe(
          Effect.filterOrFail((rows) => rows.length === 1),
          Effect.retry(Schedule.spaced("5 millis").pipe(Schedule.intersect(Schedule.recurs(2000))))
        )
        yield* firstIn
        yield* Effect.promise(() => redis.kill())
        const outcomes = yield* Fiber.join(writer)
        yield* Effect.promise(() => redis.restart())
        yield* untilOk
        // A batch can be applied and still fail for its caller (the reply lost to the kill or the
        // command timeout); what must never happen is part of a batch, or a lost acknowledged one.
        assert.isTrue(outcomes.some(Either.isLeft), "the kill cut the writes short")
        for (const [b, open] of batches.entries()) {
          const current = yield* currentVersions(store.transact, open.map((r) => r.base_product_key))
          const indexed = yield* store.page({
            scope: { _tag: "latest" }, predicates: [{ op: "eq", field: "vendor", value: `${ns}-${b}` }],
            sort: { by: "price_usd_per_gpu_hour", order: "asc" }, after: undefined, limit: 1000
          })
          assert.include([0, open.length], current.length, `batch ${b}: all rows or none`)
          assert.strictEqual(indexed.length, current.length, `batch ${b}: indexes agree with rows`)
          if (Either.isRight(outcomes[b]!)) assert.strictEqual(current.length, open.length, `batch ${b} was acknowledged`)
        }
      }))
  })
})
