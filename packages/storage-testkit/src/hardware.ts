import { assert, type Vitest } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { createHash } from "node:crypto"
import { type HardwarePrice, hardwarePriceFields, HardwarePriceRow, observationId } from "@gpu-market/core"
import { evaluateHardwarePlan, HardwarePriceStore, type PagePlan, type Predicate, type Scope, type Storage, summariseHardware } from "@gpu-market/core/storage"
import { assertPagesMatchReference } from "./walk.js"
import { followVersion } from "./data-version.js"
import { namespace } from "./namespace.js"

/**
 * The hardware price cases of the storage conformance suite. Each test keeps to GPUs and values
 * named with its own prefix, since the store is shared by the whole suite.
 */


/** A listing key for a test's own listing name. */
export const testListingKey = (name: string): string => createHash("sha256").update(name).digest("hex").slice(0, 32)

/** The date `day` days after 2026-01-01. */
export const hardwareDay = (day: number): string => new Date(Date.UTC(2026, 0, 1 + day)).toISOString().slice(0, 10)

/** A valid hardware row: every field null unless given; the observation id follows the listing and day. */
export const hardwareRow = (
  over: Partial<HardwarePrice> & Pick<HardwarePrice, "listing_key" | "gpu_canonical_name" | "observed_date">
): HardwarePrice => {
  const values: Record<string, unknown> = {
    ...Object.fromEntries(hardwarePriceFields.map((f) => [f, null])),
    price_usd: 25_000,
    ...over,
    observation_id: observationId(over.listing_key, over.observed_date)
  }
  // Decoded by the row's own schema: every field checked, in the row's field order.
  return Schema.decodeUnknownSync(Schema.encodedSchema(HardwarePriceRow))(values)
}

const SORTS = ["condition", "gpu_canonical_name", "observed_date", "price_usd"] as const
const instant = (day: number, time = "00:00:00.000000") => `${hardwareDay(day)}T${time}Z`

/**
 * A small market under one namespace: 12 listings of three GPUs over days 0..19, each seen on
 * its own days with gaps, some gone before the end, ties on every sort field and null conditions.
 */
const market = (ns: string): Array<HardwarePrice> => {
  const rows: Array<HardwarePrice> = []
  const gpus = [`${ns}-h100`, `${ns}-a100`, `${ns}-mi300x`]
  for (let l = 0; l < 12; l++) {
    const listing = testListingKey(`${ns}/listing-${l}`)
    const gpu = gpus[l % 3]!
    for (let day = l % 4; day < 20 - (l % 5) * 2; day += 1 + ((l + day) % 3)) {
      rows.push(hardwareRow({
        listing_key: listing,
        gpu_canonical_name: gpu,
        observed_date: hardwareDay(day),
        price_usd: 20_000 + ((l * 7 + day) % 4) * 500,
        condition: (l + day) % 4 === 0 ? null : ["new_sealed", "refurbished", "used"][(l + day) % 3]!,
        market: l % 2 === 0 ? "primary" : "secondary",
        channel: ["broker", "marketplace", "retailer"][l % 3]!,
        transaction_level: l % 4 === 0 ? "server" : "bare_module",
        stock_status: day % 2 === 0 ? "in_stock" : null,
        country: ["US", "DE", "JP", "SG"][l % 4]!,
        country_group: ["north_america", "europe", "apac", "apac"][l % 4]!,
        gpu_count_in_unit: l % 4 === 0 ? 8 : 1,
        includes_nvswitch: l % 4 === 0 ? true : null,
        taxes_included: day % 3 === 0 ? false : null,
        services_included: l % 3 === 0 ? ["installation", "burn-in"] : null,
        warranty_months: l % 2 === 0 ? 36 : null
      }))
    }
  }
  return rows
}

const everyRow = (gpus: ReadonlyArray<string>): PagePlan => ({
  scope: { _tag: "window", start: "0000-01-01T00:00:00.000000Z", end: "9999-12-31T00:00:00.000000Z" },
  predicates: [{ op: "in", field: "gpu_canonical_name", values: gpus }],
  sort: { by: "observed_date", order: "asc" },
  after: undefined,
  limit: 10_000
})

/** Registers the hardware price cases on the suite's shared store. */
export const hardwareConformance = (it: Vitest.MethodsNonLive<Storage>) => {
  it.effect("hardware: put adds listing-days and replaces a stored one, never duplicating it", () =>
    Effect.gen(function* () {
      const s = yield* HardwarePriceStore
      const ns = namespace("hw-put")
      const listing = testListingKey(`${ns}/l`)
      const gpu = `${ns}-h100`
      const d1 = hardwareRow({ listing_key: listing, gpu_canonical_name: gpu, observed_date: hardwareDay(1), price_usd: 30_000, condition: "used" })
      const d2 = hardwareRow({ listing_key: listing, gpu_canonical_name: gpu, observed_date: hardwareDay(2), price_usd: 29_000 })
      assert.deepStrictEqual(yield* s.put([d1, d2]), { inserted: 2, replaced: 0 })
      const again = { ...d1, price_usd: 28_500, condition: "refurbished", services_included: ["rma"], includes_chassis_psu: false }
      assert.deepStrictEqual(yield* s.put([again]), { inserted: 0, replaced: 1 })
      assert.deepStrictEqual(yield* s.page(everyRow([gpu])), [again, d2])
      // Two rows of one listing-day in one call: the later stands.
      const twice = [{ ...d2, price_usd: 1 }, { ...d2, price_usd: 2 }]
      assert.deepStrictEqual(yield* s.put(twice), { inserted: 0, replaced: 2 })
      assert.deepStrictEqual(yield* s.page(everyRow([gpu])), [again, { ...d2, price_usd: 2 }])
    }))

  it.effect("hardware: the data version moves with every put of rows, and only then", () =>
    Effect.gen(function* () {
      const s = yield* HardwarePriceStore
      const ns = namespace("hw-version")
      const v = yield* followVersion(s.version)
      const row = hardwareRow({ listing_key: testListingKey(`${ns}/l`), gpu_canonical_name: `${ns}-h100`, observed_date: hardwareDay(1) })
      yield* s.put([row])
      yield* v.moved
      yield* s.page(everyRow([`${ns}-h100`]))
      yield* s.summary
      yield* s.put([], { name: `${ns}-through`, value: "1" })
      yield* v.still
      yield* s.put([{ ...row, price_usd: row.price_usd + 1 }])
      yield* v.moved
    }))

  it.effect("hardware: a progress mark is written by the put of its rows, even one of no rows", () =>
    Effect.gen(function* () {
      const s = yield* HardwarePriceStore
      const ns = namespace("hw-mark")
      const name = `${ns}-through`
      const row = hardwareRow({ listing_key: testListingKey(`${ns}/l`), gpu_canonical_name: `${ns}-h100`, observed_date: hardwareDay(1) })
      assert.deepStrictEqual(yield* s.mark(name), Option.none())
      assert.deepStrictEqual(yield* s.put([row], { name, value: "1" }), { inserted: 1, replaced: 0 })
      assert.deepStrictEqual(yield* s.mark(name), Option.some("1"))
      yield* s.put([], { name, value: "2" })
      assert.deepStrictEqual(yield* s.mark(name), Option.some("2"))
      assert.deepStrictEqual(yield* s.page(everyRow([`${ns}-h100`])), [row])
    }))

  it.effect("hardware: latest and as-of take each listing's newest day, whatever order days arrive in", () =>
    Effect.gen(function* () {
      const s = yield* HardwarePriceStore
      const ns = namespace("hw-asof")
      const gpu = `${ns}-h100`
      const a = testListingKey(`${ns}/a`), b = testListingKey(`${ns}/b`)
      const row = (listing: string, day: number) => hardwareRow({ listing_key: listing, gpu_canonical_name: gpu, observed_date: hardwareDay(day), price_usd: (listing === a ? 1000 : 2000) + day })
      // Listing a: days 1, 3, 5 (5 first, then 1, then 3); listing b: days 2 and 3, then gone.
      yield* s.put([row(a, 5)])
      yield* s.put([row(a, 1), row(b, 3)])
      yield* s.put([row(a, 3), row(b, 2)])
      const at = (scope: Scope) => Effect.map(s.page({
        scope, predicates: [{ op: "in", field: "gpu_canonical_name", values: [gpu] }], sort: { by: "price_usd", order: "asc" }, after: undefined, limit: 10
      }), (rows) => rows.map((r) => r.observation_id))
      const id = (listing: string, day: number) => observationId(listing, hardwareDay(day))
      assert.deepStrictEqual(yield* at({ _tag: "latest" }), [id(a, 5), id(b, 3)])
      assert.deepStrictEqual(yield* at({ _tag: "asOf", at: instant(0, "23:59:59.999999") }), [])
      assert.deepStrictEqual(yield* at({ _tag: "asOf", at: instant(1) }), [id(a, 1)])
      assert.deepStrictEqual(yield* at({ _tag: "asOf", at: instant(2, "12:00:00.000000") }), [id(a, 1), id(b, 2)])
      assert.deepStrictEqual(yield* at({ _tag: "asOf", at: instant(4) }), [id(a, 3), id(b, 3)])
      assert.deepStrictEqual(yield* at({ _tag: "asOf", at: instant(9) }), [id(a, 5), id(b, 3)])
      // A window holds the days whose midnight is inside it: day 3 starts at its midnight.
      assert.deepStrictEqual(yield* at({ _tag: "window", start: instant(2, "00:00:00.000001"), end: instant(3, "00:00:00.000001") }), [id(a, 3), id(b, 3)])
      assert.deepStrictEqual(yield* at({ _tag: "window", start: instant(3), end: instant(3, "23:00:00.000000") }), [id(a, 3), id(b, 3)])
      assert.deepStrictEqual(yield* at({ _tag: "window", start: instant(1), end: instant(3) }), [id(a, 1), id(b, 2)])
    }))

  it.effect("hardware: pages follow scope, predicates, sort and keyset exactly", () =>
    Effect.gen(function* () {
      const s = yield* HardwarePriceStore
      const ns = namespace("hw-page")
      const rows = market(ns)
      // Written in three rounds out of day order, some rows replaced by a later round.
      yield* s.put(rows.filter((_, i) => i % 3 === 2))
      yield* s.put(rows.filter((_, i) => i % 3 === 0).map((r) => ({ ...r, price_usd: 1, condition: "scrap" })))
      yield* s.put(rows.filter((_, i) => i % 3 !== 2))
      const gpus = [`${ns}-h100`, `${ns}-a100`, `${ns}-mi300x`]
      const mine: Predicate = { op: "in", field: "gpu_canonical_name", values: gpus }
      const scopes: Array<Scope> = [
        { _tag: "latest" },
        { _tag: "asOf", at: instant(7, "23:59:59.999999") },
        { _tag: "asOf", at: instant(12) },
        { _tag: "window", start: instant(0), end: instant(10) },
        { _tag: "window", start: instant(4, "06:00:00.000000"), end: instant(15, "00:00:00.000001") }
      ]
      const extra: Array<ReadonlyArray<Predicate>> = [
        [],
        [{ op: "in", field: "gpu_canonical_name", values: [`${ns}-h100`] }],
        [{ op: "in", field: "condition", values: ["used", "refurbished"] }, { op: "gte", field: "price_usd", value: 20_500 }],
        [{ op: "in", field: "country", values: ["US", "JP"] }, { op: "lte", field: "price_usd", value: 21_000 }],
        [{ op: "eq", field: "listing_key", value: testListingKey(`${ns}/listing-4`) }],
        [{ op: "in", field: "market", values: ["secondary"] }, { op: "in", field: "stock_status", values: ["in_stock"] }],
        [{ op: "in", field: "condition", values: ["used"] }]
      ]
      const compared = yield* assertPagesMatchReference(s.page, evaluateHardwarePlan, rows, "observation_id", { scopes, mine, extra, sorts: SORTS, limit: 4 })
      assert.isAbove(compared, 1000)
      // Stated by hand: nulls sort as "" by condition, first ascending, ties by observation id.
      const byCondition = yield* s.page({ ...everyRow(gpus), sort: { by: "condition", order: "asc" } })
      const firstNonNull = byCondition.findIndex((r) => r.condition !== null)
      assert.isAbove(firstNonNull, 0)
      assert.isTrue(byCondition.slice(firstNonNull).every((r) => r.condition !== null))
      assert.deepStrictEqual(byCondition.slice(0, firstNonNull).map((r) => r.observation_id),
        rows.filter((r) => r.condition === null).map((r) => r.observation_id).sort())
    }))

  it.effect("hardware: the summary lists filter values and GPU coverage of the rows stored", () =>
    Effect.gen(function* () {
      const s = yield* HardwarePriceStore
      const ns = namespace("hw-sum")
      const listing = (n: number) => testListingKey(`${ns}/${n}`)
      const rows = [
        hardwareRow({ listing_key: listing(1), gpu_canonical_name: `${ns}-h100`, observed_date: hardwareDay(3), condition: `${ns}-used`, channel: `${ns}-broker`, country: "US" }),
        hardwareRow({ listing_key: listing(1), gpu_canonical_name: `${ns}-h100`, observed_date: hardwareDay(9), condition: `${ns}-used`, channel: `${ns}-broker` }),
        hardwareRow({ listing_key: listing(2), gpu_canonical_name: `${ns}-h100`, observed_date: hardwareDay(1), condition: `${ns}-new` }),
        hardwareRow({ listing_key: listing(3), gpu_canonical_name: `${ns}-a100`, observed_date: hardwareDay(5), channel: `${ns}-retailer` })
      ]
      yield* s.put(rows)
      const mine = Effect.map(s.summary, (summary) => ({
        values: Object.fromEntries(Object.entries(summary.values).map(([f, vs]) => [f, vs.filter((v) => v.startsWith(ns))])),
        gpus: summary.gpus.filter((g) => g.gpu_canonical_name.startsWith(ns))
      }))
      const expected = (all: ReadonlyArray<HardwarePrice>) => {
        const summary = summariseHardware(all)
        return { values: Object.fromEntries(Object.entries(summary.values).map(([f, vs]) => [f, vs.filter((v) => v.startsWith(ns))])), gpus: summary.gpus }
      }
      assert.deepStrictEqual(yield* mine, expected(rows))
      assert.deepStrictEqual((yield* mine).gpus, [
        { gpu_canonical_name: `${ns}-a100`, first_observed: hardwareDay(5), last_observed: hardwareDay(5), listings: 1, observations: 1 },
        { gpu_canonical_name: `${ns}-h100`, first_observed: hardwareDay(1), last_observed: hardwareDay(9), listings: 2, observations: 3 }
      ])
      // Replacing rows moves a value away (it is no longer listed) and a listing-day to another GPU.
      const moved = [{ ...rows[0]!, gpu_canonical_name: `${ns}-a100`, condition: `${ns}-new`, channel: null }, { ...rows[3]!, channel: null }]
      yield* s.put(moved)
      const now = [moved[0]!, rows[1]!, rows[2]!, moved[1]!]
      assert.deepStrictEqual(yield* mine, expected(now))
      assert.deepStrictEqual((yield* mine).values.channel, [`${ns}-broker`])
      assert.deepStrictEqual((yield* mine).gpus, [
        { gpu_canonical_name: `${ns}-a100`, first_observed: hardwareDay(3), last_observed: hardwareDay(5), listings: 2, observations: 2 },
        { gpu_canonical_name: `${ns}-h100`, first_observed: hardwareDay(1), last_observed: hardwareDay(9), listings: 2, observations: 2 }
      ])
    }))
}
