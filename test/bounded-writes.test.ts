import { assert, describe, it } from "@effect/vitest"
import { marketLayer, type RentalPrice, RentalPriceIngest, type RentalPriceObservationInput } from "@gpu-market/core"
import { MAX_ROWS_PER_WRITE, MemoryStorage, ReferenceDataStore, RentalPriceStore, type TransactVersions, type VersionChanges } from "@gpu-market/core/storage"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Effect, Either, Layer } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/**
 * A large ingest is written in chunks of at most `MAX_ROWS_PER_WRITE` rows (or the store's own
 * `rowsPerWrite`, SQLite's for rental prices), so no single write holds the store for long, and
 * every product's close and open travel in the same chunk, so a reader never sees a product with
 * two current rows or none.
 */

const PRODUCTS = 4 * MAX_ROWS_PER_WRITE + 7

const obs = (sku: number, day: number, price: number): RentalPriceObservationInput => ({
  vendor: "v-bulk", vendor_gpu_name: "H100 SXM5", vendor_sku: `sku-${sku}`, region: "us-east", gpu_canonical_name: "h100-sxm",
  gpu_manufacturer: "nvidia", gpu_model: "H100", gpu_count: 8, gpu_memory_gb: 80, contract_type: "ondemand",
  price_usd_per_gpu_hour: price, raw_price: price * 8, raw_price_unit: "usd_per_instance_hour",
  extracted_at: `2026-06-0${day}T00:00:00Z`
})

/**
 * The changes of every `transact` that wrote something. A step records what its decision wrote
 * once the step succeeds: read-only steps (ingest checks a large batch before writing) decide no
 * change and are no write, and a decision the store refused was never written.
 */
const recorded: Array<VersionChanges<RentalPrice>> = []
const recording = (transact: TransactVersions<RentalPrice>): TransactVersions<RentalPrice> => (points, decide) => {
  let wrote: VersionChanges<RentalPrice> | undefined
  return transact(points, (view) => {
    const decision = decide(view)
    wrote = Either.isRight(decision) ? decision.right.changes : undefined
    return decision
  }).pipe(Effect.tap(() =>
    Effect.sync(() => {
      if (wrote !== undefined && wrote.close.length + wrote.open.length > 0) recorded.push(wrote)
    })))
}
const recordingOver = <A, E>(backend: Layer.Layer<A | RentalPriceStore, E>) =>
  Layer.effect(RentalPriceStore, Effect.map(RentalPriceStore, (store) => ({ ...store, transact: recording(store.transact) })))
    .pipe(Layer.provideMerge(backend))
const storage = recordingOver(MemoryStorage.layer)

describe("bounded writes", () => {
  it.effect("a batch larger than one write is split into writes of at most MAX_ROWS_PER_WRITE rows, each product whole", () =>
    Effect.gen(function* () {
      const ingest = yield* RentalPriceIngest
      const first = yield* ingest.ingest(Array.from({ length: PRODUCTS }, (_, i) => obs(i, 1, 2)))
      assert.strictEqual(first.opened, PRODUCTS)
      assert.isAbove(recorded.length, 1, "more than one write")
      const store = yield* RentalPriceStore
      const latest = store.page({ scope: { _tag: "latest" }, predicates: [], sort: { by: "vendor", order: "asc" }, after: undefined, limit: 10_000 })
      const baseOf = new Map((yield* latest).map((r) => [r.product_key, r.base_product_key]))
      // Every product changes price: each change closes one row and opens one.
      recorded.length = 0
      const second = yield* ingest.ingest(Array.from({ length: PRODUCTS }, (_, i) => obs(i, 2, 3)))
      assert.deepStrictEqual(second, { received: PRODUCTS, opened: PRODUCTS, closed: PRODUCTS, unchanged: 0, duplicates: 0 })
      assert.isAbove(recorded.length, 1, "more than one write")
      for (const write of recorded) {
        assert.isAtMost(write.close.length + write.open.length, MAX_ROWS_PER_WRITE)
        // The products a write closes are exactly the products it opens.
        assert.sameMembers(write.close.map((c) => baseOf.get(c.key)!), write.open.map((r) => r.base_product_key))
      }
      const current = yield* latest
      assert.strictEqual(current.length, PRODUCTS, "one current row per product")
    }).pipe(Effect.provide(marketLayer.pipe(Layer.provideMerge(storage)))))
})

describe("bounded writes on SQLite", () => {
  it.effect("a store that allows larger writes gets chunks of at most its rowsPerWrite rows: a batch of 500 new products is one write", () =>
    Effect.gen(function* () {
      const ingest = yield* RentalPriceIngest
      const store = yield* RentalPriceStore
      const limit = store.rowsPerWrite!
      assert.isAbove(limit, MAX_ROWS_PER_WRITE)
      recorded.length = 0
      yield* ingest.ingest(Array.from({ length: limit / 2 }, (_, i) => obs(i, 1, 2)))
      assert.strictEqual(recorded.length, 1, "one write")
      assert.strictEqual(recorded[0]!.open.length, limit / 2)
      recorded.length = 0
      const more = limit + 7
      yield* ingest.ingest(Array.from({ length: more }, (_, i) => obs(limit + i, 1, 2)))
      assert.isAbove(recorded.length, 1, "more than one write")
      for (const write of recorded) assert.isAtMost(write.close.length + write.open.length, limit)
      assert.strictEqual(recorded.reduce((n, w) => n + w.open.length, 0), more)
    }).pipe(Effect.provide(marketLayer.pipe(Layer.provideMerge(recordingOver(
      SqliteStorage.layer({ filename: join(mkdtempSync(join(tmpdir(), "gpu-market-bounded-")), "market.db") })
    ))))))
})

describe("a batch refused part-way", () => {
  it.effect("when another writer moves a product between the batch's check and its last chunk, the refusal says the earlier chunks were stored", () => {
    // Steps of this ingest: one read-only check of the whole batch, then one per chunk. Just
    // before the last chunk, another writer prices its last product later and differently.
    const batch = Array.from({ length: PRODUCTS }, (_, i) => obs(i, 1, 2))
    // A new product's observation writes one row and counts one more for a row it might close.
    const perChunk = Math.floor(MAX_ROWS_PER_WRITE / 2)
    const chunks = Math.ceil(PRODUCTS / perChunk)
    let steps = 0
    const racing = Layer.effect(RentalPriceStore, Effect.map(Effect.all([RentalPriceStore, ReferenceDataStore]), ([store, reference]): RentalPriceStore["Type"] => ({
      ...store,
      transact: (points, decide) => Effect.suspend(() => {
        steps++
        if (steps !== 1 + chunks) return store.transact(points, decide)
        return Effect.zipRight(
          Effect.flatMap(RentalPriceIngest, (other) => other.ingest([obs(PRODUCTS - 1, 3, 9)])).pipe(
            Effect.provide(RentalPriceIngest.Default),
            Effect.provideService(RentalPriceStore, store),
            Effect.provideService(ReferenceDataStore, reference),
            Effect.orDie
          ),
          store.transact(points, decide)
        )
      })
    }))).pipe(Layer.provideMerge(MemoryStorage.layer))
    return Effect.gen(function* () {
      const ingest = yield* RentalPriceIngest
      const refused = yield* Effect.flip(ingest.ingest(batch))
      assert.strictEqual(steps, 1 + chunks)
      assert.match(refused.detail, /the chunks before this one were stored/)
      assert.notMatch(refused.detail, /nothing was stored/)
      const store = yield* RentalPriceStore
      const latest = yield* store.page({ scope: { _tag: "latest" }, predicates: [], sort: { by: "vendor", order: "asc" }, after: undefined, limit: 10_000 })
      // Every product of the earlier chunks is stored, and the other writer's price stands.
      assert.strictEqual(latest.length, perChunk * (chunks - 1) + 1)
      assert.deepInclude(latest.map((r) => [r.vendor_sku, r.price_usd_per_gpu_hour]), [`sku-${PRODUCTS - 1}`, 9])
    }).pipe(Effect.provide(marketLayer.pipe(Layer.provideMerge(racing))))
  })
})
