import { assert, describe, it } from "@effect/vitest"
import {
  Auth, createMarket, type HardwarePrice, HardwarePriceIngest, hardwareTermDefaults,
  HardwareVocabulary, type HardwareVocabularyExtension, type HardwareVocabularyField, hardwareVocabularyDefaults, InvalidRecords,
  marketLayer, memory, ReferenceDataIngest
} from "@gpu-market/core"
import * as Demo from "@gpu-market/demo"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Effect, Layer } from "effect"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { tempDb } from "./support/adapters"
import { HW, NO_DROPPED_TERMS, storedRows, hardwareReader, listingObservation } from "./support/hardware"
import { atNow, http } from "./support/market"

/**
 * Hardware classification fields take values of a closed, documented vocabulary that an operator
 * can extend: a seller's identity or address reaches no row, no `/metadata` and no filter. The
 * descriptive fields' terms are held in `hardware-terms.test.ts`.
 */

const obs = listingObservation

const reader = hardwareReader

const defaultsOf = (field: HardwareVocabularyField): ReadonlyArray<string> => hardwareVocabularyDefaults[field].literals
const refusal = (field: HardwareVocabularyField, accepted: ReadonlyArray<string>, ...values: ReadonlyArray<string>) =>
  `${values.map((v) => JSON.stringify(v)).join(", ")} ${values.length === 1 ? "is" : "are"} not in the hardware vocabulary of ${field}; ` +
  `accepted: ${accepted.join(", ")} (data.vocabulary of GET /v2/gpu/hardware/prices/metadata)`

const sqliteMarket = (vocabulary?: HardwareVocabularyExtension) => {
  const filename = tempDb("hw-vocabulary")
  const services = vocabulary === undefined ? marketLayer : marketLayer.pipe(Layer.provide(HardwareVocabulary.layer(vocabulary)))
  return services.pipe(Layer.provideMerge(SqliteStorage.layer({ filename })))
}

describe("hardware classification vocabulary", () => {
  it.effect("a value outside the vocabulary refuses the batch, naming the record, the field, the value and the accepted values", () =>
    Effect.gen(function* () {
      const ingest = yield* HardwarePriceIngest
      yield* ingest.ingest([obs()])
      // A URL, a company or platform name, a near miss, the wrong case, a retired spelling.
      const bad: ReadonlyArray<readonly [HardwareVocabularyField, string]> = [
        ["channel", "https://acme-gpus.example/shop"], ["counterparty_class", "Acme GPU Traders Ltd"], ["source_type", "ebay"],
        ["confidence", "very_high"], ["price_type", "Ask"], ["export_control_regime", "ECCN 3A090"], ["market", "tertiary"],
        ["module_packaging", "sxm"], ["country_group", "emea"], ["stock_status", "in-stock"], ["condition", "mint"],
        ["transaction_level", "pallet"], ["price_basis", "each"], ["unit_age_basis", "guess"]
      ]
      for (const [field, value] of bad) {
        const e = yield* Effect.flip(ingest.ingest([obs({ observed_date: "2026-06-05" }), obs({ listing_ref: "feed/other" }), obs({ [field]: value })]))
        assert.instanceOf(e, InvalidRecords, field)
        assert.deepStrictEqual(e.errors, [{ index: 2, message: `${field}: ${refusal(field, defaultsOf(field), value)}` }])
        assert.include(e.detail, "nothing was stored")
      }
      // Every refusal of a record is reported, with a malformed field beside it.
      const e = yield* Effect.flip(ingest.ingest([obs({ channel: "Dealer", confidence: "sure", price_usd: -1 })]))
      assert.instanceOf(e, InvalidRecords)
      assert.deepStrictEqual([...new Set(e.errors.map((i) => i.message.split(":")[0]))], ["channel", "confidence", "price_usd"])
      assert.deepStrictEqual((yield* storedRows).map((r) => r.observed_date), ["2026-06-01"])
    }).pipe(Effect.provide(sqliteMarket())))

  it.effect("every default value is accepted, and the demo market uses only default values", () =>
    Effect.gen(function* () {
      const ingest = yield* HardwarePriceIngest
      const fields = Object.keys(hardwareVocabularyDefaults) as Array<HardwareVocabularyField>
      const records = fields.flatMap((field) => defaultsOf(field).map((value, i) =>
        obs({ listing_ref: `feed/${field}/${value}`, observed_date: `2026-06-${String(1 + (i % 28)).padStart(2, "0")}`, [field]: value })))
      assert.strictEqual((yield* ingest.ingest(records)).inserted, records.length)
      // A week of the demo market, every listing of it, through the same check.
      const week = Array.from({ length: 7 }, (_, d) => Demo.demoHardwareObservations(20_600 + d)).flat()
      assert.isAbove(week.length, 1_000)
      // Listings priced in other currencies convert at the week's rates, as the demo seeds them.
      yield* (yield* ReferenceDataIngest).fxRates(Demo.demoFxRates(20_600))
      const summary = yield* ingest.ingest(week)
      assert.strictEqual(summary.inserted, week.length)
      // Its descriptive text is all terms of the vocabulary.
      assert.deepStrictEqual(summary.droppedTerms, NO_DROPPED_TERMS)
    }).pipe(Effect.provide(sqliteMarket())))

  it.effect("an operator-added value is accepted, filterable and listed by /metadata; values not added still refuse", () =>
    Effect.gen(function* () {
      yield* atNow
      yield* (yield* Auth).issue(reader, "reader")
      const ingest = yield* HardwarePriceIngest
      yield* ingest.ingest([
        obs({ channel: "lease_return", counterparty_class: "university" }),
        obs({ listing_ref: "feed/listing-2", channel: "broker" })
      ])
      const only = yield* http(`${HW}/latest?channel=lease_return`, { token: "reader" })
      assert.strictEqual(only.status, 200, only.text)
      assert.deepStrictEqual(only.body.data.map((r: HardwarePrice) => [r.channel, r.counterparty_class]), [["lease_return", "university"]])
      const metadata = yield* http(`${HW}/metadata`, { token: "reader" })
      assert.deepStrictEqual(metadata.body.data.vocabulary.channel, [...defaultsOf("channel"), "lease_return"])
      assert.deepStrictEqual(metadata.body.data.vocabulary.counterparty_class, [...defaultsOf("counterparty_class"), "university"])
      assert.deepStrictEqual(metadata.body.data.vocabulary.condition, defaultsOf("condition"))
      assert.deepStrictEqual(metadata.body.data.filters.channel, ["broker", "lease_return"])
      // A filter value outside the vocabulary can never match: a 422 naming the accepted values.
      const typo = yield* http(`${HW}/latest?channel=lease-return,broker,auctoin`, { token: "reader" })
      assert.strictEqual(typo.status, 422, typo.text)
      assert.deepStrictEqual(typo.body.errors, [{
        parameter: "channel", message: refusal("channel", [...defaultsOf("channel"), "lease_return"], "lease-return", "auctoin")
      }])
      const e = yield* Effect.flip(ingest.ingest([obs({ channel: "lease-return" })]))
      assert.instanceOf(e, InvalidRecords)
      assert.deepStrictEqual(e.errors, [{ index: 0, message: `channel: ${refusal("channel", [...defaultsOf("channel"), "lease_return"], "lease-return")}` }])
    }).pipe(Effect.provide(sqliteMarket({ channel: ["lease_return"], counterparty_class: ["university"] }))))

  it("the HTTP API reference's tables of default values and default terms are the vocabulary's", () => {
    const readme = readFileSync(join(import.meta.dirname, "..", "docs/reference/http-api.md"), "utf8").split("\n")
    /** The table after the comment line starting with `marker`, as field → values. */
    const table = (marker: string) => {
      const start = readme.findIndex((line) => line.startsWith(marker))
      assert.isAbove(start, 0, marker)
      // The rows after the marker, the header and its rule.
      const body = readme.slice(start + 3)
      const rows = body.slice(0, body.findIndex((line) => !line.startsWith("|")))
      return Object.fromEntries(rows.map((row) => {
        const [, field, values] = row.split("|").map((cell) => cell.trim())
        return [field!.replaceAll("`", ""), values!.replaceAll("`", "").split(", ")]
      }))
    }
    const literals = (defaults: Readonly<Record<string, { readonly literals: ReadonlyArray<string> }>>) =>
      Object.fromEntries(Object.entries(defaults).map(([field, schema]) => [field, [...schema.literals]]))
    assert.deepStrictEqual(table("<!-- vocabulary:"), literals(hardwareVocabularyDefaults))
    assert.deepStrictEqual(table("<!-- terms:"), literals(hardwareTermDefaults))
  })

  it("an extension that is not lower-case slugs of known fields never opens a market", async () => {
    for (const extension of [{ channel: ["Lease Return"] }, { market: ["tertiary"] }, { colour: ["red"] }, { channel: "auction" }]) {
      const opened = await createMarket({ storage: memory(), hardwareVocabulary: extension as HardwareVocabularyExtension }).then(
        (market) => market.close().then(() => "opened"),
        (e: unknown) => String(e)
      )
      assert.include(opened, Object.keys(extension)[0]!, JSON.stringify(extension))
      assert.notStrictEqual(opened, "opened")
    }
    const built = await Effect.runPromise(Effect.flip(Effect.scoped(Layer.build(HardwareVocabulary.layer({ stock_status: ["Allocated"] })))))
    assert.include(String(built), "Allocated")
  })
})
