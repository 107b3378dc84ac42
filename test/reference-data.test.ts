import { assert, describe, it, layer } from "@effect/vitest"
import {
  createMarket, type HardwarePriceObservationInput, HardwarePriceIngest, IngestBounds, InvalidRecords, LlmTokenPriceIngest,
  marketLayer, MarketProblemError, type MarketServices, memory, ReferenceDataIngest, type RentalPrice, type RentalPriceObservationInput, RentalPriceIngest,
  type Storage, TransactionIngest
} from "@gpu-market/core"
import { HardwarePriceStore, RentalPriceStore } from "@gpu-market/core/storage"
import * as RedisStorage from "@gpu-market/storage-redis"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Effect, Exit, Layer, ParseResult } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NO_DROPPED_TERMS } from "./support/hardware"
import { TestRedis, testRedisLayer, uniquePrefix } from "./support/redis"

/**
 * Reference data the write paths normalise with (FX rates, the operator's GPU catalog entries),
 * the plausibility bounds, and duplicates: each as a user of the write paths meets them.
 */

const sqliteFile = () => join(mkdtempSync(join(tmpdir(), "gpu-market-reference-")), "market.db")
const onSqlite = (filename = sqliteFile()) => marketLayer.pipe(Layer.provideMerge(SqliteStorage.layer({ filename })))

const published = (over: Partial<RentalPriceObservationInput> = {}): RentalPriceObservationInput => ({
  vendor: "acme", vendor_gpu_name: "H100 SXM5 80GB", vendor_sku: "8x-h100", region: "eu-west", gpu_count: 8,
  contract_type: "ondemand", raw_price: 20, raw_price_unit: "usd_per_instance_hour", extracted_at: "2026-05-05T12:00:00Z", ...over
})

const rentalRows = Effect.flatMap(RentalPriceStore, (s) => s.page({
  scope: { _tag: "window", start: "2000-01-01T00:00:00.000000Z", end: "2100-01-01T00:00:00.000000Z" },
  predicates: [{ op: "in", field: "vendor", values: ["acme"] }], sort: { by: "valid_from", order: "asc" }, after: undefined, limit: 1_000
}))
const priceOf = (rows: ReadonlyArray<RentalPrice>, sku: string) => rows.find((r) => r.vendor_sku === sku)?.price_usd_per_gpu_hour

/** The reasons a write was refused with, as `index: message`. */
const reasons = <A, R>(write: Effect.Effect<A, unknown, R>) =>
  Effect.map(Effect.exit(write), (exit) => {
    assert.isTrue(Exit.isFailure(exit), "the batch is refused")
    const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
    assert.instanceOf(error, InvalidRecords)
    return (error as InvalidRecords).errors.map((e) => `${e.index}: ${e.message}`)
  })

const EUR_RATES = [
  { currency: "EUR", date: "2026-05-01", usd_per_unit: 1.1 },
  { currency: "EUR", date: "2026-05-04", usd_per_unit: 1.2 },
  { currency: "GBP", date: "2026-05-04", usd_per_unit: 1.25 }
]

describe("FX rates", () => {
  it.effect("a rate converts prices of its date and the 7 days after, until the next rate; past that the record is refused", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* (yield* ReferenceDataIngest).fxRates(EUR_RATES), { received: 3, inserted: 3, replaced: 0 })
      const ingest = yield* RentalPriceIngest
      yield* ingest.ingest([
        published({ vendor_sku: "a", raw_price_unit: "eur_per_gpu_hour", raw_price: 2, extracted_at: "2026-05-01T00:00:00Z" }),
        published({ vendor_sku: "b", raw_price_unit: "eur_per_gpu_hour", raw_price: 2, extracted_at: "2026-05-03T23:59:59Z" }),
        published({ vendor_sku: "c", raw_price_unit: "eur_per_gpu_hour", raw_price: 2, extracted_at: "2026-05-04T00:00:00Z" }),
        published({ vendor_sku: "d", raw_price_unit: "eur_per_instance_month", raw_price: 14_600, extracted_at: "2026-05-11T23:00:00Z" }),
        published({ vendor_sku: "e", raw_price_unit: "gbp_per_instance_day", raw_price: 480, currency: "GBP" })
      ])
      const rows = yield* rentalRows
      assert.deepStrictEqual(["a", "b", "c", "d", "e"].map((sku) => priceOf(rows, sku)), [2.2, 2.2, 2.4, 3, 3.125])
      assert.deepStrictEqual(yield* reasons(ingest.ingest([
        published({ vendor_sku: "f", raw_price_unit: "eur_per_gpu_hour", raw_price: 2, extracted_at: "2026-05-12T00:00:00Z" }),
        published({ vendor_sku: "g", raw_price_unit: "eur_per_gpu_hour", raw_price: 2, extracted_at: "2026-04-30T23:59:59Z" }),
        published({ vendor_sku: "h", raw_price_unit: "jpy_per_gpu_hour", raw_price: 300 })
      ])), [
        "0: raw_price_unit: no EUR→USD rate covers 2026-05-12 (latest before it: 2026-05-04); import one with gpu-market import --type fx",
        "1: raw_price_unit: no EUR→USD rate covers 2026-04-30 (none before it); import one with gpu-market import --type fx",
        "2: raw_price_unit: no JPY→USD rate covers 2026-05-05 (none before it); import one with gpu-market import --type fx"
      ])
      // A rate imported later fills the gap; a rate of a stored date replaces it.
      assert.deepStrictEqual(yield* (yield* ReferenceDataIngest).fxRates([
        { currency: "EUR", date: "2026-05-12", usd_per_unit: 1.15 }, { currency: "EUR", date: "2026-05-01", usd_per_unit: 1.05 }
      ]), { received: 2, inserted: 1, replaced: 1 })
      yield* ingest.ingest([
        published({ vendor_sku: "f", raw_price_unit: "eur_per_gpu_hour", raw_price: 2, extracted_at: "2026-05-12T00:00:00Z" }),
        published({ vendor_sku: "g", raw_price_unit: "eur_per_gpu_hour", raw_price: 2, extracted_at: "2026-05-02T00:00:00Z" })
      ])
      const after = yield* rentalRows
      assert.deepStrictEqual([priceOf(after, "f"), priceOf(after, "g")], [2.3, 2.1])
    }).pipe(Effect.provide(onSqlite())))

  it.effect("a rate record is checked: an ISO 4217 code other than USD, a calendar date, a positive rate", () =>
    Effect.gen(function* () {
      const refused = yield* reasons((yield* ReferenceDataIngest).fxRates([
        { currency: "EUR", date: "2026-05-01", usd_per_unit: 1.1 },
        { currency: "USD", date: "2026-05-01", usd_per_unit: 1 },
        { currency: "eur", date: "2026-05-01", usd_per_unit: 1.1 },
        { currency: "EUR", date: "2026-02-30", usd_per_unit: 1.1 },
        { currency: "EUR", date: "2026-05-02", usd_per_unit: 0 }
      ]))
      assert.deepStrictEqual(refused.map((r) => r.slice(0, 3)), ["1: ", "2: ", "3: ", "4: "])
      assert.include(refused[0], "USD needs no rate")
    }).pipe(Effect.provide(onSqlite())))
})

describe("hardware prices in other currencies", () => {
  const listing = (over: Partial<HardwarePriceObservationInput>): HardwarePriceObservationInput => ({
    listing_ref: "feed/1", gpu_canonical_name: "h100-sxm", observed_date: "2026-05-05", ...over
  })
  const hardwareRows = Effect.flatMap(HardwarePriceStore, (s) => s.page({
    scope: { _tag: "window", start: "2000-01-01T00:00:00.000000Z", end: "2100-01-01T00:00:00.000000Z" },
    predicates: [], sort: { by: "observed_date", order: "asc" }, after: undefined, limit: 100
  }))

  it.effect("price_usd is computed from price_amount at the rate of the observed date; a given one must agree, and stands", () =>
    Effect.gen(function* () {
      yield* (yield* ReferenceDataIngest).fxRates(EUR_RATES)
      const ingest = yield* HardwarePriceIngest
      assert.deepStrictEqual(yield* ingest.ingest([
        listing({ price_amount: 20_000, currency: "EUR" }),
        listing({ listing_ref: "feed/2", price_amount: 20_000, currency: "EUR", price_usd: 24_100 }),
        listing({ listing_ref: "feed/3", price_amount: 25_000.5, currency: "USD", price_usd: 25_000.5 }),
        listing({ listing_ref: "feed/4", price_usd: 31_000 })
      ]), { received: 4, inserted: 4, replaced: 0, droppedTerms: NO_DROPPED_TERMS })
      assert.sameDeepMembers((yield* hardwareRows).map((r) => [r.price_amount, r.currency, r.price_usd]), [
        [20_000, "EUR", 24_000], [20_000, "EUR", 24_100], [25_000.5, "USD", 25_000.5], [null, null, 31_000]
      ])
      assert.deepStrictEqual(yield* reasons(ingest.ingest([
        listing({ price_amount: 20_000, currency: "EUR", price_usd: 24_200 }),
        listing({ price_amount: 25_000, currency: "USD", price_usd: 25_000.01 }),
        listing({ price_amount: 25_000 }),
        listing({}),
        listing({ price_amount: 20_000, currency: "EUR", observed_date: "2026-05-12" }),
        listing({ price_usd: 99_999_999 })
      ])), [
        "0: price_usd: 24200 disagrees with 24000 computed from price_amount 20000 EUR at 1.2 USD per unit",
        "1: price_usd: 25000.01 disagrees with 25000 computed from price_amount 25000 USD",
        "2: currency: price_amount needs its currency",
        "3: price_usd: no price: give price_usd, or price_amount and currency",
        "4: currency: no EUR→USD rate covers 2026-05-12 (latest before it: 2026-05-04); import one with gpu-market import --type fx",
        "5: price_usd: 99999999 is outside the plausible range [10, 10000000] (IngestBounds)"
      ])
    }).pipe(Effect.provide(onSqlite())))
})

const ZETA = { gpu_canonical_name: "zeta-9", gpu_manufacturer: "zeta", gpu_model: "Z9", gpu_memory_gb: 64, spellings: ["Zeta 9", "Z9 64GB"] }

/** Imports ZETA through one connection, then resolves its spelling through another. */
const operatorGpuAcrossConnections = <E>(first: Layer.Layer<MarketServices | Storage, E>, second: Layer.Layer<MarketServices | Storage, E>) =>
  Effect.gen(function* () {
    const unknown = yield* reasons(Effect.flatMap(RentalPriceIngest, (i) => i.ingest([published({ vendor_gpu_name: "Zeta 9" })])).pipe(Effect.provide(second)))
    assert.deepStrictEqual(unknown, ["0: vendor_gpu_name: unknown GPU spelling \"Zeta 9\": add it to the GPU catalog (gpu-market import --type gpus)"])
    const imported = yield* Effect.flatMap(ReferenceDataIngest, (i) => i.gpus([ZETA])).pipe(Effect.provide(first))
    assert.deepStrictEqual(imported, { received: 1, inserted: 1, replaced: 0 })
    const row = yield* Effect.gen(function* () {
      yield* (yield* RentalPriceIngest).ingest([published({ vendor_gpu_name: "Z9 64GB" })])
      return (yield* rentalRows)[0]!
    }).pipe(Effect.provide(second))
    assert.deepStrictEqual([row.gpu_canonical_name, row.gpu_manufacturer, row.gpu_model, row.gpu_memory_gb], ["zeta-9", "zeta", "Z9", 64])
  })

describe("the operator's GPU catalog", () => {
  it.effect("SQLite: an entry imported through one connection resolves a spelling written through another", () => {
    const filename = sqliteFile()
    // Both connections open before the import, as two running processes would.
    return Effect.scoped(Effect.gen(function* () {
      const first = yield* Layer.memoize(onSqlite(filename))
      const second = yield* Layer.memoize(onSqlite(filename))
      yield* operatorGpuAcrossConnections(first, second)
    }))
  })

  layer(testRedisLayer(), { timeout: "60 seconds" })((it) => {
    it.effect("Redis: an entry imported through one client resolves a spelling written through another", () =>
      Effect.scoped(Effect.gen(function* () {
        const server = yield* TestRedis
        const prefix = uniquePrefix("reference")
        const client = () => Layer.memoize(marketLayer.pipe(Layer.provideMerge(RedisStorage.layer({ url: server.url, prefix }))))
        const first = yield* client()
        const second = yield* client()
        yield* operatorGpuAcrossConnections(first, second)
      })))
  })

  it.effect("an entry with a shipped slug replaces it; a record is checked whole", () =>
    Effect.gen(function* () {
      const gpus = (yield* ReferenceDataIngest).gpus
      yield* gpus([{ gpu_canonical_name: "l40s", gpu_manufacturer: "nvidia", gpu_model: "L40S", gpu_memory_gb: 48, spellings: ["Lovelace 48"] }])
      const ingest = yield* RentalPriceIngest
      yield* ingest.ingest([published({ vendor_gpu_name: "Lovelace 48" })])
      assert.strictEqual((yield* rentalRows)[0]!.gpu_canonical_name, "l40s")
      const refused = yield* reasons(gpus([
        { gpu_canonical_name: "Zeta 9", gpu_manufacturer: "zeta", gpu_model: "Z9", gpu_memory_gb: 64, spellings: ["Zeta 9"] },
        { gpu_canonical_name: "zeta-9", gpu_manufacturer: "zeta", gpu_model: "Z9", gpu_memory_gb: 64, spellings: [] }
      ]))
      assert.deepStrictEqual(refused.map((r) => r.split(":")[0]), ["0", "1"])
    }).pipe(Effect.provide(onSqlite())))
})

describe("plausibility bounds", () => {
  it.effect("a published sentinel (99999999 for no spot price) is refused with the bound; bounds are set per data type", () =>
    Effect.gen(function* () {
      const ingest = yield* RentalPriceIngest
      assert.deepStrictEqual(yield* reasons(ingest.ingest([
        published({ contract_type: "spot", raw_price_unit: "usd_per_gpu_hour", raw_price: 99999999, gpu_count: 1 }),
        published({ vendor_sku: "cheap", raw_price_unit: "usd_per_gpu_hour", raw_price: 0.001 })
      ])), [
        "0: price_usd_per_gpu_hour: 99999999 is outside the plausible range [0.01, 100] (IngestBounds)",
        "1: price_usd_per_gpu_hour: 0.001 is outside the plausible range [0.01, 100] (IngestBounds)"
      ])
      const llm = yield* reasons((yield* LlmTokenPriceIngest).ingest([{
        source: "s", model: "m", model_name: "M", serving_provider: "p", price_type: "input", price_usd_per_1m_tokens: 20_000,
        raw_price: 20_000, raw_price_unit: "usd_per_1m_tokens", currency: "USD", extracted_at: "2026-05-05T00:00:00Z"
      }]))
      assert.deepStrictEqual(llm, ["0: price_usd_per_1m_tokens: 20000 is outside the plausible range [0, 10000] (IngestBounds)"])
      const deals = yield* reasons((yield* TransactionIngest).record([{
        deal_id: "d1", gpu_canonical_name: "h100-sxm", gpu_model: "H100", region_group: "europe", contract_type: "reserved",
        tenor_days: 30, gpu_count: 8, gpu_hours: 1000, price_usd_per_gpu_hour: 2, list_price_usd_per_gpu_hour: 250, settlement_date: "2026-05-01"
      }]))
      assert.deepStrictEqual(deals, ["0: list_price_usd_per_gpu_hour: 250 is outside the plausible range [0.01, 100] (IngestBounds)"])
    }).pipe(Effect.provide(onSqlite())))

  it.effect("IngestBounds.layer sets other bounds for a market's write paths", () =>
    Effect.gen(function* () {
      const ingest = yield* RentalPriceIngest
      yield* ingest.ingest([published({ raw_price_unit: "usd_per_gpu_hour", raw_price: 150 })])
      assert.strictEqual((yield* rentalRows)[0]!.price_usd_per_gpu_hour, 150)
      assert.deepStrictEqual(yield* reasons(ingest.ingest([published({ vendor_sku: "x", raw_price_unit: "usd_per_gpu_hour", raw_price: 0.5 })])), [
        "0: price_usd_per_gpu_hour: 0.5 is outside the plausible range [1, 200] (IngestBounds)"
      ])
    }).pipe(Effect.provide(marketLayer.pipe(
      Layer.provide(IngestBounds.layer({ rental: { min: 1, max: 200 } })),
      Layer.provideMerge(SqliteStorage.layer({ filename: sqliteFile() }))
    ))))

  it("createMarket({ bounds }) sets them for the Promise API, and refuses a bound that is not 0 ≤ min ≤ max", async () => {
    const market = await createMarket({ storage: memory(), bounds: { rental: { min: 0.5, max: 5 } } })
    try {
      const refused = await market.ingest.rental([published({ raw_price_unit: "usd_per_gpu_hour", raw_price: 6 })]).catch((e: unknown) => e)
      assert.instanceOf(refused, MarketProblemError)
      assert.strictEqual((refused as MarketProblemError).status, 422)
      assert.include((refused as MarketProblemError).problem.detail, "6 is outside the plausible range [0.5, 5]")
      assert.strictEqual((await market.ingest.rental([published({ raw_price_unit: "usd_per_gpu_hour", raw_price: 4 })])).opened, 1)
    } finally {
      await market.close()
    }
    const bad = await createMarket({ storage: memory(), bounds: { hardware: { min: 10, max: 1 } } }).catch((e: unknown) => e)
    assert.isTrue(ParseResult.isParseError(bad), String(bad))
    assert.include(String(bad), "bounds")
    assert.include(String(bad), "hardware")
    assert.include(String(bad), "expected min ≤ max, got [10, 1]")
  })
})

describe("duplicates", () => {
  it.effect("in one batch: a repeat of a product's price at one instant counts as a duplicate; two prices refuse both, naming them", () =>
    Effect.gen(function* () {
      const ingest = yield* RentalPriceIngest
      assert.deepStrictEqual(yield* ingest.ingest([published(), published({ vcpu: 96 }), published({ vendor_sku: "other" }), published()]), {
        received: 4, opened: 2, closed: 0, unchanged: 0, duplicates: 2
      })
      assert.strictEqual((yield* rentalRows).length, 2)
      assert.deepStrictEqual(yield* reasons(ingest.ingest([
        published({ vendor_sku: "x" }), published({ vendor_sku: "y" }), published({ vendor_sku: "z", raw_price: 24 }),
        published({ vendor_sku: "y", raw_price: 24 }), published({ vendor_sku: "z", raw_price: 28 })
      ])), [
        "1: two prices for one product at 2026-05-05T12:00:00.000000Z: records 1 and 3",
        "2: two prices for one product at 2026-05-05T12:00:00.000000Z: records 2 and 4",
        "3: two prices for one product at 2026-05-05T12:00:00.000000Z: records 1 and 3",
        "4: two prices for one product at 2026-05-05T12:00:00.000000Z: records 2 and 4"
      ])
      assert.strictEqual((yield* rentalRows).length, 2)
    }).pipe(Effect.provide(onSqlite())))

  it.effect("against what is stored: the same price at a stored version's instant is a duplicate; another price is refused, naming the stored one", () =>
    Effect.gen(function* () {
      const ingest = yield* RentalPriceIngest
      yield* ingest.ingest([published(), published({ raw_price: 24, extracted_at: "2026-05-06T12:00:00Z" })])
      const stored = yield* rentalRows
      assert.deepStrictEqual(yield* ingest.ingest([published(), published({ raw_price: 24, extracted_at: "2026-05-06T12:00:00Z" })]), {
        received: 2, opened: 0, closed: 0, unchanged: 0, duplicates: 2
      })
      assert.deepStrictEqual(yield* reasons(ingest.ingest([published({ raw_price: 22 })])), [
        "0: another price for this product at 2026-05-05T12:00:00.000000Z is already stored: 2.5 USD per GPU-hour (raw_price 20 usd_per_instance_hour)"
      ])
      assert.deepStrictEqual(yield* reasons(ingest.ingest([published({ raw_price: 26, extracted_at: "2026-05-06T12:00:00Z" })])), [
        "0: another price for this product at 2026-05-06T12:00:00.000000Z is already stored: 3 USD per GPU-hour (raw_price 24 usd_per_instance_hour)"
      ])
      assert.deepStrictEqual(yield* rentalRows, stored)
    }).pipe(Effect.provide(onSqlite())))
})
