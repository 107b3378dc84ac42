import { assert, describe, layer } from "@effect/vitest"
import { IndexMetadata, Indexes, LegacyAvailableIndexBody, LegacyCurrentIndexBody, Problem } from "@gpu-market/core"
import { requestOrigin } from "@gpu-market/core/adapters"
import { Effect, Schema } from "effect"
import { atIndexNow, FIXTURE_DEFINITIONS, INDEX_TOKENS, indexFixtureLayer, type IndexTokenName } from "./support/indexes"
import { BASE_URL, http, type Reply } from "./support/market"

const strict = <A, I>(schema: Schema.Schema<A, I>) => Schema.decodeUnknownSync(schema, { onExcessProperty: "error" })
const metadataBody = strict(IndexMetadata)
const currentBody = strict(LegacyCurrentIndexBody)
const availableBody = strict(LegacyAvailableIndexBody)
const problem = strict(Problem)

const BASE = "/api/v2/gpu/rental/indexes"
const get = (path: string, token: IndexTokenName) => http(path, { token })
/** A body with its request id blanked, as text: what must match byte for byte. */
const withoutRequestId = (r: Reply) => r.text.replace(r.body.request_id, "<request-id>")

describe("index holdings, entitlements and the legacy endpoints", () => {
  layer(indexFixtureLayer("index-access"), { timeout: "120 seconds" })((it) => {
    it.effect("an id the token does not hold is a 404 byte-for-byte like one that does not exist", () =>
      Effect.gen(function* () {
        yield* atIndexNow
        const paths = [
          (id: string) => `${BASE}/latest?id=${id}`,
          (id: string) => `${BASE}/as-of?id=${id}&at=2026-06-14`,
          (id: string) => `${BASE}/history?id=${id}`,
          (id: string) => `/api/v1/custom-index/current?index_id=${id}`
        ]
        for (const path of paths) {
          const held = yield* get(path("h100-na-daily"), "held")
          assert.notStrictEqual(held.status, 404)
          const notHeld = yield* get(path("a100-na-intraday"), "held")
          const missing = yield* get(path("no-such-index"), "held")
          assert.strictEqual(notHeld.status, 404, notHeld.text)
          assert.strictEqual(problem(notHeld.body).code, "not_found")
          assert.strictEqual(withoutRequestId(notHeld), withoutRequestId(missing))
          assert.notStrictEqual(notHeld.body.request_id, missing.body.request_id)
          assert.deepStrictEqual([...notHeld.headers.keys()].sort(), [...missing.headers.keys()].sort())
          // A token holding nothing sees the same for an index every other token can read.
          assert.strictEqual(withoutRequestId(yield* get(path("h100-na-daily"), "none")), withoutRequestId(missing))
        }
      }))

    it.effect("a page token of an index the caller no longer holds reads nothing", () =>
      Effect.gen(function* () {
        yield* atIndexNow
        const indexes = yield* Indexes
        const origin = requestOrigin(BASE_URL)
        const principal = INDEX_TOKENS.held
        const first = yield* indexes.history({ principal, query: { id: "h100-na-daily", start: "2026-06-01", page_size: "2" }, origin })
        const page_token = first.meta.next!.query_params.page_token!
        assert.strictEqual((yield* indexes.history({ principal, query: { page_token }, origin })).data.length, 12)
        const revoked = yield* indexes.history({ principal: { ...principal, indices: ["h100-na-intraday"] }, query: { page_token }, origin })
        assert.deepStrictEqual(revoked.data, [])
        assert.isNull(revoked.meta.next)
      }))

    it.effect("metadata lists exactly the indices the token holds, as the spec's entries", () =>
      Effect.gen(function* () {
        yield* atIndexNow
        const all = yield* get(`${BASE}/metadata`, "all")
        const body = metadataBody(all.body)
        assert.deepStrictEqual(body.data.indices.map((e) => e.id), FIXTURE_DEFINITIONS.map((d) => d.id).sort())
        assert.strictEqual(body.data.index_units, "usd_per_gpu_per_hr")
        assert.isNull(body.history_starts_at)
        const ref = all.body.data.indices.find((e: any) => e.id === "ref-daily")
        assert.deepStrictEqual(ref, {
          id: "ref-daily", index_type: "reference_price", row_type: "daily", asset: "gpu_compute_rental", tenor: "on_demand",
          publication: "end_of_utc_day", interval: "P1D", title: "Index ref-daily", description: "Test index ref-daily.",
          gpu_family: "all", gpu_group: "fleet", region_group: "na", contract_type: "ondemand", vendor_category: "all", source: "computed"
        })
        assert.strictEqual(all.body.data.indices.find((e: any) => e.id === "adm-daily").source, "administered")
        const held = metadataBody((yield* get(`${BASE}/metadata`, "held")).body)
        assert.deepStrictEqual(held.data.indices.map((e) => e.id), ["h100-na-daily", "h100-na-intraday"])
        const none = yield* get(`${BASE}/metadata`, "none")
        assert.deepStrictEqual(none.body, { data_type: "gpu_rental_indexes", history_starts_at: null, data: { index_units: "usd_per_gpu_per_hr", indices: [] } })
        assert.strictEqual((yield* get(`${BASE}/metadata`, "since")).body.history_starts_at, "2026-06-05")
        assert.strictEqual((yield* get(`${BASE}/metadata`, "rolling")).body.history_starts_at, "2026-06-12")
        assert.strictEqual((yield* get(`${BASE}/metadata`, "current")).body.history_starts_at, "2026-06-15")
        assert.strictEqual((yield* get(`${BASE}/metadata?id=h100-na-daily`, "all")).status, 422)
      }))

    it.effect("entitlement matrix: type grant, history access, holdings and the legacy permission", () =>
      Effect.gen(function* () {
        yield* atIndexNow
        const endpoints: Record<string, string> = {
          latest: `${BASE}/latest?id=h100-na-daily`,
          asOf: `${BASE}/as-of?id=h100-na-daily&at=2026-06-14`,
          history: `${BASE}/history?id=h100-na-daily`,
          metadata: `${BASE}/metadata`,
          current: "/api/v1/custom-index/current",
          currentNamed: "/api/v1/custom-index/current?index_id=h100-na-intraday",
          available: "/api/v1/info-index/available"
        }
        const expected: Record<IndexTokenName, Record<keyof typeof endpoints, number>> = {
          all: { latest: 200, asOf: 200, history: 200, metadata: 200, current: 422, currentNamed: 200, available: 200 },
          held: { latest: 200, asOf: 200, history: 200, metadata: 200, current: 200, currentNamed: 200, available: 200 },
          dailyOnly: { latest: 404, asOf: 404, history: 404, metadata: 200, current: 404, currentNamed: 404, available: 200 },
          none: { latest: 404, asOf: 404, history: 404, metadata: 200, current: 404, currentNamed: 404, available: 200 },
          current: { latest: 200, asOf: 403, history: 403, metadata: 200, current: 422, currentNamed: 200, available: 200 },
          since: { latest: 200, asOf: 200, history: 200, metadata: 200, current: 422, currentNamed: 200, available: 200 },
          rolling: { latest: 200, asOf: 200, history: 200, metadata: 200, current: 422, currentNamed: 200, available: 200 },
          noLegacy: { latest: 200, asOf: 200, history: 200, metadata: 200, current: 403, currentNamed: 403, available: 200 },
          rentalOnly: { latest: 403, asOf: 403, history: 403, metadata: 403, current: 403, currentNamed: 403, available: 403 }
        }
        const got: Record<string, Record<string, number>> = {}
        for (const token of Object.keys(expected) as Array<IndexTokenName>) {
          got[token] = {}
          for (const [name, path] of Object.entries(endpoints)) {
            const r = yield* get(path, token)
            got[token][name] = r.status
            if (r.status !== 200) problem(r.body)
          }
        }
        assert.deepStrictEqual(got, expected)
        // The order of checks: history access is refused before holdings are looked at.
        assert.strictEqual((yield* get(`${BASE}/history?id=no-such-index`, "current")).status, 403)
        assert.strictEqual((yield* get(`${BASE}/history?id=no-such-index&colour=red`, "all")).status, 422)
      }))

    it.effect("legacy current index: the spec's record and wrapper, defaulting to the sole intraday index", () =>
      Effect.gen(function* () {
        yield* atIndexNow
        const r = yield* get("/api/v1/custom-index/current", "held")
        const body = currentBody(r.body)
        assert.deepStrictEqual(Object.keys(r.body), ["data", "filters", "total_count"])
        assert.deepStrictEqual(Object.keys(r.body.data[0]), [
          "blended_value", "contract_type", "gpu_family", "gpu_model", "index_id", "index_name", "index_units", "index_value", "p5", "p95",
          "region_group", "timestamp", "vendor_category"
        ])
        assert.deepStrictEqual(body, {
          data: [{
            blended_value: 2.75, contract_type: "ondemand", gpu_family: "H100", gpu_model: "h100-sxm", index_id: "h100-na-intraday",
            index_name: "Index h100-na-intraday", index_units: "usd_per_gpu_per_hr", index_value: 2.75, p5: 2.525, p95: 2.975,
            region_group: "na", timestamp: "2026-06-15T11:30:00.000000Z", vendor_category: "all"
          }],
          filters: { contract_type: "ondemand", index_id: "h100-na-intraday", region_group: "na", vendor_category: "all" },
          total_count: 1
        })
        // An index over several GPUs reports its gpu_group as gpu_model.
        const ref = currentBody((yield* get("/api/v1/custom-index/current?index_id=ref-intraday", "all")).body)
        assert.strictEqual(ref.data[0]!.gpu_model, "fleet")
        assert.strictEqual(ref.data[0]!.index_value, 2.025)
        // Several intraday indices held: the caller must name one; a daily or administered one is refused.
        const several = yield* get("/api/v1/custom-index/current", "all")
        assert.strictEqual(problem(several.body).errors![0]!.parameter, "index_id")
        assert.include(several.body.detail, "3 computed intraday indices")
        for (const q of ["index_id=h100-na-daily", "index_id=adm-daily", "index_id=Bad!", "index_id=a&index_id=b", "colour=red"]) {
          const bad = yield* get(`/api/v1/custom-index/current?${q}`, "all")
          assert.strictEqual(bad.status, 422, q)
          assert.strictEqual(problem(bad.body).code, "validation_failed")
        }
        const none = yield* get("/api/v1/custom-index/current", "dailyOnly")
        assert.strictEqual(problem(none.body).detail, "this token holds no computed intraday index")
      }))

    it.effect("legacy available indices: the daily indices held, with the days the caller can read", () =>
      Effect.gen(function* () {
        yield* atIndexNow
        const r = yield* get("/api/v1/info-index/available", "all")
        const body = availableBody(r.body)
        assert.deepStrictEqual(Object.keys(r.body), ["data", "total"])
        assert.deepStrictEqual(Object.keys(r.body.data[0]), ["first_date", "gpu_family", "gpu_model", "index_name", "index_units", "last_date", "total_days"])
        // h100-west-daily never published, so it is not available.
        assert.deepStrictEqual(body.data.map((d) => d.index_name), [
          "Index a100-na-daily", "Index adm-daily", "Index h100-global-daily", "Index h100-na-daily", "Index h100-neo-daily", "Index ref-daily"
        ])
        assert.strictEqual(body.total, 6)
        const h100 = (b: typeof body) => b.data.find((d) => d.index_name === "Index h100-na-daily")
        assert.deepStrictEqual(h100(body), {
          first_date: "2026-06-01", gpu_family: "H100", gpu_model: "h100-sxm", index_name: "Index h100-na-daily",
          index_units: "usd_per_gpu_per_hr", last_date: "2026-06-14", total_days: 14
        })
        assert.isNull(body.data.find((d) => d.index_name === "Index ref-daily")!.gpu_model)
        // total_days counts published days: the administrator skipped one.
        assert.strictEqual(body.data.find((d) => d.index_name === "Index adm-daily")!.total_days, 13)
        // A floor starts the range; without history only the latest day is readable.
        const since = availableBody((yield* get("/api/v1/info-index/available", "since")).body)
        assert.deepStrictEqual([h100(since)!.first_date, h100(since)!.total_days], ["2026-06-05", 10])
        assert.strictEqual(since.data.find((d) => d.index_name === "Index adm-daily")!.total_days, 9)
        const rolling = availableBody((yield* get("/api/v1/info-index/available", "rolling")).body)
        assert.deepStrictEqual([h100(rolling)!.first_date, h100(rolling)!.total_days], ["2026-06-12", 3])
        const current = availableBody((yield* get("/api/v1/info-index/available", "current")).body)
        assert.deepStrictEqual([h100(current)!.first_date, h100(current)!.last_date, h100(current)!.total_days], ["2026-06-14", "2026-06-14", 1])
        assert.deepStrictEqual((yield* get("/api/v1/info-index/available", "none")).body, { data: [], total: 0 })
        assert.deepStrictEqual(availableBody((yield* get("/api/v1/info-index/available", "dailyOnly")).body).total, 1)
        assert.strictEqual((yield* get("/api/v1/info-index/available?x=1", "all")).status, 422)
      }))
  })
})
