import { assert, describe, layer } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { atNow, dayIso, fixtureLayer, http, NOW_MS } from "./support/market"
import { assertWindowsTile } from "./support/windows"

const history = (query: string, token = "all") => http(`/api/v2/gpu/rental/prices/history?${query}&page_size=1000&sort_by=valid_from&sort_order=asc`, { token })
const keys = (r: { body: any }) => r.body.data.map((row: any) => row.product_key)

describe("rental prices windows and as-of", () => {
  layer(fixtureLayer("windows"), { timeout: "120 seconds" })((it) => {
    it.effect("[a,b) + [b,c) is exactly [a,c), for datetimes and bare dates", () =>
      Effect.gen(function* () {
        yield* atNow
        yield* assertWindowsTile(history, keys, [
          ["2026-05-03T00:00:00Z", "2026-05-10T00:00:00Z", "2026-05-20T00:00:00Z"],
          ["2026-05-03T06:00:00+06:00", "2026-05-10T00:00:00.000001Z", "2026-05-21"]
        ])
      }))

    it.effect("a bare start is that midnight; a bare end is the next midnight", () =>
      Effect.gen(function* () {
        yield* atNow
        const r = yield* history("start=2026-05-10&end=2026-05-10")
        assert.strictEqual(r.status, 200)
        assert.deepStrictEqual(r.body.meta.window, {
          start: "2026-05-10T00:00:00.000000Z", end: "2026-05-11T00:00:00.000000Z", clamped: false, history_starts_at: null
        })
        // The fixture observes at midnight, so exactly the changes of 2026-05-10 are in.
        assert.isAbove(r.body.data.length, 0)
        assert.isTrue(r.body.data.every((row: any) => row.valid_from === "2026-05-10T00:00:00.000000Z"))
        const same = yield* history("start=2026-05-10T00:00:00Z&end=2026-05-11T00:00:00Z")
        assert.deepStrictEqual(keys(same), keys(r))
      }))

    it.effect("defaults: end is now and start is 30 days before", () =>
      Effect.gen(function* () {
        yield* atNow
        const r = yield* history("vendor=v-alpha")
        assert.deepStrictEqual(r.body.meta.window, {
          start: "2026-05-16T12:00:00.000000Z", end: "2026-06-15T12:00:00.000000Z", clamped: false, history_starts_at: null
        })
        assert.isTrue(r.body.data.every((row: any) => row.valid_from >= "2026-05-16T12" && row.vendor === "v-alpha"))
      }))

    it.effect("a start below the floor is raised to it and reported; rows never come from below it", () =>
      Effect.gen(function* () {
        yield* atNow
        const r = yield* history("start=2026-05-01", "since")
        assert.deepStrictEqual(r.body.meta.window, {
          start: "2026-05-20T00:00:00.000000Z", end: "2026-06-15T12:00:00.000000Z", clamped: true, history_starts_at: "2026-05-20"
        })
        assert.isTrue(r.body.data.every((row: any) => row.valid_from >= "2026-05-20"))
        const rolling = yield* history("start=2026-05-01", "rolling")
        assert.strictEqual(rolling.body.meta.window.history_starts_at, "2026-06-05")
        assert.isTrue(rolling.body.meta.window.clamped)
        const inside = yield* history("start=2026-06-06", "rolling")
        assert.isFalse(inside.body.meta.window.clamped)
      }))

    it.effect("a page token cannot carry a caller below a floor that moved", () =>
      Effect.gen(function* () {
        yield* atNow
        const query = "/api/v2/gpu/rental/prices/history?start=2026-06-05&sort_by=valid_from&sort_order=asc"
        const first = yield* http(`${query}&page_size=3`, { token: "rolling" })
        assert.isFalse(first.body.meta.window.clamped)
        // Five days on, the rolling floor is 2026-06-10: rows between page 1 and it must not leak.
        const all = yield* http(`${query}&page_size=1000`, { token: "all" })
        const last = first.body.data[2].valid_from
        assert.isTrue(all.body.data.some((r: any) => r.valid_from > last && r.valid_from < "2026-06-10"), "rows lie between")
        yield* TestClock.setTime(NOW_MS + 5 * 86_400_000)
        const next = yield* http(`${first.body.meta.next.path}?page_token=${first.body.meta.next.query_params.page_token}&page_size=1000`, { token: "rolling" })
        assert.strictEqual(next.status, 200)
        assert.isTrue(next.body.meta.window.clamped)
        assert.strictEqual(next.body.meta.window.start, "2026-06-10T00:00:00.000000Z")
        assert.isAbove(next.body.data.length, 0)
        assert.isTrue(next.body.data.every((row: any) => row.valid_from >= "2026-06-10"))
      }))

    it.effect("an as-of page token whose instant fell below a moving floor is refused", () =>
      Effect.gen(function* () {
        yield* atNow
        const first = yield* http("/api/v2/gpu/rental/prices/as-of?vendor=v-alpha&at=2026-06-06&page_size=2", { token: "rolling" })
        assert.strictEqual(first.status, 200)
        const next = `/api/v2/gpu/rental/prices/as-of?page_token=${first.body.meta.next.query_params.page_token}`
        assert.strictEqual((yield* http(next, { token: "rolling" })).status, 200)
        yield* TestClock.setTime(NOW_MS + 3 * 86_400_000)
        const refused = yield* http(next, { token: "rolling" })
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.body.history_starts_at, "2026-06-08")
      }))

    it.effect("history and as-of need historical access; latest does not", () =>
      Effect.gen(function* () {
        yield* atNow
        for (const path of ["history?vendor=v-alpha", "as-of?vendor=v-alpha&at=2026-06-01"]) {
          const r = yield* http(`/api/v2/gpu/rental/prices/${path}`, { token: "current" })
          assert.strictEqual(r.status, 403)
          assert.strictEqual(r.body.code, "insufficient_entitlement")
        }
        const latest = yield* http("/api/v2/gpu/rental/prices/latest?vendor=v-alpha", { token: "current" })
        assert.strictEqual(latest.status, 200)
        const meta = yield* http("/api/v2/gpu/rental/prices/metadata", { token: "current" })
        assert.strictEqual(meta.body.history_starts_at, "2026-06-15")
      }))

    it.effect("as-of: rows in force at the instant; a bare date is the end of that day", () =>
      Effect.gen(function* () {
        yield* atNow
        const asOf = (at: string) => http(`/api/v2/gpu/rental/prices/as-of?vendor=v-beta&at=${encodeURIComponent(at)}&page_size=1000`, { token: "all" })
        const endOfDay = yield* asOf("2026-05-10")
        assert.strictEqual(endOfDay.body.meta.as_of, "2026-05-10T23:59:59.999999Z")
        const explicit = yield* asOf("2026-05-10T23:59:59.999999Z")
        assert.deepStrictEqual(keys(endOfDay), keys(explicit))
        const nextMidnight = yield* asOf("2026-05-11T00:00:00Z")
        const oneBefore = yield* asOf("2026-05-10T23:59:59.999999Z")
        // Every product has exactly one row in force at any instant after it was first seen.
        assert.strictEqual(keys(nextMidnight).length, keys(oneBefore).length)
        for (const row of nextMidnight.body.data) {
          assert.isTrue(row.valid_from <= "2026-05-11T00:00:00.000000Z")
          assert.isTrue(row.valid_to === null || row.valid_to > "2026-05-11T00:00:00.000000Z")
        }
        const changedAtMidnight = nextMidnight.body.data.filter((r: any) => r.valid_from === "2026-05-11T00:00:00.000000Z")
        assert.isAbove(changedAtMidnight.length, 0, "some prices changed exactly at the boundary")
        for (const row of changedAtMidnight) assert.notInclude(keys(oneBefore), row.product_key)
        // An offset is honoured: 2026-05-11T02:00+02:00 is the same instant as midnight UTC.
        const offset = yield* asOf("2026-05-11T02:00:00+02:00")
        assert.strictEqual(offset.body.meta.as_of, "2026-05-11T00:00:00.000000Z")
        assert.deepStrictEqual(keys(offset), keys(nextMidnight))
        // A discontinued GPU is in force before it was withdrawn, and not after.
        const v100 = (at: string) => http(`/api/v2/gpu/rental/prices/as-of?gpu_canonical_name=v100&at=${at}`, { token: "all" })
        assert.isAbove((yield* v100(dayIso(29).slice(0, 10))).body.data.length, 0)
        assert.strictEqual((yield* v100(dayIso(31).slice(0, 10))).body.data.length, 0)
        // The future resolves to now.
        const future = yield* asOf("2030-01-01")
        assert.strictEqual(future.body.meta.as_of, "2026-06-15T12:00:00.000000Z")
      }))

    it.effect("as-of before the floor is refused, not moved forward", () =>
      Effect.gen(function* () {
        yield* atNow
        const r = yield* http("/api/v2/gpu/rental/prices/as-of?vendor=v-beta&at=2026-05-19T23:59:59Z", { token: "since" })
        assert.strictEqual(r.status, 403)
        assert.strictEqual(r.body.code, "insufficient_entitlement")
        assert.strictEqual(r.body.history_starts_at, "2026-05-20")
        const ok = yield* http("/api/v2/gpu/rental/prices/as-of?vendor=v-beta&at=2026-05-20", { token: "since" })
        assert.strictEqual(ok.status, 200)
      }))

    it.effect("start must be before end; malformed instants are 422", () =>
      Effect.gen(function* () {
        yield* atNow
        for (const q of ["start=2026-05-10&end=2026-05-09", "start=2026-05-10T00:00:00Z&end=2026-05-10T00:00:00Z", "start=2026-02-30", "end=yesterday", "start=2026-05-10T25:00:00Z"]) {
          const r = yield* history(q)
          assert.strictEqual(r.status, 422, q)
          assert.strictEqual(r.body.code, "validation_failed")
        }
      }))
  })
})
