import { assert, describe, layer } from "@effect/vitest"
import { HardwarePriceIngest, HardwarePriceMetadata, hardwareTermDefaults, hardwareVocabularyDefaults } from "@gpu-market/core"
import { Effect, Schema } from "effect"
import {
  fixtureRows, hardwareObservation, HW, HW_CHANNELS, HW_CONDITIONS, HW_COUNTRIES, HW_GPUS, HW_LAST_DAY, HW_LEVELS, HW_STOCK,
  hardwareLayer, hwDate, listingRef
} from "./support/hardware"
import { atNow, http } from "./support/market"

const validMetadata = Schema.decodeUnknownSync(HardwarePriceMetadata, { onExcessProperty: "error" })
const ENDPOINTS = ["latest", "as-of?at=2026-04-20", "history?start=2026-06-01"]
const withQuery = (endpoint: string, query: string) => `${HW}/${endpoint}${endpoint.includes("?") ? "&" : "?"}${query}&page_size=1000`

const list = (n: number, item: (i: number) => string) => Array.from({ length: n }, (_, i) => item(i)).join(",")

describe("hardware prices filters and metadata", () => {
  layer(hardwareLayer("hw-filters"), { timeout: "180 seconds" })((it) => {
    it.effect("every filter alone keeps exactly the rows it names, on every endpoint", () =>
      Effect.gen(function* () {
        yield* atNow
        const ingest = yield* HardwarePriceIngest
        const listing3 = ingest.listingKey(listingRef(3))
        const cases: Array<[string, (row: any) => boolean]> = [
          ["gpu_canonical_name=h100-sxm,l40s", (r) => ["h100-sxm", "l40s"].includes(r.gpu_canonical_name)],
          [`listing_key=${listing3}`, (r) => r.listing_key === listing3],
          ["condition=used,refurbished", (r) => ["used", "refurbished"].includes(r.condition)],
          ["market=secondary", (r) => r.market === "secondary"],
          ["channel=broker,retailer", (r) => ["broker", "retailer"].includes(r.channel)],
          ["transaction_level=rack", (r) => r.transaction_level === "rack"],
          ["stock_status=in_stock", (r) => r.stock_status === "in_stock"],
          ["country=US,JP", (r) => ["US", "JP"].includes(r.country)],
          ["country=US,ZZ", (r) => r.country === "US"],
          ["country_group=europe", (r) => r.country_group === "europe"],
          ["min_price_usd=100000", (r) => r.price_usd >= 100_000],
          ["max_price_usd=15000", (r) => r.price_usd <= 15_000],
          ["min_price_usd=25250&max_price_usd=25500.0", (r) => r.price_usd >= 25_250 && r.price_usd <= 25_500],
          ["country=DE&condition=used", (r) => r.country === "DE" && r.condition === "used"]
        ]
        for (const endpoint of ENDPOINTS) {
          const all = yield* http(withQuery(endpoint, "sort_by=price_usd"), { token: "hw-all" })
          assert.strictEqual(all.status, 200, all.text)
          assert.isFalse(all.body.meta.has_more)
          for (const [query, keep] of cases) {
            const r = yield* http(withQuery(endpoint, `${query}&sort_by=price_usd`), { token: "hw-all" })
            assert.strictEqual(r.status, 200, `${endpoint} ${query}: ${r.text}`)
            const expected = all.body.data.filter(keep)
            assert.isAbove(expected.length, 0, `${endpoint} ${query} matches something`)
            assert.isBelow(expected.length, all.body.data.length, `${endpoint} ${query} narrows`)
            assert.deepStrictEqual(r.body.data, expected, `${endpoint} ${query}`)
          }
        }
      }))

    it.effect("a null condition matches no condition filter; a code or vocabulary value that does not occur matches nothing", () =>
      Effect.gen(function* () {
        yield* atNow
        const all = yield* http(`${HW}/latest?page_size=1000`, { token: "hw-all" })
        const nulls = all.body.data.filter((r: any) => r.condition === null).length
        assert.isAbove(nulls, 0)
        const some = yield* http(`${HW}/latest?condition=new_sealed,refurbished,used&page_size=1000`, { token: "hw-all" })
        assert.strictEqual(some.body.data.length, all.body.data.length - nulls)
        for (const q of ["country=ZZ", "condition=for_parts", "channel=auction", "gpu_canonical_name=b200", "listing_key=" + "0".repeat(32)]) {
          const r = yield* http(`${HW}/latest?${q}`, { token: "hw-all" })
          assert.strictEqual(r.status, 200, q)
          assert.deepStrictEqual(r.body.data, [], q)
        }
      }))

    it.effect("lists take 20 values and refuse 21; malformed values are 422 naming the parameter", () =>
      Effect.gen(function* () {
        yield* atNow
        const lists: Array<[string, (i: number) => string]> = [
          ["gpu_canonical_name", (i) => `gpu-${i}`],
          ["condition", (i) => HW_CONDITIONS[i % HW_CONDITIONS.length]!],
          ["market", (i) => (i % 2 === 0 ? "primary" : "secondary")],
          ["channel", (i) => HW_CHANNELS[i % HW_CHANNELS.length]!],
          ["transaction_level", (i) => HW_LEVELS[i % HW_LEVELS.length]!],
          ["stock_status", (i) => HW_STOCK[i % HW_STOCK.length]!],
          ["country", (i) => `A${String.fromCharCode(65 + i)}`],
          ["country_group", (i) => HW_COUNTRIES[i % HW_COUNTRIES.length]![1]]
        ]
        for (const [param, item] of lists) {
          const ok = yield* http(`${HW}/latest?${param}=${list(20, item)}`, { token: "hw-all" })
          assert.strictEqual(ok.status, 200, `${param} with 20: ${ok.text}`)
          const refused = yield* http(`${HW}/latest?${param}=${list(21, item)}`, { token: "hw-all" })
          assert.strictEqual(refused.status, 422, `${param} with 21`)
          assert.deepStrictEqual([...new Set(refused.body.errors.map((e: any) => e.parameter))], [param])
        }
        for (const [query, param] of [
          ["country=us", "country"], ["country=USA", "country"], ["country=US,us", "country"], ["market=tertiary", "market"],
          ["condition=Used", "condition"], ["condition=", "condition"], ["channel=a,,b", "channel"], ["listing_key=xyz", "listing_key"],
          ["listing_key=" + "A".repeat(32), "listing_key"], ["min_price_usd=-1", "min_price_usd"], ["max_price_usd=1e6", "max_price_usd"],
          ["gpu_canonical_name=H100-SXM", "gpu_canonical_name"], ["seller=acme", "seller"], ["platform=ebay", "platform"],
          ["sort_by=listing_key", "sort_by"], ["condition=used&condition=new_sealed", "condition"],
          ["condition=used,scrap", "condition"], ["channel=retailr", "channel"], ["country_group=emea", "country_group"]
        ] as const) {
          const r = yield* http(`${HW}/history?${query}`, { token: "hw-all" })
          assert.strictEqual(r.status, 422, query)
          assert.strictEqual(r.body.code, "validation_failed")
          assert.include(r.body.errors.map((e: any) => e.parameter), param, query)
        }
      }))

    it.effect("metadata: the values of every classification filter and coverage per GPU", () =>
      Effect.gen(function* () {
        yield* atNow
        const ingest = yield* HardwarePriceIngest
        const r = yield* http(`${HW}/metadata`, { token: "hw-all" })
        assert.strictEqual(r.status, 200, r.text)
        const body = validMetadata(r.body)
        assert.strictEqual(body.data_type, "gpu_hardware_prices")
        assert.isNull(body.history_starts_at)
        const rows = fixtureRows().map(({ listing, day }) => ({ listing, day, o: hardwareObservation(listing, day)! }))
        const valuesOf = (f: "condition" | "market" | "channel" | "transaction_level" | "stock_status" | "country" | "country_group") =>
          [...new Set(rows.map((x) => x.o[f]).filter((v): v is string => v !== null && v !== undefined))].sort()
        assert.deepStrictEqual(body.data.filters, {
          condition: ["new_sealed", "refurbished", "used"],
          market: valuesOf("market"),
          channel: ["broker", "marketplace", "retailer", "var_reseller"],
          transaction_level: ["bare_module", "rack", "server"],
          stock_status: valuesOf("stock_status"),
          country: ["CA", "DE", "GB", "JP", "SG", "US"],
          country_group: ["apac", "europe", "north_america"]
        })
        // Every value ingest accepts, per classification field, then the terms each descriptive field keeps: the defaults, as none was added.
        assert.deepStrictEqual(body.data.vocabulary, Object.fromEntries(
          [...Object.entries(hardwareVocabularyDefaults), ...Object.entries(hardwareTermDefaults)].map(([field, values]) => [field, values.literals])
        ) as unknown)
        assert.deepStrictEqual(body.data.gpus, [...HW_GPUS].sort().map((gpu) => {
          const mine = rows.filter((x) => x.o.gpu_canonical_name === gpu)
          return {
            gpu_canonical_name: gpu,
            first_observed: hwDate(Math.min(...mine.map((x) => x.day))),
            last_observed: hwDate(Math.max(...mine.map((x) => x.day))),
            listings: new Set(mine.map((x) => x.listing)).size,
            observations: mine.length
          }
        }))
        assert.strictEqual(body.data.gpus.find((g) => g.gpu_canonical_name === "h100-sxm")!.last_observed, hwDate(HW_LAST_DAY))
        // The listing keys of the market are nowhere in metadata.
        assert.notInclude(r.text, ingest.listingKey(listingRef(0)))
        // A token reading current values only is told its floor is today.
        assert.strictEqual((yield* http(`${HW}/metadata`, { token: "hw-current" })).body.history_starts_at, "2026-06-15")
        assert.strictEqual((yield* http(`${HW}/metadata`, { token: "hw-rolling" })).body.history_starts_at, "2026-06-05")
        assert.strictEqual((yield* http(`${HW}/metadata?x=1`, { token: "hw-all" })).status, 422)
      }))
  })
})
