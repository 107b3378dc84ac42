import { assert, describe, it } from "@effect/vitest"
import { marketLayer, type RentalPrice } from "@gpu-market/core"
import { RentalPriceStore } from "@gpu-market/core/storage"
import * as Demo from "@gpu-market/demo"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Effect, Layer, TestClock } from "effect"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"

const DAY_MS = 86_400_000
/** Midday of the anchor day: the demo's prices are the catalogs' from this day on. */
const ANCHOR_MS = Demo.DEMO_ANCHOR_DAY * DAY_MS + 12 * 3_600_000
const CLOUDS = ["cudo", "hyperbolic", "lambda", "nebius", "primeintellect", "runpod", "shadeform", "vast"]

const freshMarket = () => {
  const dir = mkdtempSync(join(tmpdir(), "gpu-market-rental-demo-"))
  return marketLayer.pipe(Layer.provideMerge(SqliteStorage.layer({ filename: join(dir, "market.db") })))
}

const everything = Effect.flatMap(RentalPriceStore, (s) => s.page({
  scope: { _tag: "window", start: "2000-01-01T00:00:00.000000Z", end: "2100-01-01T00:00:00.000000Z" },
  predicates: [], sort: { by: "valid_from", order: "asc" }, after: undefined, limit: 1_000_000
}))
const byKey = (rows: ReadonlyArray<RentalPrice>) => [...rows].sort((a, b) => (a.product_key < b.product_key ? -1 : 1))

/** The `Price` a shipped SkyPilot catalog publishes for an instance type, read from the file as published. */
const publishedPrice = (cloud: string, instanceType: string, region: string): number => {
  const [header, ...lines] = readFileSync(resolve(import.meta.dirname, `fixtures/real/skypilot/${cloud}-vms.csv`), "utf8").split(/\r?\n/)
  const cols = header!.split(",")
  const row = lines.map((l) => l.split(",")).find((f) => f[0] === instanceType && f[cols.indexOf("Region")] === region)!
  return Number(row[cols.indexOf("Price")])
}

/** Seeds `days` days before `atMs` on a fresh store, or extends `layer`'s store to `atMs`. */
const seedAt = (atMs: number, days: number) => Effect.gen(function* () {
  yield* TestClock.setTime(atMs)
  yield* Demo.seedDemo({ days })
})

describe("the demo rental market is the real SkyPilot catalogs", () => {
  it.effect("from the anchor day on, the current prices are the catalogs' published prices, every cloud a vendor", () =>
    Effect.gen(function* () {
      yield* seedAt(ANCHOR_MS + DAY_MS, 3)
      const current = (yield* everything).filter((r) => r.valid_to === null)
      const lambda = current.filter((r) => r.vendor === "lambda" && r.vendor_sku === "gpu_8x_h100_sxm5" && r.contract_type === "ondemand")
      // One product per region group; lambda's instance costs the same in each of its regions.
      assert.sameMembers(lambda.map((r) => r.vendor_region), ["europe-central-1", "us-east-1", "asia-south-1"])
      for (const r of lambda) {
        assert.strictEqual(r.raw_price, publishedPrice("lambda", "gpu_8x_h100_sxm5", r.vendor_region!))
        assert.strictEqual(r.price_usd_per_gpu_hour, 2.99) // 23.92 USD per instance-hour / 8
        assert.strictEqual(r.gpu_canonical_name, "h100-sxm")
        assert.strictEqual(r.valid_from.slice(0, 10), "2026-11-24")
      }
      const nebius = current.find((r) => r.vendor === "nebius" && r.vendor_sku === "gpu-h200-sxm_8gpu-128vcpu-1600gb" && r.vendor_region === "eu-north1" && r.contract_type === "ondemand")!
      assert.strictEqual(nebius.price_usd_per_gpu_hour, publishedPrice("nebius", "gpu-h200-sxm_8gpu-128vcpu-1600gb", "eu-north1") / 8)
      assert.strictEqual(nebius.gpu_canonical_name, "h200-sxm")
      assert.sameMembers([...new Set(current.map((r) => r.vendor))], CLOUDS)
      assert.strictEqual(current.length, Demo.demoProducts().length)
    }).pipe(Effect.provide(freshMarket())), 120_000)

  it.effect("extending the market to a later day leaves the earlier rows as a seed of the whole range writes them, across the anchor day", () =>
    Effect.gen(function* () {
      const later = ANCHOR_MS + 2 * DAY_MS
      const extended = yield* Effect.gen(function* () {
        yield* seedAt(ANCHOR_MS - 3 * DAY_MS, 4)
        const before = yield* everything
        yield* seedAt(later, 4)
        const after = yield* everything
        // Every row of the first seed is still there, the current ones closed at most.
        const kept = new Map(after.map((r) => [r.product_key, r]))
        for (const r of before) assert.deepStrictEqual(kept.get(r.product_key), { ...r, valid_to: kept.get(r.product_key)!.valid_to }, r.product_key)
        assert.isAbove(after.length, before.length)
        return after
      }).pipe(Effect.provide(freshMarket()))
      const whole = yield* seedAt(later, 9).pipe(Effect.zipRight(everything), Effect.provide(freshMarket()))
      assert.deepStrictEqual(byKey(extended), byKey(whole))
    }), 240_000)
})
