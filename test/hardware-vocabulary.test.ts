import { assert, describe, it } from "@effect/vitest"
import {
  Auth, CONTACT_PLACEHOLDER, createMarket, type HardwarePrice, HardwarePriceIngest, type HardwarePriceObservationInput,
  HardwareVocabulary, type HardwareVocabularyExtension, type HardwareVocabularyField, hardwareVocabularyDefaults, InvalidRecords,
  type Market, marketLayer, memory, type PrincipalInput, ReferenceDataIngest, scrubContactDetails
} from "@gpu-market/core"
import * as Demo from "@gpu-market/demo"
import { redis } from "@gpu-market/storage-redis"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { sqlite } from "@gpu-market/storage-sqlite"
import { Effect, Layer } from "effect"
import { Redis } from "ioredis"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { tempDb } from "./support/adapters"
import { HW, storedRows } from "./support/hardware"
import { atNow, http } from "./support/market"
import { startRedis, uniquePrefix } from "./support/redis"

/**
 * Hardware classification fields take values of a closed, documented vocabulary that an operator
 * can extend, and free-text fields lose URLs, e-mail addresses, handles and phone numbers before
 * they are stored: a seller's identity or address reaches no row, no `/metadata` and no filter.
 */

const obs = (over: Partial<HardwarePriceObservationInput> & Record<string, unknown> = {}): HardwarePriceObservationInput => ({
  listing_ref: "feed/listing-1", gpu_canonical_name: "h100-sxm", observed_date: "2026-06-01", price_usd: 25_000,
  condition: "new_sealed", market: "primary", channel: "var_reseller", transaction_level: "bare_module", country: "US",
  country_group: "north_america", ...over
})

const reader: PrincipalInput = {
  id: "reader", name: "reader", grants: { gpu_hardware_prices: { history: { _tag: "unrestricted" } } },
  indices: "all", legacy_custom_index: false, procurement: false, rate_limit_per_minute: 100_000
}

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

  it("the README's table of default values is the vocabulary's", () => {
    const readme = readFileSync(join(import.meta.dirname, "..", "README.md"), "utf8").split("\n")
    const start = readme.findIndex((line) => line.startsWith("<!-- vocabulary:"))
    assert.isAbove(start, 0)
    // The rows after the marker, the header and its rule.
    const body = readme.slice(start + 3)
    const rows = body.slice(0, body.findIndex((line) => !line.startsWith("|")))
    const table = Object.fromEntries(rows.map((row) => {
      const [, field, values] = row.split("|").map((cell) => cell.trim())
      return [field!.replaceAll("`", ""), values!.replaceAll("`", "").split(", ")]
    }))
    assert.deepStrictEqual(table, Object.fromEntries(Object.entries(hardwareVocabularyDefaults).map(([field, schema]) => [field, [...schema.literals]])))
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

// ---- free text ----

const DAY_MS = 86_400_000
const day = (ago: number) => new Date(Date.now() - ago * DAY_MS).toISOString().slice(0, 10)

/**
 * Every free-text field: what a source sent, with contact details in each one (the markers may
 * survive nowhere), and what is stored.
 */
const FREE_TEXT: Readonly<Record<string, readonly [sent: unknown, stored: unknown]>> = {
  payment_terms: ["net 30, pay at https://zq-plant-pay.example/checkout?id=7.", "net 30, pay at [removed]."],
  includes_nics: ["8x 400G ConnectX-7 (specs: www.zq-plant-nics.example/cx7)", "8x 400G ConnectX-7 (specs: [removed])"],
  includes_cooling_hw: ["rear-door HX, docs at zq-plant-cooling.example.org/rdhx", "rear-door HX, docs at [removed]"],
  software_entitlements: ["NVAIE 5y; questions to zq-plant-sales@acme.example or +44 20 7946 0958", "NVAIE 5y; questions to [removed] or [removed]"],
  services_included: [["installation", "burn-in via t.me/zqplantbot", "DM @zqplant_gpus"], ["installation", "burn-in via [removed]", "DM [removed]"]]
}
const planted = Object.fromEntries(Object.entries(FREE_TEXT).map(([field, [sent]]) => [field, sent]))
const scrubbed = Object.fromEntries(Object.entries(FREE_TEXT).map(([field, [, stored]]) => [field, stored]))
const STORED_TERMS = "net 30, pay at [removed]."
const MARKERS = ["zq-plant", "zqplant", "7946"]

/**
 * Ingests the planted observations (with an operator-added channel) through the Promise API and
 * reads them back through every hardware read; returns every response's text.
 */
const plantAndRead = async (market: Market): Promise<ReadonlyArray<string>> => {
  await market.tokens.create(reader, "reader")
  const summary = await market.ingest.hardware(["feed/a", "feed/b"].flatMap((listing_ref) => [day(2), day(1)].map((observed_date) =>
    obs({ ...planted, listing_ref, observed_date, channel: "lease_return" }))))
  assert.strictEqual(summary.inserted, 4)
  const token = { token: "reader" }
  const pages = [
    await market.hardware.prices.latest({}, token),
    await market.hardware.prices.latest({ channel: ["lease_return"] }, token),
    await market.hardware.prices.history({ start: day(30) }, token),
    await market.hardware.prices.asOf({ at: day(2) }, token)
  ]
  const metadata = await market.hardware.prices.metadata({}, token)
  assert.strictEqual(pages[2]!.data.length, 4)
  for (const page of pages) {
    assert.isAbove(page.data.length, 0)
    for (const row of page.data) {
      assert.deepStrictEqual(Object.fromEntries(Object.keys(FREE_TEXT).map((field) => [field, row[field as keyof HardwarePrice]])), scrubbed)
    }
  }
  assert.deepStrictEqual(metadata.data.vocabulary.channel, [...defaultsOf("channel"), "lease_return"])
  assert.deepStrictEqual(metadata.data.filters.channel, ["lease_return"])
  const texts = [...pages, metadata].map((r) => JSON.stringify(r))
  for (const text of texts) for (const marker of MARKERS) assert.notInclude(text, marker)
  return texts
}

describe("free text is scrubbed of contact details before storage", () => {
  it("what is removed and what is kept", () => {
    assert.strictEqual(CONTACT_PLACEHOLDER, "[removed]")
    for (const [text, expected] of [
      ["see https://acme.example/x, net 30", "see [removed], net 30"],
      ["HTTP://ACME.EXAMPLE", "[removed]"],
      ["mail sales@acme-gpus.co.uk today", "mail [removed] today"],
      ["www.acme.shop", "[removed]"],
      ["seller.example.com/item/1 or acme.io:8080", "[removed] or [removed]"],
      ["t.me/acme and wa.me/15550100", "[removed] and [removed]"],
      ["ask @acme_gpus", "ask [removed]"],
      ["call +1 (555) 010-0199", "call [removed]"],
      // Hardware text stays as it is.
      ["8x 400G ConnectX-7, 2x 200G BlueField-3", "8x 400G ConnectX-7, 2x 200G BlueField-3"],
      ["e.g. rails; 2.5in bays; v1.2 firmware; 50% @ signing; +2 years", "e.g. rails; 2.5in bays; v1.2 firmware; 50% @ signing; +2 years"]
    ] as const) assert.strictEqual(scrubContactDetails(text), expected, text)
    // A placeholder longer than what it replaced never makes the text longer than a row holds.
    assert.strictEqual(scrubContactDetails("@ab ".repeat(50)).length, 200)
  })

  it("on SQLite: in no response (latest, filtered, history, as-of, metadata) and in no byte of the database", async () => {
    const filename = tempDb("hw-scrub")
    const market = await createMarket({ storage: sqlite(filename), hardwareVocabulary: { channel: ["lease_return"] } })
    try {
      await plantAndRead(market)
    } finally {
      await market.close()
    }
    const bytes = Buffer.concat([filename, `${filename}-wal`].filter(existsSync).map((f) => readFileSync(f)))
    // The search finds what is stored: the scrubbed text is there.
    assert.isTrue(bytes.includes(STORED_TERMS))
    for (const marker of MARKERS) {
      assert.isFalse(bytes.includes(marker), marker)
      assert.isFalse(bytes.includes(Buffer.from(marker, "utf16le")), marker)
    }
  }, 60_000)

  it("on Redis: in no response and in no stored key", async () => {
    const server = await startRedis()
    const prefix = uniquePrefix("hw-scrub")
    try {
      const market = await createMarket({ storage: redis(server.url, prefix), hardwareVocabulary: { channel: ["lease_return"] } })
      try {
        await plantAndRead(market)
      } finally {
        await market.close()
      }
      // Every key of the market, serialised without compression, so a stored string is in the bytes as written.
      const client = new Redis(server.url)
      try {
        await client.config("SET", "rdbcompression", "no")
        const keys = await client.keys(`*${prefix}*`)
        assert.isAbove(keys.length, 0)
        const dumps = await Promise.all(keys.map((k) => client.dumpBuffer(k)))
        const bytes = Buffer.concat(dumps.filter((d): d is Buffer => d !== null))
        assert.isTrue(bytes.includes(STORED_TERMS))
        for (const marker of MARKERS) assert.isFalse(bytes.includes(marker), marker)
      } finally {
        await client.quit()
      }
    } finally {
      await server.stop()
    }
  }, 60_000)
})
