import { assert, describe, layer } from "@effect/vitest"
import { Problem, TransactionMetadata } from "@gpu-market/core"
import { Effect, Schema } from "effect"
import fc from "fast-check"
import { atNow, http, type Reply } from "./support/market"
import { follow, TX, txFixtureLayer } from "./support/transactions"

const validProblem = Schema.decodeUnknownSync(Problem, { onExcessProperty: "error" })
const validMetadata = Schema.decodeUnknownSync(TransactionMetadata, { onExcessProperty: "error" })
const ALL = `${TX}/history?start=2026-03-01&page_size=1000`
const sameRows = (a: ReadonlyArray<any>, b: ReadonlyArray<any>) =>
  assert.deepStrictEqual(a.map((r) => r.row_key).sort(), b.map((r) => r.row_key).sort())

describe("aggregated transactions filters, metadata and errors", () => {
  layer(txFixtureLayer("tx-filters"), { timeout: "120 seconds" })((it) => {
    it.effect("each filter alone keeps exactly the rows it names", () =>
      Effect.gen(function* () {
        yield* atNow
        const { rows: all } = yield* follow(ALL)
        assert.isAbove(all.length, 1000)
        const cases: Array<[string, (r: any) => boolean]> = [
          ["gpu_canonical_name=h100-sxm", (r) => r.gpu_canonical_name === "h100-sxm"],
          ["gpu_canonical_name=h100-sxm,b200", (r) => r.gpu_canonical_name === "h100-sxm" || r.gpu_canonical_name === "b200"],
          ["region_group=europe", (r) => r.region_group === "europe"],
          ["region_group=apac,north_america", (r) => r.region_group === "apac" || r.region_group === "north_america"],
          ["contract_type=spot", (r) => r.contract_type === "spot"],
          ["contract_type=reserved,spot", () => true],
          ["min_total_gpu_count=40", (r) => r.total_gpu_count >= 40],
          ["max_total_gpu_count=24", (r) => r.total_gpu_count <= 24],
          ["min_total_gpu_count=24&max_total_gpu_count=24", (r) => r.total_gpu_count === 24],
          ["min_total_gpu_count=24.5", (r) => r.total_gpu_count >= 24.5],
          ["gpu_canonical_name=none-such", () => false],
          ["region_group=mars", () => false],
          ["min_total_gpu_count=50&max_total_gpu_count=40", () => false]
        ]
        for (const [q, keep] of cases) {
          const { rows } = yield* follow(`${ALL}&${q}`)
          const expected = all.filter(keep)
          sameRows(rows, expected)
          if (!q.includes("none") && !q.includes("mars") && !q.startsWith("min_total_gpu_count=50")) {
            assert.isAbove(expected.length, 0, q)
            if (!q.startsWith("contract_type=reserved,spot")) assert.isBelow(expected.length, all.length, q)
          }
        }
        // Blends across region groups carry both groups; the filter matches region_group, the first.
        const crossRegion = all.filter((r) => r.blend_axis === "region_group")
        assert.isAbove(crossRegion.length, 0)
        assert.isTrue(crossRegion.every((r) => r.region_group < r.blend_region_group))
      }))

    it.effect("lists take up to 20 values; 21 is 422 naming the parameter", () =>
      Effect.gen(function* () {
        yield* atNow
        for (const param of ["gpu_canonical_name", "region_group", "contract_type"]) {
          const twenty = ["h100-sxm", "europe", "spot", ...Array.from({ length: 17 }, (_, i) => `x${i}`)].join(",")
          const ok = yield* http(`${TX}/history?${param}=${twenty}`, { token: "tx-all" })
          assert.strictEqual(ok.status, 200, ok.text)
          assert.isAbove(ok.body.data.length, 0)
          const refused = yield* http(`${TX}/history?${param}=${twenty},x99`, { token: "tx-all" })
          assert.strictEqual(refused.status, 422)
          assert.deepStrictEqual([...new Set(refused.body.errors.map((e: any) => e.parameter))], [param])
          assert.include(refused.body.errors[0].message, "1 to 20")
        }
      }))

    it.effect("422 validation_failed names each bad parameter", () =>
      Effect.gen(function* () {
        yield* atNow
        const cases: Array<[string, string]> = [
          ["colour=red", "colour"],
          ["region_group=europe&region_group=apac", "region_group"],
          ["region_group=Europe", "region_group"],
          ["contract_type=,,", "contract_type"],
          ["gpu_canonical_name=H100", "gpu_canonical_name"],
          ["min_total_gpu_count=-1", "min_total_gpu_count"],
          ["max_total_gpu_count=lots", "max_total_gpu_count"],
          ["min_gpu_count=1", "min_gpu_count"],
          ["sort_by=total_gpu_hours", "sort_by"],
          ["sort_by=row_key", "sort_by"],
          ["sort_order=up", "sort_order"],
          ["page_size=1001", "page_size"],
          ["at=2026-06-01", "at"],
          ["vendor=v-alpha", "vendor"]
        ]
        for (const [q, parameter] of cases) {
          const r = yield* http(`${TX}/history?${q}`, { token: "tx-all" })
          assert.strictEqual(r.status, 422, q)
          const p = validProblem(r.body)
          assert.strictEqual(p.code, "validation_failed")
          assert.include(p.errors!.map((e) => e.parameter), parameter, q)
        }
        assert.strictEqual((yield* http(`${TX}/metadata?region_group=europe`, { token: "tx-all" })).status, 422)
      }))

    it.effect("metadata lists the published value sets and per-GPU coverage", () =>
      Effect.gen(function* () {
        yield* atNow
        const r = yield* http(`${TX}/metadata`, { token: "tx-all" })
        assert.strictEqual(r.status, 200)
        const m = validMetadata(r.body)
        assert.strictEqual(m.data_type, "gpu_rental_transactions")
        assert.isNull(m.history_starts_at)
        const { rows } = yield* follow(`${TX}/history?start=2000-01-01&page_size=1000`)
        const distinct = <A>(f: (r: any) => A) => [...new Set(rows.map(f))]
        assert.deepStrictEqual(m.data.region_groups, ["apac", "europe", "north_america"])
        assert.deepStrictEqual(m.data.contract_types, ["reserved", "spot"])
        assert.deepStrictEqual(m.data.tenors, [30, 90, 180, 365])
        assert.sameMembers([...m.data.region_groups], distinct((r) => r.region_group))
        assert.sameMembers([...m.data.tenors], distinct((r) => r.tenor_days))
        assert.deepStrictEqual(m.data.blend_axes, ["none", "tenor", "region_group"])
        assert.sameMembers([...m.data.blend_axes], distinct((r) => r.blend_axis))
        assert.deepStrictEqual(m.data.gpus.map((g) => g.gpu_canonical_name), ["a100-sxm-80gb", "b200", "h100-sxm"])
        for (const g of m.data.gpus) {
          const mine = rows.filter((r) => r.gpu_canonical_name === g.gpu_canonical_name)
          const dates = mine.map((r) => r.transaction_date).sort()
          assert.deepStrictEqual(g, {
            gpu_canonical_name: g.gpu_canonical_name, gpu_model: mine[0].gpu_model,
            first_transaction_date: dates[0], last_transaction_date: dates[dates.length - 1], rows: mine.length
          })
        }
      }))

    it.effect("property: no query string gives a 500 or a body that is not an envelope, metadata or a problem", () =>
      Effect.gen(function* () {
        yield* atNow
        const names = ["gpu_canonical_name", "region_group", "contract_type", "min_total_gpu_count", "max_total_gpu_count",
          "sort_by", "sort_order", "page_size", "page_token", "start", "end", "at", "x"]
        const value = fc.oneof(
          fc.string({ maxLength: 30 }),
          fc.constantFrom("h100-sxm", "europe", "spot", "1", "0", "-1", "1e9", "99999999999999999999", "2026-06-01",
            "2026-06-01T00:00:00Z", "asc", "tenor_days", "transaction_date", "%", "%zz", ",,", "")
        )
        const query = fc.array(fc.tuple(fc.constantFrom(...names), value), { maxLength: 6 }).map((pairs) =>
          pairs.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join("&"))
        const raw = fc.string({ maxLength: 60 }).map((s) => s.replace(/[#\s]/g, ""))
        const samples = fc.sample(fc.oneof(query, raw), { numRuns: 300, seed: 20260615 })
        for (const endpoint of ["history", "metadata", "latest", "as-of"]) {
          for (const q of samples) {
            const r: Reply = yield* http(`${TX}/${endpoint}?${q}`, { token: "tx-all" })
            assert.isBelow(r.status, 500, `${endpoint}?${q}: ${r.text}`)
            if (r.status === 200) assert.property(r.body, endpoint === "metadata" ? "data_type" : "meta")
            else validProblem(r.body)
          }
        }
      }))
  })
})
