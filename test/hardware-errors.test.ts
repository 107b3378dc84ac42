import { assert, describe, layer } from "@effect/vitest"
import { Auth, Problem } from "@gpu-market/core"
import * as Demo from "@gpu-market/demo"
import { Effect, Schema } from "effect"
import fc from "fast-check"
import { HW, hardwareLayer } from "./support/hardware"
import { atNow, http, type Reply } from "./support/market"

const validProblem = Schema.decodeUnknownSync(Problem, { onExcessProperty: "error" })
const expectProblem = (r: Reply, status: number, code: string) => {
  assert.strictEqual(r.status, status, r.text)
  assert.strictEqual(r.headers.get("content-type"), "application/problem+json")
  const p = validProblem(r.body)
  assert.strictEqual(p.code, code)
  assert.strictEqual(p.type, `/problems/${code}`)
  return p
}

const PATHS = ["latest", "as-of?at=2026-06-01", "history", "metadata"]

describe("hardware prices entitlements and errors", () => {
  layer(hardwareLayer("hw-errors"), { timeout: "180 seconds" })((it) => {
    it.effect("entitlement matrix: no grant is 403 on all four; current-only is 403 on history and as-of", () =>
      Effect.gen(function* () {
        yield* atNow
        const auth = yield* Auth
        for (const t of Demo.DEMO_TOKENS) yield* auth.issue(t.principal, t.secret)
        const expected: Record<string, ReadonlyArray<number>> = {
          "hw-all": [200, 200, 200, 200],
          "hw-since": [200, 200, 200, 200],
          "hw-current": [200, 403, 403, 200],
          "hw-rental": [403, 403, 403, 403],
          "demo-all": [200, 200, 200, 200],
          "demo-current": [200, 403, 403, 200],
          "demo-rental": [403, 403, 403, 403]
        }
        for (const [token, statuses] of Object.entries(expected)) {
          for (const [i, path] of PATHS.entries()) {
            const r = yield* http(`${HW}/${path}`, { token })
            assert.strictEqual(r.status, statuses[i], `${token} ${path}: ${r.text}`)
            if (r.status === 403) {
              const p = expectProblem(r, 403, "insufficient_entitlement")
              assert.include(p.detail, "gpu_hardware_prices")
            }
          }
        }
        // A caller without access learns nothing about the query's shape: 403 before 422.
        expectProblem(yield* http(`${HW}/latest?country=us`, { token: "hw-rental" }), 403, "insufficient_entitlement")
        expectProblem(yield* http(`${HW}/history?country=us`, { token: "hw-current" }), 403, "insufficient_entitlement")
        expectProblem(yield* http(`${HW}/latest?country=us`, { token: "hw-current" }), 422, "validation_failed")
      }))

    it.effect("401 without a valid token; 404 for unknown paths; 405 for other methods", () =>
      Effect.gen(function* () {
        yield* atNow
        for (const path of PATHS) {
          expectProblem(yield* http(`${HW}/${path}`), 401, "unauthenticated")
          expectProblem(yield* http(`${HW}/${path}`, { token: "nope" }), 401, "unauthenticated")
        }
        expectProblem(yield* http(`${HW}/everything`, { token: "hw-all" }), 404, "not_found")
        const post = yield* http(`${HW}/latest`, { token: "hw-all", method: "POST" })
        expectProblem(post, 405, "method_not_allowed")
        assert.strictEqual(post.headers.get("allow"), "GET")
      }))

    it.effect("property: no query string gives a 500 or a body that is not an envelope or a problem", () =>
      Effect.gen(function* () {
        yield* atNow
        const names = ["gpu_canonical_name", "listing_key", "condition", "market", "channel", "transaction_level", "stock_status",
          "country", "country_group", "min_price_usd", "max_price_usd", "sort_by", "sort_order", "page_size", "page_token", "at",
          "start", "end", "seller", "x"]
        const value = fc.oneof(
          fc.string({ maxLength: 30 }),
          fc.constantFrom("h100-sxm", "used", "primary", "secondary", "US", "us", "ZZ", "europe", "1", "0", "-1", "1e9",
            "99999999999999999999", "2026-06-01", "2026-06-01T00:00:00Z", "9999-12-31", "0000-01-01", "asc", "condition",
            "price_usd", "observed_date", "%", "%zz", ",,", "", "0".repeat(32))
        )
        const query = fc.array(fc.tuple(fc.constantFrom(...names), value), { maxLength: 6 }).map((pairs) =>
          pairs.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join("&"))
        const raw = fc.string({ maxLength: 60 }).map((s) => s.replace(/[#\s]/g, ""))
        const samples = fc.sample(fc.oneof(query, raw), { numRuns: 300, seed: 20261121 })
        for (const endpoint of ["latest", "as-of", "history", "metadata"]) {
          for (const q of samples) {
            const r = yield* http(`${HW}/${endpoint}?${q}`, { token: "hw-all" })
            assert.isBelow(r.status, 500, `${endpoint}?${q}: ${r.text}`)
            if (r.status === 200) assert.property(r.body, endpoint === "metadata" ? "data_type" : "meta")
            else validProblem(r.body)
          }
        }
        // Edges a sample may miss: the widest windows and instants, and positions past every row.
        for (const q of ["history?start=0000-01-01&end=9999-12-31", "as-of?at=0000-01-01", "history?end=0001-01-01",
          "history?start=9999-12-30&end=9999-12-31", "as-of?at=9999-12-31T23:59:59.999999-23:59"]) {
          const r = yield* http(`${HW}/${q}`, { token: "hw-all" })
          assert.isBelow(r.status, 500, `${q}: ${r.text}`)
        }
      }))
  })
})
