import { assert, describe, layer } from "@effect/vitest"
import { Envelope, IndexValueRow, Problem } from "@gpu-market/core"
import { Effect, Schema } from "effect"
import fc from "fast-check"
import { atIndexNow, indexFixtureLayer } from "./support/indexes"
import { http, type Reply } from "./support/market"

const validProblem = Schema.decodeUnknownSync(Problem, { onExcessProperty: "error" })
/** Rows and envelope exactly as the spec: no extra property, nulls present, timestamps in form. */
const validPage = Schema.decodeUnknownSync(Envelope(IndexValueRow), { onExcessProperty: "error" })
const BASE = "/api/v2/gpu/rental/indexes"
const timestamps = (r: Reply) => r.body.data.map((v: any) => v.timestamp)

/** Follows `meta.next` from a first request to the last page. */
const walk = (first: string, token = "all") =>
  Effect.gen(function* () {
    let r = yield* http(first, { token })
    assert.strictEqual(r.status, 200, r.text)
    const rows: Array<any> = [...r.body.data]
    let pages = 1
    while (r.body.meta.next !== null) {
      const next = r.body.meta.next
      assert.strictEqual(next.url, `http://market.test${next.path}?page_token=${next.query_params.page_token}&page_size=${next.query_params.page_size}`)
      r = yield* http(`${next.path}?page_token=${next.query_params.page_token}&page_size=${next.query_params.page_size}`, { token })
      assert.strictEqual(r.status, 200, r.text)
      rows.push(...r.body.data)
      pages++
    }
    return { rows, pages }
  })

describe("index history: paging, windows and robustness", () => {
  layer(indexFixtureLayer("index-paging"), { timeout: "120 seconds" })((it) => {
    it.effect("keyset pages in every sort give exactly the one-page answer", () =>
      Effect.gen(function* () {
        yield* atIndexNow
        for (const [by, order] of [["timestamp", "asc"], ["timestamp", "desc"], ["value", "asc"], ["value", "desc"]] as const) {
          const q = `id=h100-na-intraday&start=2026-06-10&sort_by=${by}&sort_order=${order}`
          const whole = yield* http(`${BASE}/history?${q}&page_size=1000`, { token: "all" })
          validPage(whole.body)
          assert.strictEqual(whole.body.data.length, 264)
          const { rows, pages } = yield* walk(`${BASE}/history?${q}&page_size=25`)
          assert.strictEqual(pages, 11)
          assert.deepStrictEqual(rows, whole.body.data, `${by} ${order}`)
          const dir = order === "asc" ? 1 : -1
          for (let i = 1; i < rows.length; i++) {
            const a = rows[i - 1], b = rows[i]
            const key = (v: any) => (by === "value" ? [v.value, v.timestamp] : [v.timestamp, v.timestamp])
            const [av, at] = key(a), [bv, bt] = key(b)
            assert.isTrue(dir * (av < bv ? -1 : av > bv ? 1 : at < bt ? -1 : at > bt ? 1 : 0) < 0, `${by} ${order} at ${i}`)
          }
        }
      }))

    it.effect("windows are half-open and tile: [a,b) + [b,c) is [a,c), daily and intraday", () =>
      Effect.gen(function* () {
        yield* atIndexNow
        const history = (id: string, start: string, end: string) =>
          http(`${BASE}/history?id=${id}&start=${encodeURIComponent(start)}&end=${encodeURIComponent(end)}&page_size=1000`, { token: "all" })
        for (const [id, a, b, c] of [
          ["h100-na-daily", "2026-06-03", "2026-06-07T12:00:00Z", "2026-06-10"],
          ["h100-na-daily", "2026-06-02T00:00:00Z", "2026-06-06T00:00:00Z", "2026-06-09T00:00:00.000001Z"],
          ["h100-na-intraday", "2026-06-10T10:15:00Z", "2026-06-11T00:00:00.000001Z", "2026-06-12"],
          ["h100-na-intraday", "2026-06-10T12:00:00+02:00", "2026-06-10T10:30:00Z", "2026-06-10T11:30:00Z"]
        ] as const) {
          const ab = yield* history(id, a, b), bc = yield* history(id, b, c), ac = yield* history(id, a, c)
          assert.isAbove(timestamps(ab).length, 0)
          assert.isAbove(timestamps(bc).length, 0)
          assert.deepStrictEqual([...timestamps(ab), ...timestamps(bc)], timestamps(ac), `${id} ${a} ${b} ${c}`)
        }
        // A daily value belongs to the window holding its day's midnight; a bare end takes the whole day.
        assert.deepStrictEqual(timestamps(yield* history("h100-na-daily", "2026-06-03", "2026-06-07T12:00:00Z")),
          ["2026-06-03", "2026-06-04", "2026-06-05", "2026-06-06", "2026-06-07"])
        assert.deepStrictEqual(timestamps(yield* history("h100-na-daily", "2026-06-03T00:00:00.000001Z", "2026-06-04")), ["2026-06-04"])
        assert.deepStrictEqual(timestamps(yield* history("h100-na-intraday", "2026-06-10T10:15:00Z", "2026-06-10T11:00:00Z")),
          ["2026-06-10T10:30:00.000000Z"])
      }))

    it.effect("defaults: 30 days up to now, timestamp ascending; a start below the floor is raised", () =>
      Effect.gen(function* () {
        yield* atIndexNow
        const r = yield* http(`${BASE}/history?id=h100-na-daily`, { token: "all" })
        assert.deepStrictEqual(r.body.meta.window, {
          start: "2026-05-16T12:10:00.000000Z", end: "2026-06-15T12:10:00.000000Z", clamped: false, history_starts_at: null
        })
        assert.deepStrictEqual(r.body.meta.sort, { by: "timestamp", order: "asc" })
        assert.strictEqual(timestamps(r)[0], "2026-06-01")
        assert.strictEqual(timestamps(r).at(-1), "2026-06-14")
        const since = yield* http(`${BASE}/history?id=h100-na-daily&start=2026-06-01`, { token: "since" })
        assert.deepStrictEqual(since.body.meta.window, {
          start: "2026-06-05T00:00:00.000000Z", end: "2026-06-15T12:10:00.000000Z", clamped: true, history_starts_at: "2026-06-05"
        })
        assert.strictEqual(timestamps(since)[0], "2026-06-05")
        for (const id of ["h100-na-daily", "adm-daily", "ref-intraday"]) {
          const page = yield* http(`${BASE}/history?id=${id}&start=2026-06-01`, { token: "all" })
          assert.strictEqual(validPage(page.body).data.length, page.body.data.length)
          assert.isTrue(page.body.data.every((v: any) => "p5" in v && "p95" in v))
        }
        const latest = yield* http(`${BASE}/latest?id=h100-na-daily&sort_order=desc`, { token: "all" })
        assert.deepStrictEqual(latest.body.meta, { page_size: 100, returned: 1, has_more: false, next: null, sort: { by: "timestamp", order: "desc" } })
      }))

    it.effect("page tokens travel alone, are bound to their caller and endpoint, and resist tampering", () =>
      Effect.gen(function* () {
        yield* atIndexNow
        const first = yield* http(`${BASE}/history?id=h100-na-daily&start=2026-06-01&page_size=2`, { token: "all" })
        const token = first.body.meta.next.query_params.page_token
        const status = (path: string, t = "all") => Effect.map(http(path, { token: t }), (r) => r.status)
        assert.strictEqual(yield* status(`${BASE}/history?page_token=${token}&page_size=5`), 200)
        assert.strictEqual(yield* status(`${BASE}/history?page_token=${token}&id=h100-na-daily`), 422)
        assert.strictEqual(yield* status(`${BASE}/history?page_token=${token}`, "since"), 422)
        assert.strictEqual(yield* status(`${BASE}/as-of?page_token=${token}`), 422)
        assert.strictEqual(yield* status(`${BASE}/history?page_token=${token.slice(0, -2)}${token.endsWith("AA") ? "BB" : "AA"}`), 422)
      }))

    it.effect("422 for bad input: missing or listed ids, bad sorts, bad instants, unknown parameters", () =>
      Effect.gen(function* () {
        yield* atIndexNow
        for (const [path, parameter] of [
          ["latest", "id"],
          ["latest?id=h100-na-daily,a100-na-daily", "id"],
          ["latest?id=H100", "id"],
          ["latest?id=h100-na-daily&id=a100-na-daily", "id"],
          ["history?id=h100-na-daily&sort_by=p5", "sort_by"],
          ["history?id=h100-na-daily&sort_order=up", "sort_order"],
          ["history?id=h100-na-daily&start=2026-06-10&end=2026-06-09", "start"],
          ["history?id=h100-na-daily&region=us-east", "region"],
          ["as-of?id=h100-na-daily", "at"],
          ["as-of?id=h100-na-daily&at=2026-02-30", "at"],
          ["latest?id=h100-na-daily&at=2026-06-01", "at"],
          ["latest?id=h100-na-daily&page_size=0", "page_size"]
        ] as const) {
          const r = yield* http(`${BASE}/${path}`, { token: "all" })
          assert.strictEqual(r.status, 422, `${path}: ${r.text}`)
          assert.include(validProblem(r.body).errors!.map((e) => e.parameter), parameter, path)
        }
      }))

    it.effect("property: no query gives a 500, and every answer is an envelope, a body or a problem", () =>
      Effect.gen(function* () {
        yield* atIndexNow
        const names = ["id", "index_id", "at", "start", "end", "sort_by", "sort_order", "page_size", "page_token", "x"]
        const value = fc.oneof(
          fc.string({ maxLength: 30 }),
          fc.constantFrom("h100-na-daily", "h100-na-intraday", "adm-daily", "ref-intraday", "no-such", "2026-06-10", "2026-06-10T10:30:00Z",
            "2026-06-10T10:30:00+14:00", "9999-12-31", "0000-01-01", "timestamp", "value", "asc", "1", "1000", "%", ",", "")
        )
        const query = fc.array(fc.tuple(fc.constantFrom(...names), value), { maxLength: 5 }).map((pairs) =>
          pairs.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join("&"))
        const raw = fc.string({ maxLength: 60 }).map((s) => s.replace(/[#\s]/g, ""))
        const samples = fc.sample(fc.oneof(query, raw), { numRuns: 250, seed: 20260615 })
        const paths = [`${BASE}/latest`, `${BASE}/as-of`, `${BASE}/history`, `${BASE}/metadata`, "/api/v1/custom-index/current", "/api/v1/info-index/available"]
        for (const path of paths) {
          for (const q of samples) {
            for (const token of ["all", "held"]) {
              const r = yield* http(`${path}?${q}`, { token })
              assert.isBelow(r.status, 500, `${path}?${q}: ${r.text}`)
              if (r.status === 200) assert.isObject(r.body)
              else validProblem(r.body)
            }
          }
        }
      }))
  })
})
