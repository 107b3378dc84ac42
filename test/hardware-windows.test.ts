import { assert, describe, layer } from "@effect/vitest"
import { HardwarePriceIngest } from "@gpu-market/core"
import { Effect } from "effect"
import { fixtureRows, HW, HW_GPUS, HW_LAST_DAY, HW_LISTINGS, hardwareLayer, hwDate, listingRef, seenOn } from "./support/hardware"
import { atNow, http } from "./support/market"
import { assertTokenKeepsMovedFloor, assertWindowsTile } from "./support/windows"

const history = (query: string, token = "hw-all") =>
  http(`${HW}/history?${query}&page_size=1000&sort_by=observed_date&sort_order=asc`, { token })
const ids = (r: { body: any }): Array<string> => r.body.data.map((row: any) => row.observation_id)

/** The observation ids the fixture holds for days in `[first, last]`, in the order history returns them. */
const expectedIds = (key: (l: number) => string, first: number, last: number, listing = (_: number) => true) =>
  fixtureRows().filter((r) => r.day >= first && r.day <= last && listing(r.listing)).map((r) => `${key(r.listing)}:${hwDate(r.day)}`)
    .sort((a, b) => (a.slice(33) < b.slice(33) ? -1 : a.slice(33) > b.slice(33) ? 1 : a < b ? -1 : a > b ? 1 : 0))

/** Each listing's newest seen day on or before `day`, as observation ids. */
const newestOnOrBefore = (key: (l: number) => string, day: number) => {
  const out: Array<string> = []
  for (let l = 0; l < HW_LISTINGS; l++) {
    for (let d = Math.min(day, HW_LAST_DAY); d >= 0; d--) {
      if (seenOn(l, d)) {
        out.push(`${key(l)}:${hwDate(d)}`)
        break
      }
    }
  }
  return out.sort()
}

const dayOf = (date: string) => Math.round((Date.parse(`${date}T00:00:00Z`) - Date.parse(`${hwDate(0)}T00:00:00Z`)) / 86_400_000)

describe("hardware prices windows and as-of", () => {
  layer(hardwareLayer("hw-windows"), { timeout: "180 seconds" })((it) => {
    const keyOf = Effect.map(HardwarePriceIngest, (ingest) => (l: number) => ingest.listingKey(listingRef(l)))

    it.effect("a day is in [start, end) when its midnight UTC is; [a,b) + [b,c) is exactly [a,c)", () =>
      Effect.gen(function* () {
        yield* atNow
        const key = yield* keyOf
        yield* assertWindowsTile(history, ids, [
          ["2026-03-03T00:00:00Z", "2026-03-10T00:00:00Z", "2026-03-20T00:00:00Z"],
          ["2026-03-03T06:00:00+06:00", "2026-03-10T00:00:00.000001Z", "2026-03-21"],
          ["2026-03-03", "2026-03-09T23:59:59Z", "2026-03-20T12:00:00-05:00"]
        ])
        // 2026-03-10 starts at its midnight: a window starting a microsecond later misses it,
        // and a window ending a microsecond later holds it.
        const later = yield* history("start=2026-03-10T00:00:00.000001Z&end=2026-03-12")
        assert.deepStrictEqual(ids(later), expectedIds(key, dayOf("2026-03-11"), dayOf("2026-03-12")))
        const through = yield* history("start=2026-03-09&end=2026-03-10T00:00:00.000001Z")
        assert.deepStrictEqual(ids(through), expectedIds(key, dayOf("2026-03-09"), dayOf("2026-03-10")))
      }))

    it.effect("a bare start is that midnight, a bare end the next one; a listing not seen on a day has no row that day", () =>
      Effect.gen(function* () {
        yield* atNow
        const key = yield* keyOf
        const r = yield* history("start=2026-04-10&end=2026-04-10")
        assert.deepStrictEqual(r.body.meta.window, {
          start: "2026-04-10T00:00:00.000000Z", end: "2026-04-11T00:00:00.000000Z", clamped: false, history_starts_at: null
        })
        const day = dayOf("2026-04-10")
        const seen = Array.from({ length: HW_LISTINGS }, (_, l) => l).filter((l) => seenOn(l, day))
        assert.isBelow(seen.length, HW_LISTINGS, "some listings were not seen that day")
        assert.sameMembers(ids(r), seen.map((l) => `${key(l)}:2026-04-10`))
        assert.isTrue(r.body.data.every((row: any) => row.observed_date === "2026-04-10"))
      }))

    it.effect("defaults: end is now and start is 90 days before", () =>
      Effect.gen(function* () {
        yield* atNow
        const key = yield* keyOf
        const r = yield* history("gpu_canonical_name=l40s")
        assert.deepStrictEqual(r.body.meta.window, {
          start: "2026-03-17T12:00:00.000000Z", end: "2026-06-15T12:00:00.000000Z", clamped: false, history_starts_at: null
        })
        assert.deepStrictEqual(ids(r), expectedIds(key, dayOf("2026-03-18"), HW_LAST_DAY, (l) => HW_GPUS[l % HW_GPUS.length] === "l40s"))
        assert.strictEqual(r.body.data[0].observed_date, "2026-03-18")
        assert.strictEqual(r.body.data[r.body.data.length - 1].observed_date, "2026-06-15")
      }))

    it.effect("a start below the floor is raised to it and reported; a token cannot carry a caller below a moved floor", () =>
      Effect.gen(function* () {
        yield* atNow
        const r = yield* history("start=2026-02-01", "hw-since")
        assert.deepStrictEqual(r.body.meta.window, {
          start: "2026-05-01T00:00:00.000000Z", end: "2026-06-15T12:00:00.000000Z", clamped: true, history_starts_at: "2026-05-01"
        })
        assert.strictEqual(r.body.data[0].observed_date, "2026-05-01")
        const rolling = yield* history("start=2026-02-01", "hw-rolling")
        assert.strictEqual(rolling.body.meta.window.history_starts_at, "2026-06-05")
        assert.isTrue(rolling.body.data.every((row: any) => row.observed_date >= "2026-06-05"))
        yield* assertTokenKeepsMovedFloor(`${HW}/history`, "start=2026-06-05&page_size=3&sort_by=observed_date&sort_order=asc", "hw-rolling", "observed_date")
      }))

    it.effect("as-of: each listing's most recent observation on or before the date of at", () =>
      Effect.gen(function* () {
        yield* atNow
        const key = yield* keyOf
        const asOf = (at: string) => http(`${HW}/as-of?at=${encodeURIComponent(at)}&page_size=1000`, { token: "hw-all" })
        for (const date of ["2026-02-01", "2026-02-20", "2026-03-15", "2026-04-02", "2026-05-31"]) {
          const r = yield* asOf(date)
          assert.strictEqual(r.status, 200, r.text)
          assert.strictEqual(r.body.meta.as_of, `${date}T23:59:59.999999Z`)
          assert.deepStrictEqual([...ids(r)].sort(), newestOnOrBefore(key, dayOf(date)), date)
          // Any instant of the day answers for the whole day.
          assert.deepStrictEqual(ids(yield* asOf(`${date}T00:00:00Z`)), ids(r))
          assert.deepStrictEqual(ids(yield* asOf(`${date}T13:30:00+02:00`)), ids(r))
        }
        // Listing 0 lives until day 60, a day it skips, so it was last seen on day 59; it stays
        // in later as-of answers with that row.
        const late = yield* asOf("2026-06-01")
        assert.include(ids(late), `${key(0)}:${hwDate(59)}`)
        // Listings appear: before a listing's first day it has no row.
        const early = yield* asOf(hwDate(3))
        assert.isFalse(ids(early).some((id) => id.startsWith(key(29))), "listing 29 first appears on day 23")
        // Latest is as-of today; the future resolves to now.
        const latest = yield* http(`${HW}/latest?page_size=1000`, { token: "hw-all" })
        assert.deepStrictEqual([...ids(latest)].sort(), newestOnOrBefore(key, HW_LAST_DAY))
        const future = yield* asOf("2031-01-01")
        assert.strictEqual(future.body.meta.as_of, "2026-06-15T12:00:00.000000Z")
        assert.deepStrictEqual(ids(future), ids(latest))
      }))

    it.effect("as-of before the floor is refused, not moved forward", () =>
      Effect.gen(function* () {
        yield* atNow
        const r = yield* http(`${HW}/as-of?at=2026-04-30T23:59:59Z`, { token: "hw-since" })
        assert.strictEqual(r.status, 403)
        assert.strictEqual(r.body.code, "insufficient_entitlement")
        assert.strictEqual(r.body.history_starts_at, "2026-05-01")
        assert.strictEqual((yield* http(`${HW}/as-of?at=2026-05-01`, { token: "hw-since" })).status, 200)
      }))

    it.effect("start must be before end; malformed instants are 422", () =>
      Effect.gen(function* () {
        yield* atNow
        for (const q of ["start=2026-05-10&end=2026-05-09", "start=2026-02-30", "end=yesterday", "start=2026-05-10T25:00:00Z"]) {
          const r = yield* history(q)
          assert.strictEqual(r.status, 422, q)
        }
        assert.strictEqual((yield* http(`${HW}/as-of?at=2026-13-01`, { token: "hw-all" })).status, 422)
        assert.strictEqual((yield* http(`${HW}/as-of`, { token: "hw-all" })).status, 422)
      }))
  })
})
