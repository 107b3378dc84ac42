import { assert, describe, layer } from "@effect/vitest"
import { LlmTokenPriceMetadata, Problem } from "@gpu-market/core"
import { Effect, Schema } from "effect"
import fc from "fast-check"
import { LLM, llmFixtureLayer } from "./support/llm"
import { atNow, http, type Reply } from "./support/market"

const validProblem = Schema.decodeUnknownSync(Problem, { onExcessProperty: "error" })
const validMetadata = Schema.decodeUnknownSync(LlmTokenPriceMetadata, { onExcessProperty: "error" })

const ENDPOINTS = {
  latest: `${LLM}/latest?model=gpt-4o`,
  asOf: `${LLM}/as-of?at=2026-06-01`,
  asOfEarly: `${LLM}/as-of?at=2026-05-10`,
  history: `${LLM}/history?start=2026-05-01`,
  metadata: `${LLM}/metadata`
} as const

describe("LLM token prices: entitlements, metadata and errors", () => {
  layer(llmFixtureLayer("llm-access"), { timeout: "120 seconds" })((it) => {
    it.effect("entitlement matrix: grant per type, history separately, floors, and 401 without a token", () =>
      Effect.gen(function* () {
        yield* atNow
        // Status of each endpoint for each token; 403s name the refusal.
        const matrix: Record<string, Record<keyof typeof ENDPOINTS, number>> = {
          all: { latest: 200, asOf: 200, asOfEarly: 200, history: 200, metadata: 200 },
          "demo-all": { latest: 200, asOf: 200, asOfEarly: 200, history: 200, metadata: 200 },
          current: { latest: 200, asOf: 403, asOfEarly: 403, history: 403, metadata: 200 },
          "demo-current": { latest: 200, asOf: 403, asOfEarly: 403, history: 403, metadata: 200 },
          since: { latest: 200, asOf: 200, asOfEarly: 403, history: 200, metadata: 200 },
          rolling: { latest: 200, asOf: 403, asOfEarly: 403, history: 200, metadata: 200 },
          rentalOnly: { latest: 403, asOf: 403, asOfEarly: 403, history: 403, metadata: 403 },
          "demo-rental": { latest: 403, asOf: 403, asOfEarly: 403, history: 403, metadata: 403 },
          nope: { latest: 401, asOf: 401, asOfEarly: 401, history: 401, metadata: 401 }
        }
        for (const [token, expected] of Object.entries(matrix)) {
          for (const [endpoint, status] of Object.entries(expected)) {
            const r = yield* http(ENDPOINTS[endpoint as keyof typeof ENDPOINTS], { token })
            assert.strictEqual(r.status, status, `${token} ${endpoint}: ${r.text}`)
            if (status !== 200) validProblem(r.body)
            if (status === 403) assert.strictEqual(r.body.code, "insufficient_entitlement")
          }
        }
        // A token without the type learns nothing about the query: 403 before 422.
        assert.strictEqual((yield* http(`${LLM}/latest?colour=red`, { token: "rentalOnly" })).status, 403)
        // History floors as /metadata reports them.
        const floors: Record<string, string | null> = { all: null, current: "2026-06-15", since: "2026-05-20", rolling: "2026-06-05" }
        for (const [token, floor] of Object.entries(floors)) {
          assert.strictEqual((yield* http(ENDPOINTS.metadata, { token })).body.history_starts_at, floor, token)
        }
        const clamped = yield* http(ENDPOINTS.history, { token: "since" })
        assert.isTrue(clamped.body.meta.window.clamped)
      }))

    it.effect("metadata lists every value the filters accept, every spelling, and the outlier rule", () =>
      Effect.gen(function* () {
        yield* atNow
        const r = yield* http(ENDPOINTS.metadata, { token: "all" })
        assert.strictEqual(r.status, 200)
        const body = validMetadata(r.body)
        assert.strictEqual(body.data_type, "llm_token_prices")
        assert.strictEqual(body.data.price_unit, "usd_per_1m_tokens")
        const byModel = new Map(body.data.models.map((m) => [m.model, m]))
        assert.deepStrictEqual(body.data.models.map((m) => m.model).filter((m) => !m.startsWith("wide-")),
          ["deepseek-v3", "gpt-4o", "llama-3.1-70b-instruct", "mixtral-8x7b-instruct"])
        assert.deepStrictEqual(byModel.get("llama-3.1-70b-instruct"), {
          model: "llama-3.1-70b-instruct", model_family: "llama-3.1", model_creator: "meta",
          model_name_variants: ["Llama 3.1 70B", "Llama-3.1-70B (new)", "Meta Llama Legacy 70B", "Meta-Llama-3.1-70B-Instruct", "llama-v3p1-70b-instruct"],
          currently_listed: true, serving_providers: ["p-alpha", "p-beta", "p-delta", "p-gamma"], price_types: ["cached_input", "input", "output"]
        })
        assert.isFalse(byModel.get("mixtral-8x7b-instruct")!.currently_listed)
        assert.isNull(byModel.get("wide-01")!.model_family)
        assert.deepStrictEqual(body.data.serving_providers, ["p-alpha", "p-beta", "p-delta", "p-gamma", "p-wide"])
        assert.deepStrictEqual(body.data.sources, ["openrouter", "provider-pricing-page"])
        assert.deepStrictEqual(body.data.price_types, ["cached_input", "input", "output"])
        assert.deepStrictEqual(body.data.regions, ["eu-west", "global", "us-east"])
        assert.deepStrictEqual(body.data.metrics, ["tokens"])
        assert.deepStrictEqual(body.data.qualifiers, ["context_gt_128k"])
        assert.deepStrictEqual(body.data.outlier_rule.compared_within, ["model", "price_type", "metric"])
        assert.strictEqual(body.data.outlier_rule.ratio, 5)
        assert.strictEqual(body.data.outlier_rule.min_serving_providers, 3)
        // Every listed value is accepted by its filter and matches rows.
        for (const [param, values] of [["serving_provider", body.data.serving_providers], ["source", body.data.sources],
          ["price_type", body.data.price_types], ["region", body.data.regions]] as const) {
          const h = yield* http(`${LLM}/history?start=2000-01-01&${param}=${values.join(",")}&page_size=1`, { token: "all" })
          assert.strictEqual(h.status, 200, param)
          assert.strictEqual(h.body.data.length, 1)
        }
        const bad = yield* http(`${LLM}/metadata?model=gpt-4o`, { token: "all" })
        assert.strictEqual(bad.status, 422)
      }))

    it.effect("unknown endpoints are 404; other methods 405", () =>
      Effect.gen(function* () {
        yield* atNow
        assert.strictEqual((yield* http(`${LLM}/everything`, { token: "all" })).status, 404)
        const post = yield* http(`${LLM}/latest`, { token: "all", method: "POST" })
        assert.strictEqual(post.status, 405)
        assert.strictEqual(post.headers.get("allow"), "GET")
      }))

    it.effect("property: no query string gives a 500 or a body that is not an envelope or a problem", () =>
      Effect.gen(function* () {
        yield* atNow
        const names = ["model", "model_search", "serving_provider", "source", "price_type", "region", "base_price_key", "price_key",
          "min_price_usd_per_1m_tokens", "max_price_usd_per_1m_tokens", "exclude_outliers", "sort_by", "sort_order", "page_size",
          "page_token", "at", "start", "end", "x"]
        const value = fc.oneof(
          fc.string({ maxLength: 30 }),
          fc.constantFrom("gpt-4o", "llama", "wide", "p-alpha", "true", "false", "1", "0", "-1", "0.5", "1e9", "2026-06-01",
            "2026-06-01T00:00:00Z", "asc", "model", "price_usd_per_1m_tokens", "%", "%zz", ",,", "")
        )
        const query = fc.array(fc.tuple(fc.constantFrom(...names), value), { maxLength: 6 }).map((pairs) =>
          pairs.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join("&"))
        const raw = fc.string({ maxLength: 60 }).map((s) => s.replace(/[#\s]/g, ""))
        const samples = fc.sample(fc.oneof(query, raw), { numRuns: 300, seed: 20261121 })
        let ok = 0
        for (const endpoint of ["latest", "as-of", "history", "metadata"]) {
          for (const q of samples) {
            const r: Reply = yield* http(`${LLM}/${endpoint}?${q}`, { token: "all" })
            assert.isBelow(r.status, 500, `${endpoint}?${q}: ${r.text}`)
            if (r.status === 200) {
              ok++
              assert.property(r.body, endpoint === "metadata" ? "data_type" : "meta")
            } else validProblem(r.body)
          }
        }
        assert.isAbove(ok, 50, "the samples reach the store, not only validation")
      }))
  })
})
