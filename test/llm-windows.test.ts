import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { LLM, llmFixtureLayer } from "./support/llm"
import { atNow, http } from "./support/market"
import { assertTokenKeepsMovedFloor, assertWindowsTile } from "./support/windows"

const history = (query: string, token = "all") => http(`${LLM}/history?${query}&page_size=1000&sort_by=valid_from&sort_order=asc`, { token })
const asOf = (at: string, query = "", token = "all") => http(`${LLM}/as-of?at=${encodeURIComponent(at)}&page_size=1000${query}`, { token })
const keys = (r: { body: any }): Array<string> => r.body.data.map((row: any) => row.price_key)

describe("LLM token prices windows and as-of", () => {
  layer(llmFixtureLayer("llm-windows"), { timeout: "120 seconds" })((it) => {
    it.effect("[a,b) + [b,c) is exactly [a,c), for datetimes and bare dates", () =>
      Effect.gen(function* () {
        yield* atNow
        yield* assertWindowsTile(history, keys, [
          ["2026-05-03T00:00:00Z", "2026-05-12T00:00:00Z", "2026-05-25T00:00:00Z"],
          ["2026-05-03T06:00:00+06:00", "2026-05-12T00:00:00.000001Z", "2026-05-25"]
        ])
      }))

    it.effect("history holds the rows whose price changed in the window, not those merely in force", () =>
      Effect.gen(function* () {
        yield* atNow
        const r = yield* history("start=2026-05-14&end=2026-05-14")
        assert.deepStrictEqual(r.body.meta.window, {
          start: "2026-05-14T00:00:00.000000Z", end: "2026-05-15T00:00:00.000000Z", clamped: false, history_starts_at: null
        })
        assert.isAbove(r.body.data.length, 0)
        assert.isTrue(r.body.data.every((row: any) => row.valid_from === "2026-05-14T00:00:00.000000Z"))
        const inForce = yield* asOf("2026-05-14T12:00:00Z")
        assert.isBelow(r.body.data.length, inForce.body.data.length)
      }))

    it.effect("defaults: end is now and start is 90 days before", () =>
      Effect.gen(function* () {
        yield* atNow
        const r = yield* history("model=gpt-4o")
        assert.deepStrictEqual(r.body.meta.window, {
          start: "2026-03-17T12:00:00.000000Z", end: "2026-06-15T12:00:00.000000Z", clamped: false, history_starts_at: null
        })
        // The fixture starts on 2026-05-01, well inside the default span.
        const all = yield* history("model=gpt-4o&start=2000-01-01")
        assert.deepStrictEqual(keys(r), keys(all))
      }))

    it.effect("as-of: a bare date is the end of that day; a change at an instant is in force from it, not before", () =>
      Effect.gen(function* () {
        yield* atNow
        const endOfDay = yield* asOf("2026-05-13")
        assert.strictEqual(endOfDay.body.meta.as_of, "2026-05-13T23:59:59.999999Z")
        assert.deepStrictEqual(keys(endOfDay), keys(yield* asOf("2026-05-13T23:59:59.999999Z")))
        const midnight = yield* asOf("2026-05-14T00:00:00Z")
        const before = yield* asOf("2026-05-13T23:59:59.999999Z")
        // Each priced thing has exactly one row in force at any instant after it was first seen.
        const bases = (r: { body: any }) => r.body.data.map((row: any) => row.base_price_key).sort()
        assert.deepStrictEqual(bases(midnight), bases(before))
        assert.strictEqual(new Set(bases(midnight)).size, bases(midnight).length)
        const changed = midnight.body.data.filter((r: any) => r.valid_from === "2026-05-14T00:00:00.000000Z")
        assert.isAbove(changed.length, 0, "some prices changed exactly at the boundary")
        for (const row of changed) {
          assert.notInclude(keys(before), row.price_key)
          const predecessor = before.body.data.find((r: any) => r.base_price_key === row.base_price_key)
          assert.strictEqual(predecessor.valid_to, "2026-05-14T00:00:00.000000Z")
          assert.notInclude(keys(midnight), predecessor.price_key)
        }
        for (const row of midnight.body.data) {
          assert.isTrue(row.valid_from <= "2026-05-14T00:00:00.000000Z")
          assert.isTrue(row.valid_to === null || row.valid_to > "2026-05-14T00:00:00.000000Z")
        }
        // An offset is honoured: 02:00+02:00 is midnight UTC.
        const offset = yield* asOf("2026-05-14T02:00:00+02:00")
        assert.strictEqual(offset.body.meta.as_of, "2026-05-14T00:00:00.000000Z")
        assert.deepStrictEqual(keys(offset), keys(midnight))
      }))

    it.effect("as-of: a withdrawn model is in force until its withdrawal instant; before any price there is nothing; the future is now", () =>
      Effect.gen(function* () {
        yield* atNow
        const mixtral = (at: string) => asOf(at, "&model=mixtral-8x7b-instruct")
        assert.strictEqual((yield* mixtral("2026-05-30T23:59:59.999999Z")).body.data.length, 4)
        assert.strictEqual((yield* mixtral("2026-05-31T00:00:00Z")).body.data.length, 0)
        const early = yield* asOf("2026-04-30")
        assert.strictEqual(early.status, 200)
        assert.deepStrictEqual(early.body.data, [])
        const future = yield* asOf("2030-01-01")
        assert.strictEqual(future.body.meta.as_of, "2026-06-15T12:00:00.000000Z")
        assert.deepStrictEqual(keys(future), keys(yield* http(`${LLM}/latest?page_size=1000`, { token: "all" })))
      }))

    it.effect("a window below the floor is clamped to it; as-of below it is refused, not moved", () =>
      Effect.gen(function* () {
        yield* atNow
        const r = yield* history("start=2026-05-01", "since")
        assert.deepStrictEqual(r.body.meta.window, {
          start: "2026-05-20T00:00:00.000000Z", end: "2026-06-15T12:00:00.000000Z", clamped: true, history_starts_at: "2026-05-20"
        })
        assert.isTrue(r.body.data.every((row: any) => row.valid_from >= "2026-05-20"))
        const rolling = yield* history("start=2026-05-01", "rolling")
        assert.strictEqual(rolling.body.meta.window.history_starts_at, "2026-06-05")
        assert.isFalse((yield* history("start=2026-06-06", "rolling")).body.meta.window.clamped)
        const refused = yield* asOf("2026-05-19T23:59:59Z", "", "since")
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.body.code, "insufficient_entitlement")
        assert.strictEqual(refused.body.history_starts_at, "2026-05-20")
        assert.strictEqual((yield* asOf("2026-05-20", "", "since")).status, 200)
      }))

    it.effect("a page token cannot carry a caller below a floor that moved", () =>
      Effect.gen(function* () {
        yield* atNow
        yield* assertTokenKeepsMovedFloor(`${LLM}/history`, "start=2026-06-05&page_size=2&sort_by=valid_from&sort_order=asc", "rolling", "valid_from")
      }))

    it.effect("start must be before end; malformed instants are 422", () =>
      Effect.gen(function* () {
        yield* atNow
        for (const q of ["start=2026-05-10&end=2026-05-09", "start=2026-02-30", "end=yesterday", "start=2026-05-10T25:00:00Z"]) {
          const r = yield* history(q)
          assert.strictEqual(r.status, 422, q)
          assert.strictEqual(r.body.code, "validation_failed")
        }
        assert.strictEqual((yield* http(`${LLM}/as-of`, { token: "all" })).status, 422)
      }))
  })
})
