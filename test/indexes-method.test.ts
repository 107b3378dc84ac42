import { assert, describe, it, layer } from "@effect/vitest"
import { IndexMethod } from "@gpu-market/core"
import { Effect } from "effect"
import { ADMINISTERED_DAYS, atIndexNow, indexFixtureLayer } from "./support/indexes"
import { http } from "./support/market"

const { quantile, vendorWeightedMedian, sweepRental, sweepReference, timedWeights, instantMicros } = IndexMethod

const prices = (byVendor: Record<string, ReadonlyArray<number>>) =>
  Object.entries(byVendor).flatMap(([vendor, list]) => list.map((price) => ({ vendor, price })))

const micros = (iso: string) => Date.parse(iso) * 1000

describe("index methodology on hand-computed cases", () => {
  it("quantiles interpolate linearly between closest ranks", () => {
    assert.strictEqual(quantile([7], 0.05), 7)
    assert.strictEqual(quantile([1, 3], 0.5), 2)
    assert.strictEqual(quantile([1, 2, 4, 8], 0.5), 3)
    // rank h = 3 × 0.05 = 0.15: 1 + 0.15 × (2 - 1)
    assert.closeTo(quantile([1, 2, 4, 8], 0.05), 1.15, 1e-12)
    // rank h = 3 × 0.95 = 2.85: 4 + 0.85 × (8 - 4)
    assert.closeTo(quantile([1, 2, 4, 8], 0.95), 7.4, 1e-12)
  })

  it("the value is the median of vendor medians; p5/p95 are their percentiles", () => {
    // Vendor medians: a 2.5 (of 1, 2, 3, 100), b 2, c 3.5 (of 3, 4), d 10 → [2, 2.5, 3.5, 10].
    const got = vendorWeightedMedian(prices({ a: [1, 2, 3, 100], b: [2], c: [4, 3], d: [10] }))
    assert.deepStrictEqual(got, { value: 3, p5: 2.075, p95: 9.025 })
  })

  it("a vendor listing many products counts once", () => {
    const one = vendorWeightedMedian(prices({ a: [2.5], b: [2], c: [3] }))
    assert.deepStrictEqual(one, { value: 2.5, p5: 2.05, p95: 2.95 })
    // Forty more products of vendor a around the same median change nothing.
    const same = vendorWeightedMedian(prices({ a: [2.5, ...Array<number>(20).fill(1), ...Array<number>(20).fill(9)], b: [2], c: [3] }))
    assert.deepStrictEqual(same, one)
    // Forty products at 9 make vendor a's median 9, one vote of three: the index moves to 3, where
    // a median of all 43 rows would be 9.
    const flooded = prices({ a: [2.5, ...Array<number>(40).fill(9)], b: [2], c: [3] })
    assert.deepStrictEqual(vendorWeightedMedian(flooded), { value: 3, p5: 2.1, p95: 8.4 })
    assert.strictEqual(quantile(flooded.map((r) => r.price).sort((x, y) => x - y), 0.5), 9)
  })

  it("fewer than two vendors publish nothing; two are enough", () => {
    assert.isUndefined(vendorWeightedMedian([]))
    assert.isUndefined(vendorWeightedMedian(prices({ a: [1, 2, 3, 4] })))
    assert.deepStrictEqual(vendorWeightedMedian(prices({ a: [1], b: [4] })), { value: 2.5, p5: 1.15, p95: 3.85 })
  })

  it("a row feeds an interval when in force at some moment of it: boundaries are exact", () => {
    const from = micros("2026-06-10T10:00:00Z"), end = micros("2026-06-10T10:30:00Z")
    const rows = [
      { vendor: "a", price: 1, from: micros("2026-06-01T00:00:00Z"), to: from }, // closed exactly at the start: out
      { vendor: "b", price: 2, from: end, to: null }, // opens exactly at the end: out
      { vendor: "c", price: 3, from, to: null }, // opens exactly at the start: in
      { vendor: "d", price: 5, from: from - 1, to: from + 1 }, // in force for a microsecond: in
      { vendor: "e", price: 7, from: end - 1, to: null } // opens a microsecond before the end: in
    ].sort((x, y) => x.from - y.from)
    const [value] = sweepRental({ id: "x", row_type: "intraday" }, rows, from, end)
    // Vendors c, d, e: medians [3, 5, 7].
    assert.deepStrictEqual(value, { id: "x", type: "intraday", timestamp: "2026-06-10T10:00:00.000000Z", value: 5, p5: 3.2, p95: 6.8 })
  })

  it("the reference price weighs per-GPU values by the fleet weight in force when the interval starts", () => {
    const day = (d: string, value: number, p5: number, p95: number) => [d, { id: "c", type: "daily" as const, timestamp: d, value, p5, p95 }] as const
    const h100 = new Map([day("2026-06-07", 2.8, 2.53, 3.88), day("2026-06-08", 2.8, 2.53, 3.88), day("2026-06-09", 3, 2.6, 3.9)])
    const a100 = new Map([day("2026-06-07", 1.3, 1.21, 1.39), day("2026-06-08", 1.3, 1.21, 1.39)])
    const weights = timedWeights([
      { gpu_canonical_name: "h100-sxm", weight: 3, valid_from: "2026-06-01T00:00:00.000000Z", valid_to: "2026-06-08T00:00:00.000000Z" },
      { gpu_canonical_name: "h100-sxm", weight: 1, valid_from: "2026-06-08T00:00:00.000000Z", valid_to: null },
      { gpu_canonical_name: "a100-sxm-80gb", weight: 1, valid_from: "2026-06-01T00:00:00.000000Z", valid_to: null }
    ])
    const got = sweepReference(
      { id: "ref", row_type: "daily" },
      [{ gpu: "h100-sxm", values: h100 }, { gpu: "a100-sxm-80gb", values: a100 }],
      weights,
      instantMicros("2026-06-07T00:00:00.000000Z"),
      instantMicros("2026-06-11T00:00:00.000000Z")
    )
    assert.deepStrictEqual(got, [
      // (3 × 2.8 + 1 × 1.3) / 4, and the same weights over the envelopes.
      { id: "ref", type: "daily", timestamp: "2026-06-07", value: 2.425, p5: 2.2, p95: 3.2575 },
      // The weight changed at midnight: (2.8 + 1.3) / 2.
      { id: "ref", type: "daily", timestamp: "2026-06-08", value: 2.05, p5: 1.87, p95: 2.635 },
      // A100 has no value: H100 alone, reweighted.
      { id: "ref", type: "daily", timestamp: "2026-06-09", value: 3, p5: 2.6, p95: 3.9 }
      // 2026-06-10: no component value, nothing published.
    ])
  })
})

const history = (id: string, query = "") =>
  http(`/api/v2/gpu/rental/indexes/history?id=${id}&start=2026-06-01&page_size=1000${query}`, { token: "all" })
const triples = (r: { body: any }) => r.body.data.map((v: any) => [v.timestamp, v.value, v.p5, v.p95])
const days = (from: number, to: number, value: number, p5: number, p95: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => [`2026-06-${String(from + i).padStart(2, "0")}`, value, p5, p95])

describe("computed indices over the fixture market, as served", () => {
  layer(indexFixtureLayer("index-method"), { timeout: "120 seconds" })((it) => {
    it.effect("per-GPU daily index: vendor medians of the rows in force each day", () =>
      Effect.gen(function* () {
        yield* atIndexNow
        // va 2.50 (median of 2.00 and 3.00), vb 2.80, vc 4.00 → 3.00 at 10:15 on the 10th; vb withdrawn on the 13th.
        assert.deepStrictEqual(triples(yield* history("h100-na-daily")), [
          ...days(1, 9, 2.8, 2.53, 3.88),
          ["2026-06-10", 2.8, 2.53, 3.43], // vc's median that day is 3.50: both its prices were in force
          ...days(11, 12, 2.8, 2.53, 2.98),
          ...days(13, 14, 2.75, 2.525, 2.975) // two vendors left
        ])
        assert.deepStrictEqual(triples(yield* history("a100-na-daily")), days(1, 14, 1.3, 1.21, 1.39))
        // Global adds vd (1.00 in eu-west): medians [1.0, 2.5, 2.8, 4.0].
        assert.deepStrictEqual(triples(yield* history("h100-global-daily")).slice(0, 1), [["2026-06-01", 2.65, 1.225, 3.82]])
        // Vendors vc and vd only.
        assert.deepStrictEqual(triples(yield* history("h100-neo-daily")).slice(0, 1), [["2026-06-01", 2.5, 1.15, 3.85]])
      }))

    it.effect("an index whose rows come from one vendor never publishes", () =>
      Effect.gen(function* () {
        yield* atIndexNow
        const r = yield* history("h100-west-daily")
        assert.strictEqual(r.status, 200)
        assert.deepStrictEqual(r.body.data, [])
        const latest = yield* http("/api/v2/gpu/rental/indexes/latest?id=h100-west-daily", { token: "all" })
        assert.deepStrictEqual(latest.body.data, [])
      }))

    it.effect("intraday index: each 30-minute interval sees the rows in force during it", () =>
      Effect.gen(function* () {
        yield* atIndexNow
        const r = yield* http("/api/v2/gpu/rental/indexes/history?id=h100-na-intraday&start=2026-06-10T09:30:00Z&end=2026-06-10T11:00:00Z", { token: "all" })
        assert.deepStrictEqual(triples(r), [
          ["2026-06-10T09:30:00.000000Z", 2.8, 2.53, 3.88],
          ["2026-06-10T10:00:00.000000Z", 2.8, 2.53, 3.43], // vc changed at 10:15: both prices in force
          ["2026-06-10T10:30:00.000000Z", 2.8, 2.53, 2.98]
        ])
        const withdrawn = yield* http("/api/v2/gpu/rental/indexes/history?id=h100-na-intraday&start=2026-06-12T23:30:00Z&end=2026-06-13T00:30:00Z", { token: "all" })
        assert.deepStrictEqual(triples(withdrawn), [
          ["2026-06-12T23:30:00.000000Z", 2.8, 2.53, 2.98],
          ["2026-06-13T00:00:00.000000Z", 2.75, 2.525, 2.975]
        ])
        const all = yield* http("/api/v2/gpu/rental/indexes/history?id=h100-na-intraday&start=2026-06-10&page_size=1000", { token: "all" })
        // 2026-06-10 00:00 to 2026-06-15 11:30, the last complete interval at 12:10.
        assert.strictEqual(all.body.data.length, 5 * 48 + 24)
        assert.strictEqual(all.body.data.at(-1).timestamp, "2026-06-15T11:30:00.000000Z")
      }))

    it.effect("reference price: fleet-weighted mean of the per-GPU indices, weights by validity", () =>
      Effect.gen(function* () {
        yield* atIndexNow
        assert.deepStrictEqual(triples(yield* history("ref-daily")), [
          ...days(1, 7, 2.425, 2.2, 3.2575), // H100 weighs 3: (3 × 2.8 + 1.3) / 4
          ...days(8, 9, 2.05, 1.87, 2.635), // from the 8th H100 weighs 1
          ["2026-06-10", 2.05, 1.87, 2.41],
          ...days(11, 12, 2.05, 1.87, 2.185),
          ...days(13, 14, 2.025, 1.8675, 2.1825)
        ])
        const r = yield* http("/api/v2/gpu/rental/indexes/history?id=ref-intraday&start=2026-06-10T10:00:00Z&end=2026-06-10T10:30:00Z", { token: "all" })
        assert.deepStrictEqual(triples(r), [["2026-06-10T10:00:00.000000Z", 2.05, 1.87, 2.41]])
      }))

    it.effect("administered values are served as published, without an envelope", () =>
      Effect.gen(function* () {
        yield* atIndexNow
        const r = yield* history("adm-daily")
        assert.deepStrictEqual(r.body.data.slice(0, 2), [
          { id: "adm-daily", type: "daily", timestamp: "2026-06-01", value: 2.01, p5: null, p95: null },
          { id: "adm-daily", type: "daily", timestamp: "2026-06-02", value: 2.02, p5: null, p95: null }
        ])
        assert.deepStrictEqual(r.body.data.map((v: any) => v.timestamp), ADMINISTERED_DAYS.map((d) => `2026-06-${String(d).padStart(2, "0")}`))
      }))
  })
})
