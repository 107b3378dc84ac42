import { assert, describe, layer } from "@effect/vitest"
import * as Demo from "@gpu-market/demo"
import { type LlmTokenPrice, LlmTokenPrices, marketLayer } from "@gpu-market/core"
import { LlmTokenPriceStore } from "@gpu-market/core/storage"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Effect, Layer, Option, TestClock } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const DAY_MS = 86_400_000
/** The first demo "today": 2026-03-10 at 09:00 UTC. */
const TODAY_MS = Date.UTC(2026, 2, 10, 9)
const TODAY = Math.floor(TODAY_MS / DAY_MS)

const demoLayer = () => {
  const dir = mkdtempSync(join(tmpdir(), "gpu-market-llm-demo-"))
  return marketLayer.pipe(Layer.provideMerge(SqliteStorage.layer({ filename: join(dir, "market.db") })))
}

const everything = Effect.flatMap(LlmTokenPriceStore, (s) => s.page({
  scope: { _tag: "window", start: "2000-01-01T00:00:00.000000Z", end: "2100-01-01T00:00:00.000000Z" },
  predicates: [], sort: { by: "valid_from", order: "asc" }, after: undefined, limit: 100_000
}))
const dayOf = (instant: string) => Math.floor(Date.parse(instant) / DAY_MS)

describe("demo LLM market", () => {
  layer(demoLayer(), { timeout: "120 seconds" })((it) => {
    it.effect("the demo seeds at least 120 days of LLM prices ending today, with planted outliers only", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(TODAY_MS)
        // seedDemo calls this with today; the other types' demos are left out to keep the test quick.
        yield* Demo.seedLlmDemo(TODAY)
        const rows = yield* everything
        assert.isAtMost(dayOf(rows[0]!.valid_from), TODAY - 120)
        const current = rows.filter((r) => r.valid_to === null)
        assert.strictEqual(dayOf(rows.reduce((a, r) => (r.valid_from > a ? r.valid_from : a), "")), TODAY)
        const distinct = (f: (r: LlmTokenPrice) => string | null, of = rows) => new Set(of.map(f)).size
        assert.isAtLeast(distinct((r) => r.model), 8)
        assert.isAtLeast(distinct((r) => r.serving_provider), 10)
        for (const model of ["llama-3.1-8b-instruct", "llama-3.1-70b-instruct", "llama-3.1-405b-instruct", "mixtral-8x7b-instruct",
          "deepseek-v3", "qwen-2.5-72b-instruct", "gpt-4o", "claude-3.5-sonnet"]) assert.isTrue(rows.some((r) => r.model === model), model)
        for (const type of ["input", "output", "cached_input", "batch_input"]) assert.isTrue(current.some((r) => r.price_type === type), type)
        assert.isTrue(current.some((r) => r.region !== "global"))
        assert.isTrue(current.some((r) => r.qualifiers === "context_gt_128k"))
        assert.isTrue(current.some((r) => r.currency === "EUR" && r.raw_price_unit === "eur_per_1m_tokens"))
        assert.isAtLeast(distinct((r) => r.source), 2)
        // Prices move now and then, mostly as cuts.
        const versions = new Map<string, Array<LlmTokenPrice>>()
        for (const r of rows) versions.set(r.base_price_key, [...(versions.get(r.base_price_key) ?? []), r])
        assert.isTrue([...versions.values()].some((v) => v.length > 1 && v[v.length - 1]!.price_usd_per_1m_tokens < v[0]!.price_usd_per_1m_tokens))
        // The planted mistakes, and nothing else, are flagged: one still current, one corrected.
        const flagged = rows.filter((r) => r.is_price_outlier)
        assert.deepStrictEqual([...new Set(flagged.map((r) => `${r.serving_provider}/${r.model}/${r.price_type}`))].sort(),
          ["hyperbolic/llama-3.1-405b-instruct/input", "novita/llama-3.1-70b-instruct/output"])
        assert.deepStrictEqual(current.filter((r) => r.is_price_outlier).map((r) => r.serving_provider), ["novita"])
        // A retired model is no longer listed.
        const models = yield* (yield* LlmTokenPriceStore).models
        assert.isFalse(models.find((m) => m.model === "mixtral-8x7b-instruct")!.currently_listed)
        assert.isTrue(models.find((m) => m.model === "gpt-4o")!.currently_listed)
        // The demo tokens reach the type as the server guide (docs/guides/http-server.md) says.
        const demoAll = Demo.DEMO_TOKENS.find((t) => t.secret === "demo-all")!.principal
        const page = yield* (yield* LlmTokenPrices).latest({ principal: demoAll, query: { exclude_outliers: "true", page_size: "1000" }, origin: { origin: "http://x", prefix: "" } })
        assert.strictEqual(page.data.length, current.length - 1)
      }))

    it.effect("re-seeding the same day changes nothing; a later day extends the market without changing the past", () =>
      Effect.gen(function* () {
        yield* Demo.seedLlmDemo(TODAY)
        const before = yield* everything
        yield* Demo.seedLlmDemo(TODAY)
        assert.deepStrictEqual(yield* everything, before)
        yield* Demo.seedLlmDemo(TODAY + 3)
        const after = yield* everything
        // The seed's mark is written by the LLM store, with the day's last rows.
        assert.deepStrictEqual(yield* (yield* LlmTokenPriceStore).mark("demo_llm_seeded_through"), Option.some(String(TODAY + 3)))
        // Every earlier row is still there, unchanged but for valid_to where a price moved since.
        const byKey = new Map(after.map((r) => [r.price_key, r]))
        for (const r of before) {
          const now = byKey.get(r.price_key)!
          assert.deepStrictEqual({ ...now, valid_to: r.valid_to }, r)
          if (r.valid_to !== null) assert.strictEqual(now.valid_to, r.valid_to)
          else if (now.valid_to !== null) assert.isAbove(dayOf(now.valid_to), TODAY)
        }
        const added = after.filter((r) => !before.some((b) => b.price_key === r.price_key))
        assert.isTrue(added.every((r) => dayOf(r.valid_from) > TODAY && dayOf(r.valid_from) <= TODAY + 3))
      }))

    it("prices are a function of the item and the day", () => {
      const day = TODAY - 50
      assert.deepStrictEqual(Demo.demoLlmObservations(day, TODAY), Demo.demoLlmObservations(day, TODAY))
      for (const item of Demo.demoLlmItems()) assert.strictEqual(Demo.demoLlmPrice(item, day), Demo.demoLlmPrice(item, day))
      assert.isAtLeast(Demo.demoLlmItems().length, 100)
    })
  })
})
