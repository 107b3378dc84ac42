import { assert, describe, it } from "@effect/vitest"
import {
  isOutlierPrice, LlmTokenPriceIngest, type LlmTokenPriceObservationInput, marketLayer, outlierReference
} from "@gpu-market/core"
import { LlmTokenPriceStore } from "@gpu-market/core/storage"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Effect, Layer } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const fresh = () => {
  const dir = mkdtempSync(join(tmpdir(), "gpu-market-llm-outliers-"))
  return marketLayer.pipe(Layer.provideMerge(SqliteStorage.layer({ filename: join(dir, "market.db") })))
}

/** A price of `model` input by `provider` at `price` on June `day`. */
const quote = (provider: string, price: number, day: number, over: Partial<LlmTokenPriceObservationInput> = {}): LlmTokenPriceObservationInput => ({
  source: "provider-pricing-page", model: "m", model_name: "M", serving_provider: provider, price_type: "input",
  price_usd_per_1m_tokens: price, raw_price: price, raw_price_unit: "usd_per_1m_tokens", currency: "USD",
  extracted_at: `2026-06-${String(day).padStart(2, "0")}T00:00:00Z`, ...over
})

/** The current flag of each provider's price of one model, price type and metric (`m` input tokens by default). */
const flags = (over: { readonly model?: string; readonly price_type?: string; readonly metric?: string } = {}) =>
  Effect.gen(function* () {
    const store = yield* LlmTokenPriceStore
    const group = { model: "m", price_type: "input", metric: "tokens", ...over }
    const rows = yield* store.page({
      scope: { _tag: "latest" },
      predicates: Object.entries(group).map(([field, value]) => ({ op: "eq", field, value }) as const),
      sort: { by: "serving_provider", order: "asc" }, after: undefined, limit: 1000
    })
    return Object.fromEntries(rows.map((r) => [`${r.serving_provider}${r.region === "global" ? "" : `@${r.region}`}`, r.is_price_outlier]))
  })

describe("LLM price outlier rule", () => {
  it("the reference is the median of per-provider medians, with at least three providers", () => {
    const rows = (...pairs: Array<[string, number]>) => pairs.map(([serving_provider, price_usd_per_1m_tokens]) => ({ serving_provider, price_usd_per_1m_tokens }))
    assert.strictEqual(outlierReference(rows(["a", 1], ["b", 2], ["c", 3])), 2)
    assert.strictEqual(outlierReference(rows(["a", 1], ["b", 2], ["c", 3], ["d", 10.5])), 2.5)
    // a's four rows count once, as their median (1); as rows, the median would be 1.5.
    assert.strictEqual(outlierReference(rows(["a", 1], ["a", 1], ["a", 1], ["a", 100], ["b", 2], ["c", 4])), 2)
    assert.isUndefined(outlierReference(rows(["a", 1], ["a", 2], ["b", 1000])))
    assert.isUndefined(outlierReference([]))
    // More than 5× above or below; exactly 5× is not an outlier.
    assert.isFalse(isOutlierPrice(12.5, 2.5))
    assert.isTrue(isOutlierPrice(12.51, 2.5))
    assert.isFalse(isOutlierPrice(0.5, 2.5))
    assert.isTrue(isOutlierPrice(0.49, 2.5))
    assert.isFalse(isOutlierPrice(1e9, undefined))
  })

  it.effect("hand-computed: above and below the reference, at and past the 5× boundary", () =>
    Effect.gen(function* () {
      const ingest = yield* LlmTokenPriceIngest
      // a=1, b=2, c=3: reference 2; nothing is 5× away.
      yield* ingest.ingest([quote("a", 1, 1), quote("b", 2, 1), quote("c", 3, 1)])
      assert.deepStrictEqual(yield* flags(), { a: false, b: false, c: false })
      // d at 12.5: providers 1, 2, 3, 12.5 → reference (2 + 3) / 2 = 2.5; 12.5 is exactly 5×: not flagged.
      assert.strictEqual((yield* ingest.ingest([quote("d", 12.5, 2)])).flagged, 0)
      // d moves to 12.6: the reference is still 2.5, and 12.6 > 12.5: flagged.
      assert.strictEqual((yield* ingest.ingest([quote("d", 12.6, 3)])).flagged, 1)
      assert.deepStrictEqual(yield* flags(), { a: false, b: false, c: false, d: true })
      // e at 0.4: providers 0.4, 1, 2, 3, 12.6 → reference 2; 0.4 × 5 = 2 is not below it: not flagged.
      assert.strictEqual((yield* ingest.ingest([quote("e", 0.4, 4)])).flagged, 0)
      // e moves to 0.39: 0.39 × 5 = 1.95 < 2: flagged.
      assert.strictEqual((yield* ingest.ingest([quote("e", 0.39, 5)])).flagged, 1)
      assert.deepStrictEqual(yield* flags(), { a: false, b: false, c: false, d: true, e: true })
    }).pipe(Effect.provide(fresh())))

  it.effect("fewer than three providers: nothing is judged; rows of earlier instants keep their flags", () =>
    Effect.gen(function* () {
      const ingest = yield* LlmTokenPriceIngest
      // Two providers, 1000× apart: no reference, no flag.
      yield* ingest.ingest([quote("a", 1, 1), quote("b", 1000, 1)])
      assert.deepStrictEqual(yield* flags(), { a: false, b: false })
      // A third provider makes a reference (median of 1, 1000, 1 = 1): c is plausible, and b's
      // row, judged against the market of its own instant, keeps its flag.
      yield* ingest.ingest([quote("c", 1, 2)])
      assert.deepStrictEqual(yield* flags(), { a: false, b: false, c: false })
      // An unchanged price is not re-judged either.
      assert.deepStrictEqual(yield* ingest.ingest([quote("b", 1000, 3)]), { received: 1, opened: 0, closed: 0, unchanged: 1, duplicates: 0, flagged: 0, reflagged: 0 })
      // b's next price is judged against the market then: flagged.
      yield* ingest.ingest([quote("b", 999, 4)])
      assert.deepStrictEqual(yield* flags(), { a: false, b: true, c: false })
      // Once flagged, a market that moves towards it does not clear the flag.
      yield* ingest.ingest([quote("a", 900, 5), quote("c", 950, 5)])
      assert.deepStrictEqual(yield* flags(), { a: false, b: true, c: false })
      // History keeps each version's judgment.
      const store = yield* LlmTokenPriceStore
      const versions = yield* store.page({
        scope: { _tag: "window", start: "2026-01-01T00:00:00.000000Z", end: "2027-01-01T00:00:00.000000Z" },
        predicates: [{ op: "in", field: "serving_provider", values: ["b"] }], sort: { by: "valid_from", order: "asc" }, after: undefined, limit: 10
      })
      assert.deepStrictEqual(versions.map((r) => [r.price_usd_per_1m_tokens, r.is_price_outlier]), [[1000, false], [999, true]])
    }).pipe(Effect.provide(fresh())))

  it.effect("one batch is judged together; a provider's many rows count once; groups are model, price type and metric", () =>
    Effect.gen(function* () {
      const ingest = yield* LlmTokenPriceIngest
      // Everyone arrives in one batch: 50 against 1 and 1.1 is flagged.
      const first = yield* ingest.ingest([quote("a", 1, 1), quote("b", 1.1, 1), quote("c", 50, 1)])
      assert.strictEqual(first.flagged, 1)
      assert.deepStrictEqual(yield* flags(), { a: false, b: false, c: true })
      // c corrects to 1.2. Then five regional rows of d at 10: as rows, 10 would be the median of
      // 1, 1.1, 1.2 and five 10s; as one provider, d's figure 10 meets a, b, c = 1, 1.1, 1.2 and
      // the reference is (1.1 + 1.2) / 2 = 1.15, so all five are flagged.
      yield* ingest.ingest([quote("c", 1.2, 2)])
      const regions = ["r1", "r2", "r3", "r4", "r5"].map((region) => quote("d", 10, 3, { region }))
      assert.strictEqual((yield* ingest.ingest(regions)).flagged, 5)
      // Output prices and audio tokens are other groups: 10× the input price is plausible there.
      yield* ingest.ingest([
        quote("a", 10, 4, { price_type: "output" }), quote("b", 11, 4, { price_type: "output" }), quote("c", 12, 4, { price_type: "output" }),
        quote("a", 100, 4, { metric: "audio_tokens" }), quote("b", 100, 4, { metric: "audio_tokens" }), quote("c", 100, 4, { metric: "audio_tokens" })
      ])
      assert.deepStrictEqual(yield* flags({ price_type: "output" }), { a: false, b: false, c: false })
      assert.deepStrictEqual(yield* flags({ metric: "audio_tokens" }), { a: false, b: false, c: false })
      // Another model's prices do not count either: a lone provider of model n is not judged.
      yield* ingest.ingest([quote("a", 500, 5, { model: "n" })])
      assert.deepStrictEqual(yield* flags({ model: "n" }), { a: false })
    }).pipe(Effect.provide(fresh())))

  it.effect("a price is judged against the market in force at its own instant; a late price re-judges the rows after it", () =>
    Effect.gen(function* () {
      const ingest = yield* LlmTokenPriceIngest
      // a, b and c start quoting on June 10.
      yield* ingest.ingest([quote("a", 1, 10), quote("b", 1, 10), quote("c", 1, 10)])
      // d's price from June 5 arrives late: on June 5 nobody else quoted, so there is no reference.
      // It is in force on June 10 too, where a, b and c are judged again (1, 1, 1, 40: still plausible).
      assert.deepInclude(yield* ingest.ingest([quote("d", 40, 5)]), { flagged: 0, reflagged: 0 })
      // e's price from June 12 is judged against a, b, c and d in force then: reference 1.
      assert.deepInclude(yield* ingest.ingest([quote("e", 40, 12)]), { flagged: 1, reflagged: 0 })
      assert.deepStrictEqual(yield* flags(), { a: false, b: false, c: false, d: false, e: true })
      // One batch spanning both instants: f on June 6 meets d only (no reference); g on June 11
      // meets a, b, c = 1, d = 40 and f = 30 from the same batch: reference (1 + 30) / 2 = 15.5,
      // so g at 50 is plausible (without f the reference would be 1 and g flagged). f moved the
      // market from June 6 on: on June 12, e meets 1, 1, 1, 30, 40, 50 and itself, reference 30,
      // and is no longer an outlier.
      assert.deepInclude(yield* ingest.ingest([quote("g", 50, 11), quote("f", 30, 6)]), { flagged: 0, reflagged: 1 })
      assert.deepStrictEqual(yield* flags(), { a: false, b: false, c: false, d: false, e: false, f: false, g: false })
    }).pipe(Effect.provide(fresh())))

  it.effect("the prices of one instant are judged together, whatever batches they arrive in", () =>
    Effect.gen(function* () {
      const ingest = yield* LlmTokenPriceIngest
      // The first batch of a snapshot: against a and b at 1, c at 10 looks like an outlier.
      assert.deepInclude(yield* ingest.ingest([quote("a", 1, 1), quote("b", 1, 1), quote("c", 10, 1)]), { flagged: 1, reflagged: 0 })
      assert.deepStrictEqual(yield* flags(), { a: false, b: false, c: true })
      // The rest of the same snapshot: the market is 1, 1 and four providers at 10, reference 10,
      // so a and b are the outliers and c is not.
      assert.deepInclude(yield* ingest.ingest([quote("d", 10, 1), quote("e", 10, 1), quote("f", 10, 1)]), { flagged: 0, reflagged: 3 })
      assert.deepStrictEqual(yield* flags(), { a: true, b: true, c: false, d: false, e: false, f: false })
      // The next day's prices leave the first day's flags alone: their market did not move.
      yield* ingest.ingest([quote("a", 1.5, 2), quote("g", 1, 2)])
      assert.deepStrictEqual(yield* flags(), { a: true, b: true, c: false, d: false, e: false, f: false, g: true })
    }).pipe(Effect.provide(fresh())))

  it.effect("a withdrawal re-judges the rows that start at its instant, without the withdrawn prices", () =>
    Effect.gen(function* () {
      const ingest = yield* LlmTokenPriceIngest
      yield* ingest.ingest([quote("a", 1, 1), quote("b", 1, 1), quote("c", 1, 1)])
      // June 2: d and e at 6 against 1, 1, 1: outliers.
      yield* ingest.ingest([quote("d", 6, 2), quote("e", 6, 2)])
      assert.deepStrictEqual(yield* flags(), { a: false, b: false, c: false, d: true, e: true })
      // a and b stop publishing on June 2: the market then is c = 1, d = 6, e = 6, reference 6.
      const store = yield* LlmTokenPriceStore
      const latest = yield* store.page({
        scope: { _tag: "latest" }, predicates: [{ op: "in", field: "serving_provider", values: ["a", "b"] }],
        sort: { by: "serving_provider", order: "asc" }, after: undefined, limit: 10
      })
      assert.strictEqual(yield* ingest.withdraw(latest.map((r) => r.base_price_key), "2026-06-02T00:00:00Z"), 2)
      // c's row started on June 1 and keeps its judgment.
      assert.deepStrictEqual(yield* flags(), { c: false, d: false, e: false })
    }).pipe(Effect.provide(fresh())))
})
