import { assert, describe, layer } from "@effect/vitest"
import { Envelope, LlmTokenPriceRow } from "@gpu-market/core"
import { Effect, Schema } from "effect"
import { LLM, llmFixtureLayer } from "./support/llm"
import { atNow, BASE_URL, http } from "./support/market"
import { compare, followPages } from "./support/paging"

const SORTS = ["model", "serving_provider", "price_type", "price_usd_per_1m_tokens", "source", "valid_from"] as const
const validEnvelope = Schema.decodeUnknownSync(Envelope(Schema.encodedSchema(LlmTokenPriceRow)), { onExcessProperty: "error" })

/** Follows `meta.next.url` from the first page to the last, checking each envelope. */
const follow = (first: string, token = "all") =>
  followPages(first, { token, validate: validEnvelope, prefix: `${BASE_URL}/v2/llm/token/prices/`, maxPages: 500 })

describe("LLM token prices paging", () => {
  layer(llmFixtureLayer("llm-paging"), { timeout: "120 seconds" })((it) => {
    for (const by of SORTS) for (const order of ["asc", "desc"] as const) {
      it.effect(`latest, as-of and history: every row exactly once, in order, sorted by ${by} ${order}`, () =>
        Effect.gen(function* () {
          yield* atNow
          for (const base of [
            `${LLM}/latest?sort_by=${by}&sort_order=${order}`,
            `${LLM}/as-of?at=2026-05-25&sort_by=${by}&sort_order=${order}`,
            `${LLM}/history?start=2026-05-01&sort_by=${by}&sort_order=${order}&serving_provider=p-alpha,p-beta,p-gamma,p-delta`
          ]) {
            const all = yield* http(`${base}&page_size=1000`, { token: "all" })
            assert.strictEqual(all.status, 200, all.text)
            assert.isFalse(all.body.meta.has_more)
            const expected = [...all.body.data].sort(compare(by, order, "price_key"))
            assert.deepStrictEqual(all.body.data, expected, "one page is already in order")
            assert.isAbove(expected.length, 20)
            assert.isBelow(new Set(expected.map((r: any) => r[by])).size, expected.length, "the sort key has ties")
            const pages = yield* follow(`${base}&page_size=7`)
            assert.isTrue(pages.slice(0, -1).every((p) => p.body.data.length === 7))
            assert.deepStrictEqual(pages.flatMap((p) => p.body.data), expected)
            assert.deepStrictEqual(pages[0]!.body.meta.sort, { by, order })
          }
        }))
    }

    it.effect("defaults: latest and as-of sort by model asc, history by valid_from desc; no anchor is needed", () =>
      Effect.gen(function* () {
        yield* atNow
        const latest = yield* http(`${LLM}/latest`, { token: "all" })
        assert.strictEqual(latest.status, 200, latest.text)
        assert.deepStrictEqual(latest.body.meta.sort, { by: "model", order: "asc" })
        assert.strictEqual(latest.body.meta.page_size, 100)
        const asOf = yield* http(`${LLM}/as-of?at=2026-06-01`, { token: "all" })
        assert.deepStrictEqual(asOf.body.meta.sort, { by: "model", order: "asc" })
        const history = yield* http(`${LLM}/history`, { token: "all" })
        assert.deepStrictEqual(history.body.meta.sort, { by: "valid_from", order: "desc" })
      }))

    it.effect("filters travel in the token: later pages keep them, and page_size may change", () =>
      Effect.gen(function* () {
        yield* atNow
        const q = `${LLM}/latest?model=llama-3.1-70b-instruct&exclude_outliers=true&sort_by=price_usd_per_1m_tokens`
        const all = yield* http(`${q}&page_size=1000`, { token: "all" })
        const first = yield* http(`${q}&page_size=3`, { token: "all" })
        const token = first.body.meta.next.query_params.page_token
        const rest = yield* http(`${LLM}/latest?page_token=${token}&page_size=1000`, { token: "all" })
        assert.strictEqual(rest.status, 200)
        assert.strictEqual(rest.body.meta.page_size, 1000)
        assert.deepStrictEqual([...first.body.data, ...rest.body.data], all.body.data)
        assert.isTrue(all.body.data.every((r: any) => r.model === "llama-3.1-70b-instruct" && !r.is_price_outlier))
      }))

    it.effect("a page_token beside anything but page_size, or from another caller or endpoint, is 422", () =>
      Effect.gen(function* () {
        yield* atNow
        const first = yield* http(`${LLM}/latest?page_size=2`, { token: "all" })
        const token = first.body.meta.next.query_params.page_token
        for (const extra of ["model=gpt-4o", "exclude_outliers=true", "model_search=llama", "sort_by=model"]) {
          const r = yield* http(`${LLM}/latest?page_token=${token}&${extra}`, { token: "all" })
          assert.strictEqual(r.status, 422)
          assert.strictEqual(r.body.errors[0].parameter, extra.split("=")[0])
        }
        for (const [path, caller] of [[`${LLM}/latest?page_token=${token}`, "other"], [`${LLM}/history?page_token=${token}`, "all"],
          [`/api/v2/gpu/rental/prices/latest?page_token=${token}`, "demo-all"]] as const) {
          const r = yield* http(path, { token: caller })
          assert.strictEqual(r.status, 422, path)
          assert.strictEqual(r.body.errors[0].parameter, "page_token")
        }
      }))
  })
})
