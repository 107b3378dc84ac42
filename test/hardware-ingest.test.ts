import { assert, describe, it } from "@effect/vitest"
import {
  Auth, type HardwarePriceObservationInput, HardwarePriceIngest, InvalidRecords, isSellerIdentityField, marketLayer, type Principal
} from "@gpu-market/core"
import { HardwarePriceStore } from "@gpu-market/core/storage"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Effect, Layer } from "effect"
import { existsSync, mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { HW, NO_DROPPED_TERMS, storedRows } from "./support/hardware"
import { atNow, http } from "./support/market"

const fresh = () => {
  const filename = join(mkdtempSync(join(tmpdir(), "gpu-market-hw-ingest-")), "market.db")
  return { filename, layer: marketLayer.pipe(Layer.provideMerge(SqliteStorage.layer({ filename }))) }
}

const obs = (over: Partial<HardwarePriceObservationInput> & Record<string, unknown> = {}): HardwarePriceObservationInput => ({
  listing_ref: "feed/listing-1", gpu_canonical_name: "h100-sxm", observed_date: "2026-06-01", price_usd: 25_000,
  condition: "new_sealed", market: "primary", channel: "var_reseller", transaction_level: "bare_module", country: "US",
  country_group: "north_america", ...over
})

const everything = storedRows
const latest = Effect.flatMap(HardwarePriceStore, (s) => s.page({
  scope: { _tag: "latest" }, predicates: [], sort: { by: "observed_date", order: "asc" }, after: undefined, limit: 10_000
}))
const asOf = (date: string) => Effect.flatMap(HardwarePriceStore, (s) => s.page({
  scope: { _tag: "asOf", at: `${date}T23:59:59.999999Z` }, predicates: [], sort: { by: "observed_date", order: "asc" }, after: undefined, limit: 10_000
}))
const days = (rows: ReadonlyArray<{ readonly observed_date: string }>) => rows.map((r) => r.observed_date)

const reader: Principal = {
  id: "reader" as Principal["id"], name: "reader", grants: { gpu_hardware_prices: { history: { _tag: "unrestricted" } } },
  indices: "all", legacy_custom_index: false, procurement: false, rate_limit_per_minute: 100_000
}

describe("hardware price write path", () => {
  it.effect("re-ingesting a listing-day replaces its row, never duplicates it; neighbours stay linked", () =>
    Effect.gen(function* () {
      const ingest = yield* HardwarePriceIngest
      assert.deepStrictEqual(yield* ingest.ingest([obs(), obs({ observed_date: "2026-06-03", price_usd: 24_000 })]),
        { received: 2, inserted: 2, replaced: 0, droppedTerms: NO_DROPPED_TERMS })
      assert.deepStrictEqual(yield* ingest.ingest([obs({ price_usd: 24_500, stock_status: "limited" })]),
        { received: 1, inserted: 0, replaced: 1, droppedTerms: NO_DROPPED_TERMS })
      const rows = yield* everything
      assert.deepStrictEqual(days(rows), ["2026-06-01", "2026-06-03"])
      assert.strictEqual(rows[0]!.price_usd, 24_500)
      assert.strictEqual(rows[0]!.stock_status, "limited")
      assert.strictEqual(rows[0]!.observation_id, `${ingest.listingKey("feed/listing-1")}:2026-06-01`)
      // A day arriving late slots in between: as-of sees it, latest does not.
      yield* ingest.ingest([obs({ observed_date: "2026-06-02", price_usd: 23_000 })])
      assert.deepStrictEqual(days(yield* latest), ["2026-06-03"])
      assert.deepStrictEqual(days(yield* asOf("2026-06-02")), ["2026-06-02"])
      assert.deepStrictEqual(days(yield* asOf("2026-06-01")), ["2026-06-01"])
      // Replacing the latest day keeps it the latest.
      yield* ingest.ingest([obs({ observed_date: "2026-06-03", price_usd: 22_000 })])
      assert.deepStrictEqual((yield* latest).map((r) => r.price_usd), [22_000])
      assert.strictEqual((yield* everything).length, 3)
    }).pipe(Effect.provide(fresh().layer)))

  it.effect("a batch is atomic: any bad record refuses all of it, with its index", () =>
    Effect.gen(function* () {
      const ingest = yield* HardwarePriceIngest
      yield* ingest.ingest([obs()])
      const bad: Array<[unknown, string]> = [
        [obs({ country: "us" }), "country"],
        [obs({ market: "tertiary" as "primary" }), "market"],
        [obs({ observed_date: "2026-02-30" }), "observed_date"],
        [obs({ price_usd: -5 }), "price_usd"],
        [obs({ services_included: "installation" as unknown as Array<string> }), "services_included"],
        [obs({ includes_host_cpus: 1.5 }), "includes_host_cpus"],
        [obs({ condition: "Used" }), "condition"],
        [obs({ colour: "green" }), "colour"],
        [obs({ price_usd_low: 30_000, price_usd_high: 20_000 }), "price_usd_low"],
        [{ ...obs(), listing_ref: undefined }, "listing_ref"],
        ["not a record", "record"]
      ]
      for (const [record, field] of bad) {
        const e = yield* Effect.flip(ingest.ingest([obs({ observed_date: "2026-06-05" }), obs({ listing_ref: "feed/other" }), record]))
        assert.instanceOf(e, InvalidRecords, field)
        assert.deepStrictEqual([...new Set(e.errors.map((i) => i.index))], [2], field)
        assert.include(e.errors[0]!.message, field)
        assert.include(e.detail, "nothing was stored")
        assert.deepStrictEqual(days(yield* everything), ["2026-06-01"], field)
      }
    }).pipe(Effect.provide(fresh().layer)))

  it.effect("observations without a USD price are refused; dates are UTC days; of two records of one listing-day the later stands", () =>
    Effect.gen(function* () {
      const ingest = yield* HardwarePriceIngest
      yield* ingest.ingest([obs({ price_usd: 25_000 })])
      const unpriced = [
        obs({ price_usd: null, price_amount: 23_000, currency: "EUR" }),
        obs({ listing_ref: "feed/no-price", price_usd: undefined })
      ]
      const refused = yield* Effect.flip(ingest.ingest([obs({ observed_date: "2026-06-02", price_usd: 27_000 }), ...unpriced]))
      assert.instanceOf(refused, InvalidRecords)
      assert.deepStrictEqual((refused as InvalidRecords).errors, [
        { index: 1, message: "currency: no EUR→USD rate covers 2026-06-01 (none before it); import one with gpu-market import --type fx" },
        { index: 2, message: "price_usd: no price: give price_usd, or price_amount and currency" }
      ])
      const summary = yield* ingest.ingest([
        obs({ observed_date: "2026-06-02", price_usd: 27_000 }),
        obs({ observed_date: "2026-06-01T23:30:00-02:00", listing_last_updated_date: "2026-05-30T10:00:00Z", price_usd: 26_000 })
      ])
      assert.deepStrictEqual(summary, { received: 2, inserted: 1, replaced: 0, droppedTerms: NO_DROPPED_TERMS })
      const rows = yield* everything
      assert.deepStrictEqual(rows.map((r) => [r.observed_date, r.price_usd, r.listing_last_updated_date]), [
        ["2026-06-01", 25_000, null], ["2026-06-02", 26_000, "2026-05-30"]
      ])
      assert.strictEqual(rows.length, 2)
    }).pipe(Effect.provide(fresh().layer)))

  it("the seller-identity rule: field names holding a seller word are dropped, the observation's own fields never", () => {
    for (const name of ["platform", "seller", "seller_name", "sellerId", "listing_url", "listingURL", "url", "Marketplace",
      "shop_name", "storeName", "merchant", "contact_email", "phone", "seller_phone_number", "website", "source", "source_url",
      "vendor", "company_name", "links", "dealer_address", "listing_id"]) {
      assert.isTrue(isSellerIdentityField(name), name)
    }
    for (const name of ["listing_ref", "source_type", "market", "channel", "counterparty_class", "includes_storage_tb",
      "price_usd", "colour", "storage_note", "notes"]) {
      assert.isFalse(isSellerIdentityField(name), name)
    }
  })

  it.effect("seller identity reaches no response and no byte of the database", () => {
    const { filename, layer } = fresh()
    return Effect.gen(function* () {
      yield* atNow
      const ingest = yield* HardwarePriceIngest
      yield* (yield* Auth).issue(reader, "reader")
      const planted = {
        platform: "zq-plant-platform-ebuy",
        marketplace: "zq-plant-marketplace-gpuhub",
        seller_name: "zq-plant-seller-acme-gpu-traders",
        sellerId: "zq-plant-seller-id-99812",
        seller_email: "zq-plant-sales@acme.example",
        contact_phone: "+1-555-0199-zq-plant",
        listing_url: "https://zq-plant-shop.example/item/123",
        shopName: "zq-plant-shopname",
        store_url: "https://zq-plant-store.example"
      }
      const refs = ["https://www.zq-plant-ref.example/listing/98765", "https://www.zq-plant-ref.example/listing/98766"]
      const summary = yield* ingest.ingest(refs.flatMap((listing_ref, i) => ["2026-06-01", "2026-06-02"].map((observed_date) =>
        obs({ ...planted, listing_ref, observed_date, payment_terms: "Letter of credit", price_usd: 25_000 + i }))))
      assert.deepStrictEqual(summary, { received: 4, inserted: 4, replaced: 0, droppedTerms: NO_DROPPED_TERMS })
      const texts: Array<string> = []
      for (const path of ["latest", "as-of?at=2026-06-01", "history?start=2026-05-01", "metadata",
        `history?start=2026-05-01&listing_key=${ingest.listingKey(refs[0]!)}`]) {
        const r = yield* http(`${HW}/${path}`, { token: "reader" })
        assert.strictEqual(r.status, 200, r.text)
        texts.push(r.text)
      }
      // The search can find what is stored: a field of the observation's own is in both places.
      assert.include(texts[2]!, '"payment_terms":"letter-of-credit"')
      assert.include(texts[2]!, ingest.listingKey(refs[1]!))
      // Read both files (the committed pages may still be in the write-ahead log).
      const bytes = Buffer.concat([filename, `${filename}-wal`].filter(existsSync).map((f) => readFileSync(f)))
      assert.isTrue(bytes.includes("letter-of-credit"))
      for (const text of texts) {
        assert.notInclude(text, "zq-plant")
        // As a field name; "marketplace" is also a channel class the vocabulary lists.
        for (const key of Object.keys(planted)) assert.notInclude(text, `"${key}":`)
      }
      assert.isFalse(bytes.includes("zq-plant"), "a planted seller value is in the database file")
      assert.isFalse(bytes.includes(Buffer.from("zq-plant", "utf16le")))
    }).pipe(Effect.provide(layer))
  })
})
