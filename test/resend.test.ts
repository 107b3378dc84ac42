import { assert, describe, layer } from "@effect/vitest"
import { InvalidRecords, LlmTokenPriceIngest, marketLayer, type Storage, RentalPriceIngest } from "@gpu-market/core"
import { LlmTokenPriceStore, MemoryStorage, type PagePlan, RentalPriceStore } from "@gpu-market/core/storage"
import * as RedisStorage from "@gpu-market/storage-redis"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Effect, Layer } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { llmObservations } from "./support/llm"
import { dayIso, observations } from "./support/market"
import { TestRedis, testRedisLayer, uniquePrefix } from "./support/redis"

/**
 * Sending a batch again stores nothing twice and refuses nothing: a resumed import or seed, or a
 * client retrying after a lost reply, re-applies observations the store already holds. Each is a
 * no-op: counted `duplicates` when a stored version starts at its instant with its price, and
 * `unchanged` when the version in force at its instant has its price. An old observation with
 * another price still cannot be placed. On every backend.
 */

const DAYS = 12

const sqliteStorage = Layer.unwrapScoped(Effect.map(
  Effect.acquireRelease(Effect.sync(() => mkdtempSync(join(tmpdir(), "gpu-market-resend-"))), (dir) =>
    Effect.sync(() => rmSync(dir, { recursive: true, force: true }))),
  (dir) => SqliteStorage.layer({ filename: join(dir, "market.db") })
))

const backends: ReadonlyArray<readonly [string, Layer.Layer<Storage, unknown, TestRedis>]> = [
  ["memory", MemoryStorage.layer],
  ["sqlite", sqliteStorage],
  ["redis", Layer.unwrapEffect(Effect.map(TestRedis, (server) => RedisStorage.layer({ url: server.url, prefix: uniquePrefix("resend") })))]
]

/** Every version ever stored, in one order. */
const everything: PagePlan = {
  scope: { _tag: "window", start: "2000-01-01T00:00:00.000000Z", end: "2100-01-01T00:00:00.000000Z" },
  predicates: [], sort: { by: "valid_from", order: "asc" }, after: undefined, limit: 100_000
}

/** How many stored versions the fixture's observations of `day` opened (they are all at its midnight). */
const openedOn = (stored: ReadonlyArray<{ readonly valid_from: string }>, day: number) =>
  stored.filter((r) => r.valid_from.slice(0, 10) === dayIso(day).slice(0, 10)).length

describe("sending a batch again", () => {
  layer(testRedisLayer(), { timeout: "120 seconds" })((it) => {
    for (const [name, storage] of backends) {
      const market = () => marketLayer.pipe(Layer.provideMerge(storage))

      it.effect(`${name}: rental prices sent again, day by day or all at once, change nothing`, () =>
        Effect.gen(function* () {
          const ingest = yield* RentalPriceIngest
          const store = yield* RentalPriceStore
          for (let day = 0; day < DAYS; day++) yield* ingest.ingest(observations(day))
          const stored = yield* store.page(everything)
          assert.isAbove(stored.filter((r) => r.valid_to !== null).length, 5, "the fixture changes prices")

          // As a crashed seed resumes: from the first day again. The observations that opened a
          // version are duplicates of it; the others repeat the price then in force.
          for (let day = 0; day < DAYS; day++) {
            const sent = observations(day)
            const opened = openedOn(stored, day)
            assert.deepStrictEqual(yield* ingest.ingest(sent), { received: sent.length, opened: 0, closed: 0, unchanged: sent.length - opened, duplicates: opened })
          }
          const all = Array.from({ length: DAYS }, (_, day) => observations(day)).flat()
          assert.deepStrictEqual(yield* ingest.ingest(all), { received: all.length, opened: 0, closed: 0, unchanged: all.length - stored.length, duplicates: stored.length })
          assert.deepStrictEqual(yield* store.page(everything), stored)

          // An old observation at a price that was never in force then is still refused, whole:
          // at the instant a stored version starts, and inside one.
          const changed = stored.find((r) => r.valid_to !== null)!
          const before = observations(0).find((o) => o.vendor_sku === changed.vendor_sku && o.vendor === changed.vendor &&
            o.region === changed.region && o.contract_type === changed.contract_type)!
          const wrong = { ...before, price_usd_per_gpu_hour: 9, raw_price: 9 * before.gpu_count }
          const at = yield* Effect.flip(ingest.ingest([...observations(1), { ...wrong, extracted_at: changed.valid_from }]))
          assert.instanceOf(at, InvalidRecords)
          assert.strictEqual(at.errors[0]!.message, `another price for this product at ${changed.valid_from} is already stored: ${changed.price_usd_per_gpu_hour} USD per GPU-hour (raw_price ${changed.raw_price} usd_per_instance_hour)`)
          const inside = `${changed.valid_from.slice(0, 11)}06:00:00.000000Z`
          const refused = yield* Effect.flip(ingest.ingest([...observations(1), { ...wrong, extracted_at: inside }]))
          assert.instanceOf(refused, InvalidRecords)
          assert.match(refused.detail, /is not after the price in force/)
          assert.deepStrictEqual(yield* store.page(everything), stored)
        }).pipe(Effect.provide(market())))

      it.effect(`${name}: a withdrawn product's old observations sent again change nothing; a later one lists it again`, () =>
        Effect.gen(function* () {
          const ingest = yield* RentalPriceIngest
          const store = yield* RentalPriceStore
          const day0 = observations(0)
          yield* ingest.ingest(day0)
          const o = day0[0]!
          const row = (yield* store.page(everything)).find((r) =>
            r.vendor === o.vendor && r.gpu_canonical_name === o.gpu_canonical_name && r.vendor_sku === o.vendor_sku &&
            r.region === o.region && r.contract_type === o.contract_type && r.gpu_count === o.gpu_count)
          const withdrawnAt = "2026-05-20T00:00:00.000000Z"
          assert.strictEqual(yield* ingest.withdraw([row!.base_product_key], withdrawnAt), 1)
          const stored = yield* store.page(everything)

          // As a client retrying after a lost reply: the first day again, withdrawn product included.
          assert.deepStrictEqual(yield* ingest.ingest(day0), { received: day0.length, opened: 0, closed: 0, unchanged: 0, duplicates: day0.length })
          assert.deepStrictEqual(yield* store.page(everything), stored)

          // Another price before the withdrawal would rewrite history: refused, whole.
          const refused = yield* Effect.flip(ingest.ingest([{ ...o, price_usd_per_gpu_hour: 9, raw_price: 9 * o.gpu_count, extracted_at: "2026-05-10T00:00:00Z" }]))
          assert.instanceOf(refused, InvalidRecords)
          assert.match(refused.detail, /before the withdrawal at 2026-05-20T00:00:00.000000Z/)
          assert.deepStrictEqual(yield* store.page(everything), stored)

          // From the withdrawal on, an observation lists the product again.
          const relisted = { ...o, extracted_at: withdrawnAt }
          assert.deepStrictEqual(yield* ingest.ingest([relisted]), { received: 1, opened: 1, closed: 0, unchanged: 0, duplicates: 0 })
          const versions = (yield* store.page(everything)).filter((r) => r.base_product_key === row!.base_product_key)
          assert.deepStrictEqual(versions.map((r) => [r.valid_from, r.valid_to]), [[row!.valid_from, withdrawnAt], [withdrawnAt, null]])
        }).pipe(Effect.provide(market())))

      it.effect(`${name}: LLM token prices sent again change nothing`, () =>
        Effect.gen(function* () {
          const ingest = yield* LlmTokenPriceIngest
          const store = yield* LlmTokenPriceStore
          for (let day = 0; day < DAYS; day++) yield* ingest.ingest(llmObservations(day))
          const stored = yield* store.page(everything)
          assert.isAbove(stored.filter((r) => r.valid_to !== null).length, 0, "the fixture changes prices")
          for (let day = 0; day < DAYS; day++) {
            const sent = llmObservations(day)
            const opened = openedOn(stored, day)
            assert.deepInclude(yield* ingest.ingest(sent), { received: sent.length, opened: 0, closed: 0, unchanged: sent.length - opened, duplicates: opened, flagged: 0, reflagged: 0 })
          }
          assert.deepStrictEqual(yield* store.page(everything), stored)
        }).pipe(Effect.provide(market())))
    }
  })
})
