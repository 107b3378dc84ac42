import { assert, describe, layer } from "@effect/vitest"
import { Problem } from "@gpu-market/core"
import { Effect, Schema } from "effect"
import { atNow, http, type Reply } from "./support/market"
import { follow, TX, txFixtureLayer } from "./support/transactions"
import { assertTokenKeepsMovedFloor } from "./support/windows"

const history = (query: string, token = "tx-all") =>
  http(`${TX}/history?${query}&page_size=1000&sort_by=transaction_date&sort_order=asc`, { token })
const keys = (r: Reply) => r.body.data.map((row: any) => row.row_key)
const validProblem = Schema.decodeUnknownSync(Problem, { onExcessProperty: "error" })

describe("aggregated transactions windows and entitlements", () => {
  layer(txFixtureLayer("tx-windows"), { timeout: "120 seconds" })((it) => {
    it.effect("consecutive windows tile: [a,b) + [b,c) is exactly [a,c), for dates, midnights and instants inside a day", () =>
      Effect.gen(function* () {
        yield* atNow
        const q = (start: string, end: string) => history(`start=${encodeURIComponent(start)}&end=${encodeURIComponent(end)}`)
        // The first window's end and the second's start are one instant (a bare end is the next midnight).
        for (const [a, endA, startB, c] of [
          ["2026-05-03", "2026-05-09", "2026-05-10", "2026-05-20"],
          ["2026-05-03T00:00:00Z", "2026-05-10T00:00:00Z", "2026-05-10T00:00:00Z", "2026-05-20T00:00:00Z"],
          ["2026-05-03T06:00:00+06:00", "2026-05-10T12:30:00Z", "2026-05-10T12:30:00Z", "2026-05-21T00:00:00.000001Z"]
        ]) {
          const ab = yield* q(a!, endA!)
          const bc = yield* q(startB!, c!)
          const ac = yield* q(a!, c!)
          assert.strictEqual(ab.body.meta.window.end, bc.body.meta.window.start)
          assert.isAbove(keys(ab).length, 0)
          assert.isAbove(keys(bc).length, 0)
          assert.deepStrictEqual([...keys(ab), ...keys(bc)], keys(ac))
        }
      }))

    it.effect("a date counts at its 00:00 UTC: a window holds the dates whose midnight is inside it", () =>
      Effect.gen(function* () {
        yield* atNow
        const dates = (r: Reply) => [...new Set(r.body.data.map((row: any) => row.transaction_date))]
        const day = yield* history("start=2026-05-10&end=2026-05-10")
        assert.deepStrictEqual(day.body.meta.window, {
          start: "2026-05-10T00:00:00.000000Z", end: "2026-05-11T00:00:00.000000Z", clamped: false, history_starts_at: null
        })
        assert.deepStrictEqual(dates(day), ["2026-05-10"])
        // 00:00:00.000001 is after the midnight of the 10th: the 10th is out, the 11th's midnight is in.
        const late = yield* history(`start=${encodeURIComponent("2026-05-10T00:00:00.000001Z")}&end=${encodeURIComponent("2026-05-11T12:00:00Z")}`)
        assert.deepStrictEqual(dates(late), ["2026-05-11"])
        const noon = yield* history(`start=${encodeURIComponent("2026-05-10T12:00:00Z")}&end=${encodeURIComponent("2026-05-10T18:00:00Z")}`)
        assert.deepStrictEqual(noon.body.data, [])
        // An offset is honoured: 02:00+02:00 is midnight UTC.
        const offset = yield* history(`start=${encodeURIComponent("2026-05-10T02:00:00+02:00")}&end=2026-05-10`)
        assert.deepStrictEqual(keys(offset), keys(day))
      }))

    it.effect("defaults: end is now and start 90 days before it", () =>
      Effect.gen(function* () {
        yield* atNow
        const { pages, rows } = yield* follow(`${TX}/history?page_size=1000`)
        assert.deepStrictEqual(pages[0]!.body.meta.window, {
          start: "2026-03-17T12:00:00.000000Z", end: "2026-06-15T12:00:00.000000Z", clamped: false, history_starts_at: null
        })
        const dates = rows.map((r) => r.transaction_date).sort()
        assert.strictEqual(dates[0], "2026-03-18")
        assert.strictEqual(dates[dates.length - 1], "2026-06-15")
      }))

    it.effect("a start below the floor is raised to it; a token cannot carry a caller below a floor that moved", () =>
      Effect.gen(function* () {
        yield* atNow
        const since = yield* history("start=2026-03-01", "tx-since")
        assert.deepStrictEqual(since.body.meta.window, {
          start: "2026-05-01T00:00:00.000000Z", end: "2026-06-15T12:00:00.000000Z", clamped: true, history_starts_at: "2026-05-01"
        })
        assert.isTrue(since.body.data.every((row: any) => row.transaction_date >= "2026-05-01"))
        assert.isTrue(since.body.data.some((row: any) => row.transaction_date === "2026-05-01"))
        yield* assertTokenKeepsMovedFloor(`${TX}/history`, "start=2026-06-05&page_size=3&sort_by=transaction_date&sort_order=asc", "tx-rolling", "transaction_date")
      }))

    it.effect("entitlements: history needs the type and historical access; metadata needs the type only", () =>
      Effect.gen(function* () {
        yield* atNow
        const matrix: Array<[string, number, number]> = [
          // token, /history, /metadata
          ["tx-all", 200, 200],
          ["tx-since", 200, 200],
          ["tx-rolling", 200, 200],
          ["tx-current", 403, 200],
          ["tx-rental", 403, 403]
        ]
        for (const [token, historyStatus, metadataStatus] of matrix) {
          const h = yield* http(`${TX}/history`, { token })
          assert.strictEqual(h.status, historyStatus, `${token} history: ${h.text}`)
          const m = yield* http(`${TX}/metadata`, { token })
          assert.strictEqual(m.status, metadataStatus, `${token} metadata: ${m.text}`)
          for (const r of [h, m]) if (r.status === 403) assert.strictEqual(validProblem(r.body).code, "insufficient_entitlement")
        }
        const current = yield* http(`${TX}/history`, { token: "tx-current" })
        assert.isNull(current.body.history_starts_at)
        const floors = Object.fromEntries(yield* Effect.forEach(["tx-all", "tx-since", "tx-rolling", "tx-current"], (token) =>
          Effect.map(http(`${TX}/metadata`, { token }), (r) => [token, r.body.history_starts_at] as const)))
        assert.deepStrictEqual(floors, { "tx-all": null, "tx-since": "2026-05-01", "tx-rolling": "2026-06-05", "tx-current": "2026-06-15" })
        assert.strictEqual((yield* http(`${TX}/history`)).status, 401)
      }))

    it.effect("/latest and /as-of do not exist for this type: 404 problems, whoever asks", () =>
      Effect.gen(function* () {
        yield* atNow
        for (const path of ["latest", "as-of?at=2026-06-01", "latest?gpu_canonical_name=h100-sxm"]) {
          for (const options of [{ token: "tx-all" }, { token: "tx-rental" }, {}]) {
            const r = yield* http(`${TX}/${path}`, options)
            assert.strictEqual(r.status, 404, `${path} ${JSON.stringify(options)}`)
            assert.strictEqual(r.headers.get("content-type"), "application/problem+json")
            const p = validProblem(r.body)
            assert.strictEqual(p.code, "not_found")
            assert.strictEqual(p.type, "/problems/not_found")
          }
        }
        const post = yield* http(`${TX}/history`, { token: "tx-all", method: "POST" })
        assert.strictEqual(post.status, 405)
      }))

    it.effect("start must be before end; malformed instants are 422", () =>
      Effect.gen(function* () {
        yield* atNow
        for (const q of ["start=2026-05-10&end=2026-05-09", "start=2026-02-30", "end=yesterday", "start=2026-05-10T25:00:00Z"]) {
          const r = yield* history(q)
          assert.strictEqual(r.status, 422, q)
          assert.strictEqual(r.body.code, "validation_failed")
        }
      }))
  })
})
