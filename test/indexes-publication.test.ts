import { assert, describe, layer } from "@effect/vitest"
import { IndexComputation, IndexIngest, type IndexValue } from "@gpu-market/core"
import { IndexStore, type PagePlan } from "@gpu-market/core/storage"
import { Effect, Exit, TestClock } from "effect"
import { atIndexNow, FIXTURE_DEFINITIONS, indexFixtureLayer } from "./support/indexes"
import { http } from "./support/market"

const latest = (id: string) => Effect.map(http(`/api/v2/gpu/rental/indexes/latest?id=${id}`, { token: "all" }), (r) => r.body.data[0]?.timestamp ?? null)

/** Every stored value of every fixture index, by keyset pages straight from the store. */
const everything = Effect.gen(function* () {
  const store = yield* IndexStore
  const out: Array<IndexValue> = []
  for (const d of FIXTURE_DEFINITIONS) {
    let after: PagePlan["after"] = undefined
    for (;;) {
      const rows: ReadonlyArray<IndexValue> = yield* store.page({
        scope: { _tag: "window", start: "2000-01-01T00:00:00.000000Z", end: "2100-01-01T00:00:00.000000Z" },
        predicates: [{ op: "eq", field: "id", value: d.id }], sort: { by: "timestamp", order: "asc" }, after, limit: 500
      })
      out.push(...rows)
      if (rows.length < 500) break
      after = { value: rows.at(-1)!.timestamp, tie: rows.at(-1)!.timestamp }
    }
  }
  return out
})

describe("index publication and recomputation", () => {
  layer(indexFixtureLayer("index-publication"), { timeout: "120 seconds" })((it) => {
    it.effect("an incomplete interval is never served, and is once the clock passes its end", () =>
      Effect.gen(function* () {
        yield* atIndexNow
        assert.strictEqual(yield* latest("h100-na-intraday"), "2026-06-15T11:30:00.000000Z")
        assert.strictEqual(yield* latest("h100-na-daily"), "2026-06-14")
        const store = yield* IndexStore
        const stored = (id: string, start: string) => store.page({
          scope: { _tag: "window", start, end: "2100-01-01T00:00:00.000000Z" },
          predicates: [{ op: "eq", field: "id", value: id }], sort: { by: "timestamp", order: "asc" }, after: undefined, limit: 10
        })
        // Not served, and not even stored.
        assert.deepStrictEqual(yield* stored("h100-na-intraday", "2026-06-15T12:00:00.000000Z"), [])
        yield* TestClock.setTime(Date.UTC(2026, 5, 15, 12, 29, 59, 999))
        assert.strictEqual(yield* latest("h100-na-intraday"), "2026-06-15T11:30:00.000000Z")
        const history = yield* http("/api/v2/gpu/rental/indexes/history?id=h100-na-intraday&start=2026-06-15T11:00:00Z&end=2026-06-16", { token: "all" })
        assert.deepStrictEqual(history.body.data.map((v: any) => v.timestamp), ["2026-06-15T11:00:00.000000Z", "2026-06-15T11:30:00.000000Z"])
        // 12:30:00.000: the 12:00 interval is complete; the first read computes and serves it.
        yield* TestClock.setTime(Date.UTC(2026, 5, 15, 12, 30))
        assert.strictEqual(yield* latest("h100-na-intraday"), "2026-06-15T12:00:00.000000Z")
        assert.strictEqual(yield* latest("ref-intraday"), "2026-06-15T12:00:00.000000Z")
        const legacy = yield* http("/api/v1/custom-index/current?index_id=h100-na-intraday", { token: "all" })
        assert.strictEqual(legacy.body.data[0].timestamp, "2026-06-15T12:00:00.000000Z")
        // The day is complete only at midnight.
        yield* TestClock.setTime(Date.UTC(2026, 5, 15, 23, 59, 59, 999))
        assert.strictEqual(yield* latest("h100-na-daily"), "2026-06-14")
        assert.strictEqual(yield* latest("h100-na-intraday"), "2026-06-15T23:00:00.000000Z")
        yield* TestClock.setTime(Date.UTC(2026, 5, 16))
        const day = yield* http("/api/v2/gpu/rental/indexes/latest?id=h100-na-daily", { token: "all" })
        assert.deepStrictEqual(day.body.data, [{ id: "h100-na-daily", type: "daily", timestamp: "2026-06-15", value: 2.75, p5: 2.525, p95: 2.975 }])
        assert.strictEqual(yield* latest("ref-daily"), "2026-06-15")
        assert.strictEqual(yield* latest("h100-na-intraday"), "2026-06-15T23:30:00.000000Z")
      }))

    it.effect("recomputing is idempotent: the same values, no duplicates, administered values untouched", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(Date.UTC(2026, 5, 16, 0, 5))
        const computation = yield* IndexComputation
        yield* computation.computeDue()
        const before = yield* everything
        assert.isAbove(before.length, 300)
        const again = yield* computation.computeDue()
        assert.deepStrictEqual(again, { indices: 0, intervals: 0, values: 0 })
        assert.deepStrictEqual(yield* everything, before)
        const first = yield* computation.computeRange("2026-06-01", "2026-06-20")
        const second = yield* computation.computeRange("2026-06-01", "2026-06-20")
        assert.deepStrictEqual(second, first)
        // Six daily indices from the 1st, three intraday ones from their first day (the 10th); intervals
        // not complete at 00:05 on the 16th are never computed, even when asked for.
        assert.strictEqual(first.intervals, 6 * 15 + 3 * (6 * 48))
        assert.deepStrictEqual(yield* everything, before)
        const bad = yield* Effect.exit(computation.computeRange("2026-06-10", "2026-06-01"))
        assert.isTrue(Exit.isFailure(bad))
      }))

    it.effect("the write path refuses what it cannot place, whole batches at a time", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(Date.UTC(2026, 5, 16, 0, 5))
        const ingest = yield* IndexIngest
        const refused = <A, E>(effect: Effect.Effect<A, E>) =>
          Effect.map(Effect.flip(effect), (e) => (e as { _tag: string; errors: ReadonlyArray<{ index: number; message: string }> }))
        const today = yield* refused(ingest.publish([
          { id: "adm-daily", timestamp: "2026-06-15", value: 2 },
          { id: "adm-daily", timestamp: "2026-06-16", value: 2 }
        ]))
        assert.strictEqual(today._tag, "InvalidRecords")
        assert.deepStrictEqual(today.errors.map((e) => e.index), [1])
        assert.include(today.errors[0]!.message, "not complete")
        const computed = yield* refused(ingest.publish([{ id: "h100-na-daily", timestamp: "2026-06-14", value: 2 }]))
        assert.include(computed.errors[0]!.message, "not an administered index")
        const shape = yield* refused(ingest.publish([{ id: "adm-daily", timestamp: "2026-06-14T00:00:00Z", value: 2, p5: 1 }]))
        assert.deepStrictEqual(shape.errors.map((e) => e.message), ["p5: unknown field"])
        // Nothing of a refused batch was stored: the 15th is still unpublished.
        const adm = yield* http("/api/v2/gpu/rental/indexes/latest?id=adm-daily", { token: "all" })
        assert.strictEqual(adm.body.data[0].timestamp, "2026-06-14")

        const reference = FIXTURE_DEFINITIONS.find((d) => d.id === "ref-daily")!
        const badRef = yield* refused(ingest.define([{ ...reference, id: "ref-bad", inputs: { ...reference.inputs, components: ["h100-na-intraday"] } }]))
        assert.include(badRef.errors[0]!.message, "not a daily rental index of one GPU")
        const retype = yield* refused(ingest.define([{ ...reference, row_type: "intraday", interval: "PT30M" }]))
        assert.include(retype.errors[0]!.message, "cannot change")
        const mismatch = yield* refused(ingest.define([{ ...reference, id: "ref-x", interval: "PT30M" }]))
        assert.include(mismatch.errors[0]!.message, "interval")
        const overlap = yield* refused(ingest.setFleetWeights([
          { gpu_canonical_name: "h100-sxm", weight: 1, valid_from: "2026-06-01T00:00:00.000000Z", valid_to: null },
          { gpu_canonical_name: "h100-sxm", weight: 2, valid_from: "2026-06-05T00:00:00.000000Z", valid_to: null }
        ]))
        assert.deepStrictEqual(overlap.errors.map((e) => e.index), [1])
      }))

    it.effect("defining an index computes it through now; a restatement replaces a range", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(Date.UTC(2026, 5, 16, 0, 5))
        const ingest = yield* IndexIngest
        const base = FIXTURE_DEFINITIONS.find((d) => d.id === "h100-global-daily")!
        const defined = yield* ingest.define([{ ...base, id: "h100-global-late-daily", inputs: { ...base.inputs, starts_at: "2026-06-10" } as typeof base.inputs }])
        assert.deepStrictEqual(defined, { defined: 1, computed: { indices: 1, intervals: 6, values: 6 } })
        const r = yield* http("/api/v2/gpu/rental/indexes/history?id=h100-global-late-daily&start=2026-06-01", { token: "all" })
        assert.deepStrictEqual(r.body.data.map((v: any) => v.timestamp), ["2026-06-10", "2026-06-11", "2026-06-12", "2026-06-13", "2026-06-14", "2026-06-15"])

        // New weights change nothing published until the range is recomputed.
        yield* ingest.setFleetWeights([{ gpu_canonical_name: "h100-sxm", weight: 1, valid_from: "2026-06-01T00:00:00.000000Z", valid_to: null }])
        const ref = (day: string) => Effect.map(
          http(`/api/v2/gpu/rental/indexes/as-of?id=ref-daily&at=${day}`, { token: "all" }), (x) => x.body.data[0].value)
        assert.strictEqual(yield* ref("2026-06-01"), 2.425)
        yield* (yield* IndexComputation).computeRange("2026-06-01", "2026-06-03")
        assert.strictEqual(yield* ref("2026-06-01"), 2.05)
        assert.strictEqual(yield* ref("2026-06-02"), 2.05)
        assert.strictEqual(yield* ref("2026-06-03"), 2.425)
      }))
  })
})
