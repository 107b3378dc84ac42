import { assert, describe, it } from "@effect/vitest"
import {
  basePriceKey, InvalidRecords, LlmTokenPriceIngest, type LlmTokenPriceObservationInput, marketLayer, priceKey
} from "@gpu-market/core"
import { LlmTokenPriceStore } from "@gpu-market/core/storage"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Effect, Exit, Layer } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const fresh = () => {
  const dir = mkdtempSync(join(tmpdir(), "gpu-market-llm-ingest-"))
  return marketLayer.pipe(Layer.provideMerge(SqliteStorage.layer({ filename: join(dir, "market.db") })))
}

const obs = (over: Partial<LlmTokenPriceObservationInput> = {}): LlmTokenPriceObservationInput => ({
  source: "provider-pricing-page", model: "llama-3.1-70b-instruct", model_name: "Meta-Llama-3.1-70B-Instruct-Turbo",
  model_family: "llama-3.1", model_creator: "meta", serving_provider: "together", price_type: "input",
  price_usd_per_1m_tokens: 0.88, raw_price: 0.88, raw_price_unit: "usd_per_1m_tokens", currency: "USD",
  extracted_at: "2026-06-01T00:00:00Z", ...over
})

const everything = Effect.flatMap(LlmTokenPriceStore, (s) => s.page({
  scope: { _tag: "window", start: "2000-01-01T00:00:00.000000Z", end: "2100-01-01T00:00:00.000000Z" },
  predicates: [], sort: { by: "valid_from", order: "asc" }, after: undefined, limit: 10_000
}))

const refusal = (exit: Exit.Exit<unknown, unknown>) => {
  assert.isTrue(Exit.isFailure(exit))
  const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
  assert.instanceOf(error, InvalidRecords)
  return error as InvalidRecords
}

describe("LLM token price write path", () => {
  it.effect("an unchanged price touches nothing; a change closes the row and opens one, keeping the base key", () =>
    Effect.gen(function* () {
      const ingest = yield* LlmTokenPriceIngest
      assert.deepStrictEqual(yield* ingest.ingest([obs()]), { received: 1, opened: 1, closed: 0, unchanged: 0, duplicates: 0, flagged: 0, reflagged: 0 })
      const [v1] = yield* everything
      assert.deepStrictEqual(v1, {
        source: "provider-pricing-page", model: "llama-3.1-70b-instruct", model_name: "Meta-Llama-3.1-70B-Instruct-Turbo",
        model_family: "llama-3.1", model_creator: "meta", serving_provider: "together", price_type: "input", region: "global",
        metric: "tokens", qualifiers: null, price_usd_per_1m_tokens: 0.88, raw_price: 0.88, raw_price_unit: "usd_per_1m_tokens",
        currency: "USD", is_price_outlier: false, valid_from: "2026-06-01T00:00:00.000000Z", valid_to: null,
        extracted_at: "2026-06-01T00:00:00.000000Z", base_price_key: v1!.base_price_key, price_key: v1!.price_key
      })
      // Same price a day later, with the name changed: nothing is written.
      assert.deepStrictEqual(yield* ingest.ingest([obs({ extracted_at: "2026-06-02T00:00:00Z", model_name: "Llama 3.1 70B" })]),
        { received: 1, opened: 0, closed: 0, unchanged: 1, duplicates: 0, flagged: 0, reflagged: 0 })
      assert.deepStrictEqual(yield* everything, [v1!])
      // A new price (here only the published unit changes) closes the old row at the observation's instant.
      const next = obs({ extracted_at: "2026-06-03T08:30:00+02:00", raw_price: 0.00088, raw_price_unit: "usd_per_1k_tokens" })
      assert.deepStrictEqual(yield* ingest.ingest([next]), { received: 1, opened: 1, closed: 1, unchanged: 0, duplicates: 0, flagged: 0, reflagged: 0 })
      const [old, now] = yield* everything
      assert.deepStrictEqual(old, { ...v1!, valid_to: "2026-06-03T06:30:00.000000Z" })
      assert.strictEqual(now!.valid_from, "2026-06-03T06:30:00.000000Z")
      assert.isNull(now!.valid_to)
      assert.strictEqual(now!.base_price_key, v1!.base_price_key)
      assert.strictEqual(now!.price_key, priceKey(now!.base_price_key, now!.valid_from, now!))
      // Currency is part of the price too.
      assert.strictEqual((yield* ingest.ingest([obs({ extracted_at: "2026-06-04T00:00:00Z", raw_price: 0.00088, raw_price_unit: "usd_per_1k_tokens", currency: "EUR" })])).opened, 1)
    }).pipe(Effect.provide(fresh())))

  it.effect("keys: the base key covers the identity only, and qualifiers are one set whatever their order", () =>
    Effect.gen(function* () {
      const identity = { source: "provider-pricing-page", model: "gpt-4o", serving_provider: "openai", price_type: "input", region: "global", metric: "tokens", qualifiers: null }
      const base = basePriceKey(identity)
      // Stable across releases: these vectors must never change, or every stored key would.
      assert.strictEqual(base, "7d362d9f5a64aa55e5bca58a10b3bee6")
      const price = { price_usd_per_1m_tokens: 2.5, raw_price: 2.5, raw_price_unit: "usd_per_1m_tokens", currency: "USD" }
      assert.strictEqual(priceKey(base, "2026-06-01T00:00:00.000000Z", price), "e0794d3b56761d59324de738e04ba8c1")
      assert.notStrictEqual(priceKey(base, "2026-06-01T00:00:00.000001Z", price), "e0794d3b56761d59324de738e04ba8c1")
      assert.notStrictEqual(priceKey(base, "2026-06-01T00:00:00.000000Z", { ...price, currency: "EUR" }), "e0794d3b56761d59324de738e04ba8c1")
      for (const field of Object.keys(identity) as Array<keyof typeof identity>) {
        assert.notStrictEqual(basePriceKey({ ...identity, [field]: "other" }), base, field)
      }
      const ingest = yield* LlmTokenPriceIngest
      yield* ingest.ingest([obs({ qualifiers: "context_gt_128k;batch" })])
      // The same set in another order, repeated, is the same price: unchanged.
      assert.strictEqual((yield* ingest.ingest([obs({ qualifiers: "batch;context_gt_128k;batch", extracted_at: "2026-06-02T00:00:00Z" })])).unchanged, 1)
      const [row] = yield* everything
      assert.strictEqual(row!.qualifiers, "batch;context_gt_128k")
      // No qualifier and a region are other prices.
      const more = yield* ingest.ingest([obs(), obs({ region: "eu-west" }), obs({ metric: "audio_tokens" }), obs({ source: "openrouter" })])
      assert.strictEqual(more.opened, 4)
      assert.strictEqual(new Set((yield* everything).map((r) => r.base_price_key)).size, 5)
    }).pipe(Effect.provide(fresh())))

  it.effect("a bad record refuses the whole batch with its index and reason; nothing is written", () =>
    Effect.gen(function* () {
      const ingest = yield* LlmTokenPriceIngest
      yield* ingest.ingest([obs()])
      const before = yield* everything
      const bad: Array<[unknown, string]> = [
        [{ ...obs(), price_usd_per_1m_tokens: -1 }, "price_usd_per_1m_tokens"],
        [{ ...obs(), is_price_outlier: false }, "unknown field"],
        [{ ...obs(), extracted_at: "last tuesday" }, "extracted_at"],
        [{ ...obs(), model: "Llama 3.1 70B" }, "model"],
        [{ ...obs(), currency: "usd" }, "currency"],
        [{ ...obs(), qualifiers: "Context > 128k" }, "qualifiers"],
        [{ ...obs(), serving_provider: undefined }, "serving_provider"],
        ["not an object", "record"]
      ]
      for (const [record, says] of bad) {
        const error = refusal(yield* Effect.exit(ingest.ingest([obs({ serving_provider: "fireworks" }), record])))
        assert.strictEqual(error.errors[0]!.index, 1)
        assert.include(error.detail, says)
      }
      // An observation older than the price in force, with another price, cannot be placed.
      const late = refusal(yield* Effect.exit(ingest.ingest([obs({ serving_provider: "fireworks" }), obs({ extracted_at: "2026-05-01T00:00:00Z", price_usd_per_1m_tokens: 5 })])))
      assert.strictEqual(late.errors[0]!.index, 1)
      assert.deepStrictEqual(yield* everything, before)
    }).pipe(Effect.provide(fresh())))

  it.effect("a free price (0) is a price: stored as 0, and a later charge is a price change", () =>
    Effect.gen(function* () {
      const ingest = yield* LlmTokenPriceIngest
      const free = obs({ price_usd_per_1m_tokens: 0, raw_price: 0 })
      assert.strictEqual((yield* ingest.ingest([free])).opened, 1)
      assert.strictEqual((yield* ingest.ingest([free])).duplicates, 1)
      yield* ingest.ingest([obs({ extracted_at: "2026-06-02T00:00:00Z" })])
      const rows = yield* everything
      assert.deepStrictEqual(rows.map((r) => [r.price_usd_per_1m_tokens, r.raw_price, r.valid_to]), [
        [0, 0, "2026-06-02T00:00:00.000000Z"], [0.88, 0.88, null]
      ])
    }).pipe(Effect.provide(fresh())))

  it.effect("one batch may carry several days of one price, in any order", () =>
    Effect.gen(function* () {
      const ingest = yield* LlmTokenPriceIngest
      const summary = yield* ingest.ingest([
        obs({ extracted_at: "2026-06-03T00:00:00Z", price_usd_per_1m_tokens: 0.6 }),
        obs({ extracted_at: "2026-06-01T00:00:00Z" }),
        obs({ extracted_at: "2026-06-02T00:00:00Z" }),
        obs({ extracted_at: "2026-06-04T00:00:00Z" })
      ])
      assert.deepStrictEqual(summary, { received: 4, opened: 3, closed: 2, unchanged: 1, duplicates: 0, flagged: 0, reflagged: 0 })
      assert.deepStrictEqual((yield* everything).map((r) => [r.price_usd_per_1m_tokens, r.valid_from.slice(0, 10), r.valid_to?.slice(0, 10) ?? null]), [
        [0.88, "2026-06-01", "2026-06-03"], [0.6, "2026-06-03", "2026-06-04"], [0.88, "2026-06-04", null]
      ])
    }).pipe(Effect.provide(fresh())))

  it.effect("withdrawing closes the current row; publishing again opens a new one", () =>
    Effect.gen(function* () {
      const ingest = yield* LlmTokenPriceIngest
      yield* ingest.ingest([obs()])
      const [row] = yield* everything
      assert.strictEqual(yield* ingest.withdraw([row!.base_price_key, "f".repeat(32)], "2026-06-05T00:00:00Z"), 1)
      assert.strictEqual((yield* everything)[0]!.valid_to, "2026-06-05T00:00:00.000000Z")
      refusal(yield* Effect.exit(ingest.withdraw([row!.base_price_key], "soon")))
      assert.deepStrictEqual(yield* ingest.ingest([obs({ extracted_at: "2026-06-10T00:00:00Z" })]), { received: 1, opened: 1, closed: 0, unchanged: 0, duplicates: 0, flagged: 0, reflagged: 0 })
      assert.strictEqual((yield* everything).length, 2)
      // A withdrawal at or before the row's start is refused.
      refusal(yield* Effect.exit(ingest.withdraw([row!.base_price_key], "2026-06-10T00:00:00Z")))
    }).pipe(Effect.provide(fresh())))
})
