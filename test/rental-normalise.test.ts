import { assert, describe, it } from "@effect/vitest"
import {
  InvalidRecords, marketLayer, type RentalPrice, type RentalPriceObservationInput, RentalPriceIngest
} from "@gpu-market/core"
import { RentalPriceStore } from "@gpu-market/core/storage"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Effect, Exit, Layer } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/**
 * The rental write path normalises what vendors publish: a raw price in its unit becomes USD per
 * GPU-hour, and a vendor's GPU spelling becomes a catalog GPU.
 */

const fresh = () => {
  const dir = mkdtempSync(join(tmpdir(), "gpu-market-normalise-"))
  return marketLayer.pipe(Layer.provideMerge(SqliteStorage.layer({ filename: join(dir, "market.db") })))
}

/** What a vendor publishes of one product: no per-GPU price, no catalog GPU. */
const published = (over: Partial<RentalPriceObservationInput> = {}): RentalPriceObservationInput => ({
  vendor: "acme", vendor_gpu_name: "H100 SXM5 80GB", vendor_sku: "8x-h100", region: "us-east", gpu_count: 8,
  contract_type: "ondemand", raw_price: 20, raw_price_unit: "usd_per_instance_hour", extracted_at: "2026-06-01T00:00:00Z", ...over
})

const stored = Effect.flatMap(RentalPriceStore, (s) => s.page({
  scope: { _tag: "latest" }, predicates: [{ op: "in", field: "vendor", values: ["acme"] }],
  sort: { by: "vendor", order: "asc" }, after: undefined, limit: 1_000
}))

/** The one row an observation stores. */
const rowOf = (o: RentalPriceObservationInput) =>
  Effect.gen(function* () {
    yield* (yield* RentalPriceIngest).ingest([o])
    const rows = (yield* stored).filter((r) => r.vendor_sku === o.vendor_sku)
    assert.strictEqual(rows.length, 1)
    return rows[0]!
  })

/** The reasons a batch was refused with, by record index. */
const refusal = (records: ReadonlyArray<unknown>) =>
  Effect.gen(function* () {
    const exit = yield* Effect.exit((yield* RentalPriceIngest).ingest(records))
    assert.isTrue(Exit.isFailure(exit), "the batch is refused")
    const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
    assert.instanceOf(error, InvalidRecords)
    return (error as InvalidRecords).errors.map((e) => `${e.index}: ${e.message}`)
  })

const gpuOf = (r: RentalPrice) => [r.gpu_canonical_name, r.gpu_manufacturer, r.gpu_model, r.gpu_memory_gb]

describe("rental normalisation", () => {
  it.effect("every basis and period comes to USD per GPU-hour, rounded to 6 decimals", () =>
    Effect.gen(function* () {
      const cases: Array<[string, number, number, number]> = [
        ["usd_per_gpu_hour", 2.5, 8, 2.5],
        ["usd_per_instance_hour", 20, 8, 2.5],
        ["usd_per_instance_day", 480, 8, 2.5],
        ["usd_per_gpu_week", 420, 8, 2.5],
        ["usd_per_instance_month", 14_600, 8, 2.5],
        ["usd_per_gpu_year", 21_900, 1, 2.5],
        ["usd_per_instance_hour", 1, 3, 0.333333]
      ]
      for (const [unit, raw, count, perGpuHour] of cases) {
        const row = yield* rowOf(published({ vendor_sku: `${unit}-${raw}-${count}`, raw_price_unit: unit, raw_price: raw, gpu_count: count }))
        assert.strictEqual(row.price_usd_per_gpu_hour, perGpuHour, unit)
        assert.strictEqual(row.raw_price, raw)
        assert.strictEqual(row.raw_price_unit, unit)
      }
    }).pipe(Effect.provide(fresh())))

  it.effect("a given per-GPU price must agree with the computed one at 4 decimals; the refusal names both", () =>
    Effect.gen(function* () {
      // The case: 1 USD per GPU-hour next to 100 USD an hour for 8 GPUs.
      const [reason] = yield* refusal([published({ raw_price: 100, price_usd_per_gpu_hour: 1 })])
      assert.strictEqual(reason, "0: price_usd_per_gpu_hour: 1 disagrees with 12.5 computed from raw_price 100 usd_per_instance_hour for 8 GPU(s)")
      // 1/3 given to 4 decimals agrees, and the computed price is stored.
      const third = yield* rowOf(published({ vendor_sku: "third", raw_price: 1, gpu_count: 3, price_usd_per_gpu_hour: 0.3333 }))
      assert.strictEqual(third.price_usd_per_gpu_hour, 0.333333)
      const [off] = yield* refusal([published({ raw_price: 1, gpu_count: 3, price_usd_per_gpu_hour: 0.3332 })])
      assert.include(off, "0.3332 disagrees with 0.333333")
    }).pipe(Effect.provide(fresh())))

  it.effect("a unit outside the set is refused naming the accepted form; a currency must be the unit's", () =>
    Effect.gen(function* () {
      const reasons = yield* refusal([
        published(),
        published({ raw_price_unit: "USD/hr" }),
        published({ raw_price_unit: "usd_per_hour" }),
        published({ currency: "EUR" })
      ])
      assert.strictEqual(reasons.length, 3)
      assert.match(reasons[0]!, /^1: raw_price_unit: expected <ccy>_per_<gpu\|instance>_<hour\|day\|week\|month\|year>, .* got "USD\/hr"$/)
      assert.match(reasons[1]!, /^2: raw_price_unit: expected <ccy>_per_.* got "usd_per_hour"$/)
      assert.strictEqual(reasons[2], "3: currency: EUR is not the currency of raw_price_unit usd_per_instance_hour (USD)")
      const row = yield* rowOf(published({ currency: "USD" }))
      assert.strictEqual(row.price_usd_per_gpu_hour, 2.5)
    }).pipe(Effect.provide(fresh())))

  it.effect("the GPU is resolved from the vendor's spelling, memory telling variants apart", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(gpuOf(yield* rowOf(published({ vendor_sku: "a", vendor_gpu_name: "NVIDIA H100 80GB HBM3" }))), ["h100-sxm", "nvidia", "H100", 80])
      assert.deepStrictEqual(gpuOf(yield* rowOf(published({ vendor_sku: "b", vendor_gpu_name: "A100", gpu_memory_gb: 40 }))), ["a100-sxm-40gb", "nvidia", "A100", 40])
      assert.deepStrictEqual(gpuOf(yield* rowOf(published({ vendor_sku: "c", vendor_gpu_name: "A100", gpu_memory_gb: 80 }))), ["a100-sxm-80gb", "nvidia", "A100", 80])
      assert.deepStrictEqual(gpuOf(yield* rowOf(published({ vendor_sku: "d", vendor_gpu_name: "H100", gpu_memory_gb: 94 }))), ["h100-nvl", "nvidia", "H100 NVL", 94])
      // A given slug among those the spelling names is kept; given fields win over the catalog's.
      assert.deepStrictEqual(
        gpuOf(yield* rowOf(published({ vendor_sku: "e", vendor_gpu_name: "H100", gpu_canonical_name: "h100-pcie", gpu_model: "H100 PCIe" }))),
        ["h100-pcie", "nvidia", "H100 PCIe", 80]
      )
      // A slug the catalog knows, with a spelling it does not: the slug's entry.
      assert.deepStrictEqual(gpuOf(yield* rowOf(published({ vendor_sku: "f", vendor_gpu_name: "Hopper 80", gpu_canonical_name: "h100-sxm" }))), ["h100-sxm", "nvidia", "H100", 80])
      // A new GPU, fully described by the observation.
      assert.deepStrictEqual(
        gpuOf(yield* rowOf(published({
          vendor_sku: "g", vendor_gpu_name: "Zeta 9", gpu_canonical_name: "zeta-9", gpu_manufacturer: "zeta", gpu_model: "Z9", gpu_memory_gb: 64
        }))),
        ["zeta-9", "zeta", "Z9", 64]
      )
    }).pipe(Effect.provide(fresh())))

  it.effect("an unknown spelling, a slug the spelling does not name, or a new slug described in part is refused", () =>
    Effect.gen(function* () {
      const reasons = yield* refusal([
        published({ vendor_gpu_name: "Voodoo 5 6000" }),
        published({ vendor_gpu_name: "A100 80GB", gpu_canonical_name: "h100-sxm" }),
        published({ vendor_gpu_name: "Zeta 9", gpu_canonical_name: "zeta-9", gpu_model: "Z9" })
      ])
      assert.deepStrictEqual(reasons, [
        "0: vendor_gpu_name: unknown GPU spelling \"Voodoo 5 6000\": add it to the GPU catalog (gpu-market import --type gpus)",
        "1: gpu_canonical_name: \"h100-sxm\" disagrees with the GPU catalog, where vendor_gpu_name \"A100 80GB\" names \"a100-sxm-80gb\"",
        "2: gpu_canonical_name: \"zeta-9\" is not in the GPU catalog: give gpu_manufacturer, gpu_model and gpu_memory_gb, or add it (gpu-market import --type gpus)"
      ])
      assert.deepStrictEqual(yield* stored, [])
    }).pipe(Effect.provide(fresh())))
})
