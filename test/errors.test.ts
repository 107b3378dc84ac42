import { assert, describe, layer } from "@effect/vitest"
import { Auth, type Principal, Problem } from "@gpu-market/core"
import { hashToken } from "@gpu-market/core/storage"
import { TokenStore } from "@gpu-market/core/storage"
import { Effect, Exit, Schema } from "effect"
import fc from "fast-check"
import { atNow, fixtureLayer, http, type Reply, TOKENS } from "./support/market"

const validProblem = Schema.decodeUnknownSync(Problem, { onExcessProperty: "error" })

const expectProblem = (r: Reply, status: number, code: string) => {
  assert.strictEqual(r.status, status, r.text)
  assert.strictEqual(r.headers.get("content-type"), "application/problem+json")
  const p = validProblem(r.body)
  assert.strictEqual(p.status, status)
  assert.strictEqual(p.code, code)
  assert.strictEqual(p.type, `/problems/${code}`)
  assert.isAbove(p.detail.length, 0)
  assert.match(p.request_id, /^[0-9a-f-]{36}$/)
  assert.strictEqual(r.headers.get("x-request-id"), p.request_id)
  return p
}

const LATEST = "/api/v2/gpu/rental/prices/latest"

describe("errors are RFC 9457 problems with the spec's statuses and codes", () => {
  layer(fixtureLayer("errors"), { timeout: "120 seconds" })((it) => {
    it.effect("401: missing, malformed and unknown bearer tokens", () =>
      Effect.gen(function* () {
        yield* atNow
        for (const authorization of [undefined, "", "Basic dXNlcjpwYXNz", "Bearer", "Bearer nope", "Bearer all extra"]) {
          const r = yield* http(`${LATEST}?vendor=v-alpha`, authorization === undefined ? {} : { authorization })
          const p = expectProblem(r, 401, "unauthenticated")
          assert.strictEqual(p.title, "Unauthorized")
          assert.strictEqual(r.headers.get("www-authenticate"), 'Bearer realm="gpu-market"')
        }
        const ok = yield* http(`${LATEST}?vendor=v-alpha`, { authorization: "bearer all" })
        assert.strictEqual(ok.status, 200)
      }))

    it.effect("403: a token without the data type, on every rental endpoint", () =>
      Effect.gen(function* () {
        yield* atNow
        for (const path of ["latest?vendor=v-alpha", "as-of?vendor=v-alpha&at=2026-06-01", "history", "metadata"]) {
          const p = expectProblem(yield* http(`/api/v2/gpu/rental/prices/${path}`, { token: "hardwareOnly" }), 403, "insufficient_entitlement")
          assert.strictEqual(p.title, "Forbidden")
        }
      }))

    it.effect("404 for unknown paths, 405 for other methods on known ones", () =>
      Effect.gen(function* () {
        yield* atNow
        expectProblem(yield* http("/api/v2/gpu/rental/prices/everything", { token: "all" }), 404, "not_found")
        expectProblem(yield* http("/", {}), 404, "not_found")
        for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
          const r = yield* http(`${LATEST}?vendor=v-alpha`, { token: "all", method })
          expectProblem(r, 405, "method_not_allowed")
          assert.strictEqual(r.headers.get("allow"), "GET")
        }
      }))

    it.effect("400 missing_anchor names the anchors; region and contract_type do not anchor", () =>
      Effect.gen(function* () {
        yield* atNow
        for (const q of ["", "?region=us-east", "?contract_type=spot&region=us-east"]) {
          const p = expectProblem(yield* http(`${LATEST}${q}`, { token: "all" }), 400, "missing_anchor")
          assert.deepStrictEqual(p.anchors, ["vendor", "gpu_canonical_name", "gpu_search", "base_product_key", "product_key"])
          for (const a of p.anchors!) assert.include(p.detail, a)
        }
        expectProblem(yield* http("/api/v2/gpu/rental/prices/as-of?at=2026-06-01", { token: "all" }), 400, "missing_anchor")
      }))

    it.effect("422 validation_failed names each bad parameter", () =>
      Effect.gen(function* () {
        yield* atNow
        const cases: Array<[string, string]> = [
          ["vendor=v-alpha&colour=red", "colour"],
          ["vendor=v-alpha&vendor=v-beta", "vendor"],
          ["vendor=v-alpha&page_size=0", "page_size"],
          ["vendor=v-alpha&page_size=1001", "page_size"],
          ["vendor=v-alpha&page_size=ten", "page_size"],
          ["vendor=v-alpha&sort_by=raw_price", "sort_by"],
          ["vendor=v-alpha&sort_order=up", "sort_order"],
          ["vendor=v-alpha&min_price_usd_per_gpu_hour=-1", "min_price_usd_per_gpu_hour"],
          ["vendor=v-alpha&max_gpu_count=lots", "max_gpu_count"],
          ["vendor=v-alpha,,v-beta", "vendor"],
          ["vendor=V-Alpha", "vendor"],
          ["base_product_key=xyz", "base_product_key"],
          ["gpu_search=---", "gpu_search"],
          [`vendor=${Array.from({ length: 21 }, (_, i) => `v${i}`).join(",")}`, "vendor"],
          ["vendor=v-alpha&at=2026-06-01", "at"],
          ["vendor=v-alpha&__proto__=x", "__proto__"],
          ["vendor=v-alpha&constructor=x", "constructor"]
        ]
        for (const [q, parameter] of cases) {
          const p = expectProblem(yield* http(`${LATEST}?${q}`, { token: "all" }), 422, "validation_failed")
          assert.strictEqual(p.title, "Unprocessable Content")
          assert.include(p.errors!.map((e) => e.parameter), parameter, q)
          assert.include(p.detail, parameter)
        }
        const twenty = Array.from({ length: 20 }, (_, i) => `v${i}`).join(",")
        assert.strictEqual((yield* http(`${LATEST}?vendor=${twenty}`, { token: "all" })).status, 200)
        expectProblem(yield* http("/api/v2/gpu/rental/prices/metadata?x=1", { token: "all" }), 422, "validation_failed")
        expectProblem(yield* http("/api/v2/gpu/rental/prices/as-of?vendor=v-alpha", { token: "all" }), 422, "validation_failed")
      }))

    it.effect("a grant's history date must be a real date; a corrupt one reads no history, never all of it", () =>
      Effect.gen(function* () {
        yield* atNow
        const auth = yield* Auth
        const bad = { ...TOKENS.since, id: "t-bad-since" as Principal["id"], grants: { gpu_rental_prices: { history: { _tag: "since" as const, date: "2026-02-30" } } } }
        const refused = yield* Effect.exit(auth.issue(bad, "bad-since"))
        assert.isTrue(Exit.isFailure(refused) && JSON.stringify(refused.cause).includes("ValidationFailed"))
        expectProblem(yield* http(`${LATEST}?vendor=v-alpha`, { token: "bad-since" }), 401, "unauthenticated")
        // Stored behind issue's back (an older release, a hand edit), it still opens no history.
        yield* (yield* TokenStore).put(hashToken("corrupt-since"), bad)
        expectProblem(yield* http("/api/v2/gpu/rental/prices/history?start=2025-01-01", { token: "corrupt-since" }), 403, "insufficient_entitlement")
        assert.strictEqual((yield* http(`${LATEST}?vendor=v-alpha`, { token: "corrupt-since" })).status, 200)
      }))

    it.effect("gpu_search matches every spelling, ignoring case, spaces and punctuation; past 20 GPUs it is refused", () =>
      Effect.gen(function* () {
        yield* atNow
        const gpus = (r: Reply) => [...new Set(r.body.data.map((row: any) => row.gpu_canonical_name))].sort()
        const search = (q: string) => http(`${LATEST}?gpu_search=${encodeURIComponent(q)}&page_size=1000`, { token: "all" })
        assert.deepStrictEqual(gpus(yield* search("h100")), ["h100-sxm"])
        assert.deepStrictEqual(gpus(yield* search("H-100 SXM")), ["h100-sxm"])
        assert.deepStrictEqual(gpus(yield* search("a100-sxm4,l40s")), ["a100-sxm-80gb", "l40s"])
        // v100 is no longer listed: history still resolves the name, latest has no rows for it.
        const v100 = yield* http(`/api/v2/gpu/rental/prices/history?gpu_search=tesla%20v100&start=2026-05-01&page_size=1000`, { token: "all" })
        assert.deepStrictEqual(gpus(v100), ["v100"])
        assert.deepStrictEqual((yield* search("tesla v100")).body.data, [])
        assert.deepStrictEqual((yield* search("nonesuch")).body.data, [])
        // gpu_search narrows gpu_canonical_name rather than widening it.
        const both = yield* http(`${LATEST}?gpu_search=h100&gpu_canonical_name=l40s`, { token: "all" })
        assert.deepStrictEqual(both.body.data, [])
        const p = expectProblem(yield* search("wide"), 400, "search_too_broad")
        assert.include(p.detail, "25")
        assert.strictEqual((yield* search("wide gpu 1")).status, 200)
      }))

    it.effect("429 past the per-token limit, with Retry-After and X-RateLimit-* headers", () =>
      Effect.gen(function* () {
        yield* atNow
        for (let i = 1; i <= 3; i++) {
          const r = yield* http(`${LATEST}?vendor=v-alpha&page_size=1`, { token: "limited" })
          assert.strictEqual(r.status, 200)
          assert.strictEqual(r.headers.get("x-ratelimit-limit"), "3")
          assert.strictEqual(r.headers.get("x-ratelimit-remaining"), String(3 - i))
          assert.strictEqual(r.headers.get("x-ratelimit-reset"), "60")
        }
        const r = yield* http(`${LATEST}?vendor=v-alpha`, { token: "limited" })
        expectProblem(r, 429, "rate_limited")
        assert.strictEqual(r.headers.get("retry-after"), "60")
        assert.strictEqual(r.headers.get("x-ratelimit-remaining"), "0")
        // Error responses after authentication carry the headers too.
        const bad = yield* http(`${LATEST}?vendor=v-alpha&bogus=1`, { token: "all" })
        assert.strictEqual(bad.status, 422)
        assert.isNotNull(bad.headers.get("x-ratelimit-limit"))
      }))

    it.effect("property: no query string gives a 500 or a body that is not an envelope or a problem", () =>
      Effect.gen(function* () {
        yield* atNow
        const names = ["vendor", "gpu_canonical_name", "gpu_search", "region", "contract_type", "availability", "base_product_key",
          "product_key", "min_price_usd_per_gpu_hour", "max_gpu_count", "min_gpu_memory_gb", "sort_by", "sort_order", "page_size",
          "page_token", "at", "start", "end", "x"]
        const value = fc.oneof(
          fc.string({ maxLength: 30 }),
          fc.constantFrom("v-alpha", "h100-sxm", "h100", "1", "0", "-1", "1e9", "2026-06-01", "2026-06-01T00:00:00Z", "asc", "vendor", "%", "%zz", ",,", "")
        )
        const query = fc.array(fc.tuple(fc.constantFrom(...names), value), { maxLength: 6 }).map((pairs) =>
          pairs.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join("&"))
        const raw = fc.string({ maxLength: 60 }).map((s) => s.replace(/[#\s]/g, ""))
        const samples = fc.sample(fc.oneof(query, raw), { numRuns: 300, seed: 20261121 })
        for (const endpoint of ["latest", "as-of", "history", "metadata"]) {
          for (const q of samples) {
            const r = yield* http(`/api/v2/gpu/rental/prices/${endpoint}?${q}`, { token: "all" })
            assert.isBelow(r.status, 500, `${endpoint}?${q}: ${r.text}`)
            if (r.status === 200) assert.property(r.body, endpoint === "metadata" ? "data_type" : "meta")
            else validProblem(r.body)
          }
        }
      }))
  })
})
