import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { atIndexNow, indexFixtureLayer } from "./support/indexes"
import { http } from "./support/market"

const asOf = (id: string, at: string, token = "all") =>
  http(`/api/v2/gpu/rental/indexes/as-of?id=${id}&at=${encodeURIComponent(at)}`, { token })

/** The answer's timestamp (null: an empty result) and the resolved instant. */
const answer = (r: { status: number; body: any; text: string }) => {
  assert.strictEqual(r.status, 200, r.text)
  assert.isAtMost(r.body.data.length, 1)
  return { timestamp: r.body.data[0]?.timestamp ?? null, as_of: r.body.meta.as_of }
}

describe("index as-of: the spec's four rules at interval edges", () => {
  layer(indexFixtureLayer("index-asof"), { timeout: "120 seconds" })((it) => {
    it.effect("rule 1: a daily index truncates at to its UTC date and answers with that day or the latest before", () =>
      Effect.gen(function* () {
        yield* atIndexNow
        // A bare date is the end of that day.
        assert.deepStrictEqual(answer(yield* asOf("h100-na-daily", "2026-06-10")), { timestamp: "2026-06-10", as_of: "2026-06-10T23:59:59.999999Z" })
        // Exactly on the day boundary: the date of midnight is the new day.
        assert.deepStrictEqual(answer(yield* asOf("h100-na-daily", "2026-06-10T00:00:00Z")), { timestamp: "2026-06-10", as_of: "2026-06-10T00:00:00.000000Z" })
        // One microsecond before it: the day before.
        assert.deepStrictEqual(answer(yield* asOf("h100-na-daily", "2026-06-09T23:59:59.999999Z")), { timestamp: "2026-06-09", as_of: "2026-06-09T23:59:59.999999Z" })
        // An offset is converted first: 01:00 at +02:00 is 23:00 UTC the day before.
        assert.deepStrictEqual(answer(yield* asOf("h100-na-daily", "2026-06-10T01:00:00+02:00")), { timestamp: "2026-06-09", as_of: "2026-06-09T23:00:00.000000Z" })
        // Without an offset the time is UTC.
        assert.deepStrictEqual(answer(yield* asOf("h100-na-daily", "2026-06-10T01:00:00")), { timestamp: "2026-06-10", as_of: "2026-06-10T01:00:00.000000Z" })
        const r = yield* asOf("h100-na-daily", "2026-06-10")
        assert.deepStrictEqual(r.body.data, [{ id: "h100-na-daily", type: "daily", timestamp: "2026-06-10", value: 2.8, p5: 2.53, p95: 3.43 }])
      }))

    it.effect("rule 2: an intraday index answers with the last interval completed at or before the instant", () =>
      Effect.gen(function* () {
        yield* atIndexNow
        const id = "h100-na-intraday"
        // Exactly on a boundary: the interval that ends there is complete.
        assert.strictEqual(answer(yield* asOf(id, "2026-06-10T10:30:00Z")).timestamp, "2026-06-10T10:00:00.000000Z")
        // One microsecond before, it is not: the one before.
        assert.strictEqual(answer(yield* asOf(id, "2026-06-10T10:29:59.999999Z")).timestamp, "2026-06-10T09:30:00.000000Z")
        // Inside an interval that started before `at` but ends after it: not complete, so the previous one.
        assert.strictEqual(answer(yield* asOf(id, "2026-06-10T10:15:00Z")).timestamp, "2026-06-10T09:30:00.000000Z")
        // A bare date is 23:59:59.999999: the 23:30 interval ends at midnight, so 23:00 is the last complete one.
        assert.deepStrictEqual(answer(yield* asOf(id, "2026-06-12")), { timestamp: "2026-06-12T23:00:00.000000Z", as_of: "2026-06-12T23:59:59.999999Z" })
        // An offset: 12:30 at +02:00 is 10:30 UTC.
        assert.deepStrictEqual(answer(yield* asOf(id, "2026-06-10T12:30:00+02:00")), { timestamp: "2026-06-10T10:00:00.000000Z", as_of: "2026-06-10T10:30:00.000000Z" })
        const r = yield* asOf(id, "2026-06-10T10:30:00Z")
        assert.deepStrictEqual(r.body.data, [{ id, type: "intraday", timestamp: "2026-06-10T10:00:00.000000Z", value: 2.8, p5: 2.53, p95: 3.43 }])
      }))

    it.effect("rule 3: with nothing published at that moment, the latest earlier value; never empty once one exists", () =>
      Effect.gen(function* () {
        yield* atIndexNow
        // The administrator published nothing for 2026-06-07.
        assert.strictEqual(answer(yield* asOf("adm-daily", "2026-06-07")).timestamp, "2026-06-06")
        assert.strictEqual(answer(yield* asOf("adm-daily", "2026-06-07T12:00:00Z")).timestamp, "2026-06-06")
        // Today (2026-06-15) is not complete, so not published: yesterday.
        assert.deepStrictEqual(answer(yield* asOf("h100-na-daily", "2026-06-15T10:00:00Z")), { timestamp: "2026-06-14", as_of: "2026-06-15T10:00:00.000000Z" })
        // The future resolves to now (12:10): the last complete interval is 11:30.
        assert.deepStrictEqual(answer(yield* asOf("h100-na-intraday", "2030-01-01")), { timestamp: "2026-06-15T11:30:00.000000Z", as_of: "2026-06-15T12:10:00.000000Z" })
        assert.strictEqual(answer(yield* asOf("h100-na-daily", "2030-01-01")).timestamp, "2026-06-14")
        // Before anything was ever published there is nothing to return.
        assert.deepStrictEqual(answer(yield* asOf("h100-na-daily", "2026-05-31")), { timestamp: null, as_of: "2026-05-31T23:59:59.999999Z" })
        assert.strictEqual(answer(yield* asOf("h100-na-intraday", "2026-06-10T00:29:59Z")).timestamp, null)
        assert.strictEqual(answer(yield* asOf("h100-na-intraday", "2026-06-10T00:30:00Z")).timestamp, "2026-06-10T00:00:00.000000Z")
      }))

    it.effect("rule 4: an at before the caller's floor is refused with 403, not moved forward", () =>
      Effect.gen(function* () {
        yield* atIndexNow
        for (const at of ["2026-06-04T23:59:59.999999Z", "2026-06-04", "2026-06-05T01:00:00+02:00"]) {
          const r = yield* asOf("h100-na-daily", at, "since")
          assert.strictEqual(r.status, 403, at)
          assert.strictEqual(r.body.code, "insufficient_entitlement")
          assert.strictEqual(r.body.history_starts_at, "2026-06-05")
        }
        assert.strictEqual(answer(yield* asOf("h100-na-daily", "2026-06-05T00:00:00Z", "since")).timestamp, "2026-06-05")
        // A rolling floor moves with today: three days before 2026-06-15.
        assert.strictEqual((yield* asOf("h100-na-intraday", "2026-06-11T23:59:59Z", "rolling")).status, 403)
        assert.strictEqual(answer(yield* asOf("h100-na-intraday", "2026-06-12T00:30:00Z", "rolling")).timestamp, "2026-06-12T00:00:00.000000Z")
        // "The latest earlier value" never reaches below the floor: at 00:10 the last completed
        // interval is 2026-06-11T23:30, which the caller may not read, so the answer is empty.
        assert.strictEqual(answer(yield* asOf("h100-na-intraday", "2026-06-12T00:10:00Z", "all")).timestamp, "2026-06-11T23:30:00.000000Z")
        assert.isNull(answer(yield* asOf("h100-na-intraday", "2026-06-12T00:10:00Z", "rolling")).timestamp)
        // No historical access at all: as-of is refused whatever the instant.
        const current = yield* asOf("h100-na-daily", "2026-06-14", "current")
        assert.strictEqual(current.status, 403)
        assert.strictEqual(current.body.history_starts_at, null)
      }))
  })
})
