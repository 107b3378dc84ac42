import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { assertSameEverywhere, seededBackends } from "./support/backends"
import { LLM, seed } from "./support/llm"
import { atNow } from "./support/market"
import { testRedisLayer } from "./support/redis"

/**
 * Differential test of the LLM token price store: the fixture market written through the ingest
 * path into memory, SQLite and Redis reads back as identical replies, page by page to the last
 * page, for every sort in both orders, every filter, as-of instants and history windows.
 */

const SORTS = ["model", "serving_provider", "price_type", "price_usd_per_1m_tokens", "source", "valid_from"]
const SCOPES = [
  "latest?",
  "as-of?at=2026-05-25&",
  "as-of?at=2026-05-31T00:00:00Z&",
  "history?start=2026-05-01&",
  "history?start=2026-05-20T06:00:00Z&end=2026-06-02&"
]
const FILTERS = [
  "model=llama-3.1-70b-instruct",
  "model=gpt-4o,deepseek-v3,mixtral-8x7b-instruct",
  "serving_provider=p-beta",
  "serving_provider=p-alpha,p-delta&model=llama-3.1-70b-instruct",
  "source=openrouter",
  "price_type=output,cached_input",
  "region=eu-west",
  "min_price_usd_per_1m_tokens=1&max_price_usd_per_1m_tokens=3",
  "model_search=llama,deepseek",
  "model_search=wide",
  "exclude_outliers=true&serving_provider=p-delta",
  "exclude_outliers=false",
  "region=nowhere"
]

describe("LLM token prices on Redis equal memory and SQLite", () => {
  layer(testRedisLayer(), { timeout: "240 seconds" })((it) => {
    it.effect("every sort, filter, scope and page size reads the same on every backend", () =>
      Effect.gen(function* () {
        yield* atNow
        const backends = yield* seededBackends("llm-differential", seed)
        let rows = 0
        for (const [i, scope] of SCOPES.entries()) {
          // Every sort in both orders on three scopes, with pages of 40.
          if (i % 2 === 0) for (const by of SORTS) for (const order of ["asc", "desc"]) {
            rows += (yield* assertSameEverywhere(backends, `${LLM}/${scope}sort_by=${by}&sort_order=${order}&page_size=40`)).length
          }
          for (const filter of FILTERS) rows += (yield* assertSameEverywhere(backends, `${LLM}/${scope}${filter}&page_size=6`)).length
        }
        // Pinned by a key: every version of one price, and one exact version.
        const history = yield* assertSameEverywhere(backends, `${LLM}/history?start=2026-05-01&model=gpt-4o&page_size=1000`)
        const one = history[history.length - 1] as { base_price_key: string; price_key: string }
        for (const key of [`base_price_key=${one.base_price_key}`, `price_key=${one.price_key}`]) {
          for (const scope of SCOPES) rows += (yield* assertSameEverywhere(backends, `${LLM}/${scope}${key}&page_size=2`)).length
        }
        yield* assertSameEverywhere(backends, `${LLM}/metadata`)
        // Refusals read the same too.
        yield* assertSameEverywhere(backends, `${LLM}/latest?model=NOT_A_SLUG`)
        yield* assertSameEverywhere(backends, `${LLM}/history?start=2026-05-01`, "current")
        assert.isAbove(rows, 2000, "the plans compared real rows")
      }).pipe(Effect.scoped), 300_000)
  })
})
