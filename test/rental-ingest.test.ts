import { assert, describe, it } from "@effect/vitest"
import {
  baseProductKey, InvalidRecords, marketLayer, productKey, type RentalPriceObservationInput, RentalPriceIngest
} from "@gpu-market/core"
import { RentalPriceStore } from "@gpu-market/core/storage"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Effect, Exit, Layer, Option } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const fresh = () => {
  const dir = mkdtempSync(join(tmpdir(), "gpu-market-ingest-"))
  return marketLayer.pipe(Layer.provideMerge(SqliteStorage.layer({ filename: join(dir, "market.db") })))
}

const obs = (over: Partial<RentalPriceObservationInput> = {}): RentalPriceObservationInput => ({
  vendor: "lambda", vendor_gpu_name: "H100 SXM5", vendor_sku: "gpu_8x_h100_sxm5", vendor_region: "us-east-1", region: "us-east",
  gpu_canonical_name: "h100-sxm", gpu_manufacturer: "nvidia", gpu_model: "H100", gpu_count: 8, gpu_memory_gb: 80, vcpu: 208,
  ram_gb: 1800, contract_type: "ondemand", raw_price: 23.92, raw_price_unit: "usd_per_instance_hour",
  extracted_at: "2026-06-01T00:00:00Z", ...over
})

const everything = Effect.flatMap(RentalPriceStore, (s) => s.page({
  scope: { _tag: "window", start: "2000-01-01T00:00:00.000000Z", end: "2100-01-01T00:00:00.000000Z" },
  predicates: [], sort: { by: "valid_from", order: "asc" }, after: undefined, limit: 10_000
}))

describe("rental price write path", () => {
  it.effect("an unchanged price touches nothing; a change closes the row and opens one, keeping the base key", () =>
    Effect.gen(function* () {
      const ingest = yield* RentalPriceIngest
      assert.deepStrictEqual(yield* ingest.ingest([obs()]), { received: 1, opened: 1, closed: 0, unchanged: 0, duplicates: 0 })
      const [v1] = yield* everything
      assert.strictEqual(v1!.valid_from, "2026-06-01T00:00:00.000000Z")
      assert.isNull(v1!.valid_to)
      assert.strictEqual(v1!.extracted_at, v1!.valid_from)
      // Same price a day later, with a descriptor changed: nothing is written.
      assert.deepStrictEqual(yield* ingest.ingest([obs({ extracted_at: "2026-06-02T00:00:00Z", vcpu: 224 })]), { received: 1, opened: 0, closed: 0, unchanged: 1, duplicates: 0 })
      assert.deepStrictEqual(yield* everything, [v1!])
      // A new price closes the old row at the observation's instant and opens a new one.
      assert.deepStrictEqual(yield* ingest.ingest([obs({ extracted_at: "2026-06-03T08:30:00+02:00", raw_price: 19.92 })]), { received: 1, opened: 1, closed: 1, unchanged: 0, duplicates: 0 })
      const [old, now] = yield* everything
      assert.deepStrictEqual(old, { ...v1!, valid_to: "2026-06-03T06:30:00.000000Z" })
      assert.strictEqual(now!.valid_from, "2026-06-03T06:30:00.000000Z")
      assert.isNull(now!.valid_to)
      assert.strictEqual(now!.base_product_key, v1!.base_product_key)
      assert.notStrictEqual(now!.product_key, v1!.product_key)
      assert.strictEqual(now!.product_key, productKey(now!.base_product_key, now!.valid_from, now!))
    }).pipe(Effect.provide(fresh())))

  it.effect("keys are stable hashes: the base key of identity only, the product key of base, time and price", () =>
    Effect.sync(() => {
      const identity = { vendor_sku: null, vendor_region: null, instance_type: null, instance_variant: null, os: null, contract_term: null, ...obs() }
      const base = baseProductKey(identity)
      // Stable across releases: these vectors must never change, or every stored key would.
      assert.strictEqual(base, "199721191704d4f7a5cc0c216cde01e1")
      assert.strictEqual(base, baseProductKey({ ...identity, price_usd_per_gpu_hour: 9, vcpu: 1, extracted_at: "2030-01-01T00:00:00Z" } as typeof identity))
      assert.notStrictEqual(base, baseProductKey({ ...identity, region: "eu-west" }))
      assert.notStrictEqual(base, baseProductKey({ ...identity, contract_type: "spot" }))
      assert.notStrictEqual(base, baseProductKey({ ...identity, gpu_count: 1 }))
      const p = productKey(base, "2026-06-01T00:00:00.000000Z", { price_usd_per_gpu_hour: 2.99, raw_price: 23.92, raw_price_unit: "usd_per_instance_hour" })
      assert.strictEqual(p, "c74081586931c9e72c84e382968562a1")
      assert.strictEqual(p, productKey(base, "2026-06-01T00:00:00.000000Z", { price_usd_per_gpu_hour: 2.99, raw_price: 23.92, raw_price_unit: "usd_per_instance_hour" }))
      assert.notStrictEqual(p, productKey(base, "2026-06-01T00:00:00.000001Z", { price_usd_per_gpu_hour: 2.99, raw_price: 23.92, raw_price_unit: "usd_per_instance_hour" }))
      assert.notStrictEqual(p, productKey(base, "2026-06-01T00:00:00.000000Z", { price_usd_per_gpu_hour: 2.98, raw_price: 23.92, raw_price_unit: "usd_per_instance_hour" }))
    }))

  it.effect("one batch may carry several days of one product, in any order", () =>
    Effect.gen(function* () {
      const ingest = yield* RentalPriceIngest
      const summary = yield* ingest.ingest([
        obs({ extracted_at: "2026-06-03T00:00:00Z", raw_price: 20 }),
        obs({ extracted_at: "2026-06-01T00:00:00Z" }),
        obs({ extracted_at: "2026-06-02T00:00:00Z" }),
        obs({ extracted_at: "2026-06-04T00:00:00Z" })
      ])
      assert.deepStrictEqual(summary, { received: 4, opened: 3, closed: 2, unchanged: 1, duplicates: 0 })
      const rows = yield* everything
      assert.deepStrictEqual(rows.map((r) => [r.price_usd_per_gpu_hour, r.valid_from.slice(0, 10), r.valid_to?.slice(0, 10) ?? null]), [
        [2.99, "2026-06-01", "2026-06-03"], [2.5, "2026-06-03", "2026-06-04"], [2.99, "2026-06-04", null]
      ])
    }).pipe(Effect.provide(fresh())))

  it.effect("a bad record refuses the whole batch with its index and reason; nothing is written", () =>
    Effect.gen(function* () {
      const ingest = yield* RentalPriceIngest
      yield* ingest.ingest([obs()])
      const before = yield* everything
      const bad: Array<[unknown, string]> = [
        [{ ...obs(), price_usd_per_gpu_hour: -1 }, "price_usd_per_gpu_hour"],
        [{ ...obs(), seller_url: "https://example.com" }, "unknown field"],
        [{ ...obs(), extracted_at: "last tuesday" }, "extracted_at"],
        [{ ...obs(), gpu_count: 1.5 }, "gpu_count"],
        [{ ...obs(), vendor: "Lambda Labs" }, "vendor"],
        [{ ...obs(), region: undefined }, "region"],
        ["not an object", "record"]
      ]
      for (const [record, says] of bad) {
        const exit = yield* Effect.exit(ingest.ingest([obs({ vendor_sku: "other", raw_price: 8 }), record]))
        assert.isTrue(Exit.isFailure(exit))
        if (Exit.isFailure(exit)) {
          const error = exit.cause._tag === "Fail" ? exit.cause.error : undefined
          assert.instanceOf(error, InvalidRecords)
          assert.strictEqual((error as InvalidRecords).errors[0]!.index, 1)
          assert.include((error as InvalidRecords).detail, says)
        }
      }
      // An observation older than the price in force, with another price, cannot be placed.
      const late = yield* Effect.exit(ingest.ingest([obs({ vendor_sku: "other", raw_price: 8 }), obs({ extracted_at: "2026-05-01T00:00:00Z", raw_price: 40 })]))
      assert.isTrue(Exit.isFailure(late))
      assert.deepStrictEqual(yield* everything, before)
    }).pipe(Effect.provide(fresh())))

  it.effect("a batch's progress mark is written with its last chunk, even by a batch of no rows, and never by a refused one", () =>
    Effect.gen(function* () {
      const ingest = yield* RentalPriceIngest
      const mark = (value: string) => ({ mark: { name: "feed_through", value } })
      // Five chunks of 12 products: the mark goes with the last one.
      const batch = Array.from({ length: 60 }, (_, i) => obs({ vendor_sku: `sku-mark-${i}` }))
      assert.strictEqual((yield* ingest.ingest(batch, mark("1"))).opened, 60)
      assert.deepStrictEqual(yield* ingest.mark("feed_through"), Option.some("1"))
      const refused = yield* Effect.exit(ingest.ingest([...batch, obs({ vendor_sku: "sku-mark-x", gpu_count: -1 })], mark("2")))
      assert.isTrue(Exit.isFailure(refused))
      assert.deepStrictEqual(yield* ingest.mark("feed_through"), Option.some("1"))
      yield* ingest.ingest([], mark("3"))
      assert.deepStrictEqual(yield* ingest.mark("feed_through"), Option.some("3"))
      yield* ingest.withdraw([], "2026-06-05T00:00:00Z", mark("4"))
      assert.deepStrictEqual(yield* ingest.mark("feed_through"), Option.some("4"))
    }).pipe(Effect.provide(fresh())))

  it.effect("withdrawing closes the current row; listing again opens a new one", () =>
    Effect.gen(function* () {
      const ingest = yield* RentalPriceIngest
      yield* ingest.ingest([obs()])
      const [row] = yield* everything
      assert.strictEqual(yield* ingest.withdraw([row!.base_product_key, "f".repeat(32)], "2026-06-05T00:00:00Z"), 1)
      assert.strictEqual((yield* everything)[0]!.valid_to, "2026-06-05T00:00:00.000000Z")
      const again = yield* ingest.ingest([obs({ extracted_at: "2026-06-10T00:00:00Z" })])
      assert.deepStrictEqual(again, { received: 1, opened: 1, closed: 0, unchanged: 0, duplicates: 0 })
      assert.strictEqual((yield* everything).length, 2)
    }).pipe(Effect.provide(fresh())))
})
