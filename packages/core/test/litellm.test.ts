import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { fromLitellm, litellmKey, type LitellmObservation } from "../src/ingest/formats/litellm.js"

/** LiteLLM's real price table (test/fixtures/real/SOURCES.md), converted as published. */

const TABLE = readFileSync(join(import.meta.dirname, "../../../test/fixtures/real/litellm/model_prices.json"), "utf8")
const AT = "2026-07-24T18:23:43.215560Z"
const real = fromLitellm(TABLE, { observedAt: AT })

const identity = (o: LitellmObservation) => JSON.stringify([o.serving_provider, o.model, o.region, o.price_type, o.metric, o.qualifiers])
/** One key's prices as `price_type/metric[/qualifiers]` → USD per 1M tokens. */
const pricesOf = (key: string) =>
  Object.fromEntries(real.observations.filter((c) => c.key === key).map(({ observation: o }) =>
    [[o.price_type, o.metric, ...(o.qualifiers === null ? [] : [o.qualifiers])].join("/"), o.price_usd_per_1m_tokens]))

describe("LiteLLM price table", () => {
  it("converts every per-token price of the real table, and counts what it leaves out", () => {
    assert.strictEqual(real.observations.length, 7309)
    assert.deepStrictEqual(real.skipped, { sample_spec: 1, non_token_price: 832, non_usd_price: 56, no_provider: 1, not_a_model: 1, alias: 185 })
    // One entry of the published table has an empty model path.
    assert.deepStrictEqual(real.issues, [
      { line: 42286, key: "fireworks_ai/accounts/fireworks/models/", reason: "unreadable", message: "the key names no model slug of 1 to 100 characters; entry left out" }
    ])
  })

  it("gives distinct priced things distinct identities: no two keys share one", () => {
    const keys = new Map<string, Set<string>>()
    for (const c of real.observations) keys.set(identity(c.observation), (keys.get(identity(c.observation)) ?? new Set()).add(c.key!))
    assert.deepStrictEqual([...keys.values()].filter((k) => k.size > 1), [])
    // The explained cases: where the provider-prefixed key and the bare one disagree, the prefixed one is its own model.
    const ownModel = real.observations.filter((c) => c.observation.model.startsWith("gemini-gemini"))
    assert.deepStrictEqual([...new Set(ownModel.map((c) => `${c.key} → ${c.observation.model}`))].sort(), [
      "gemini/gemini-exp-1206 → gemini-gemini-exp-1206",
      "gemini/gemini-flash-latest → gemini-gemini-flash-latest",
      "gemini/gemini-flash-lite-latest → gemini-gemini-flash-lite-latest"
    ])
  })

  it("converts prices to USD per 1M tokens, with tiers as price types and qualifiers", () => {
    assert.deepStrictEqual(pricesOf("gpt-4o"), {
      "input/tokens": 2.5, "output/tokens": 10, "cached_input/tokens": 1.25, "batch_input/tokens": 1.25, "batch_output/tokens": 5,
      "input/tokens/tier_priority": 4.25, "output/tokens/tier_priority": 17, "cached_input/tokens/tier_priority": 2.125
    })
    assert.deepStrictEqual(pricesOf("claude-sonnet-4-5"), {
      "input/tokens": 3, "output/tokens": 15, "cached_input/tokens": 0.3, "cache_write/tokens": 3.75,
      "cache_write/tokens/cache_ttl_1h": 6, "cache_write/tokens/cache_ttl_1h;context_gt_200k": 12,
      "input/tokens/context_gt_200k": 6, "output/tokens/context_gt_200k": 22.5, "cache_write/tokens/context_gt_200k": 7.5,
      "cached_input/tokens/context_gt_200k": 0.6
    })
    const gpt4o = real.observations.find((c) => c.key === "gpt-4o" && c.observation.price_type === "input" && c.observation.qualifiers === null)!
    assert.deepStrictEqual(gpt4o.observation, {
      source: "litellm", model: "gpt-4o", model_name: "gpt-4o", model_creator: null, serving_provider: "openai", price_type: "input",
      region: "global", metric: "tokens", qualifiers: null, price_usd_per_1m_tokens: 2.5, raw_price: 0.0000025,
      raw_price_unit: "usd_per_token", currency: "USD", extracted_at: AT
    })
    assert.strictEqual(gpt4o.line, TABLE.split("\n").findIndex((l) => l.startsWith("  \"gpt-4o\": {")) + 1)
  })

  it("keeps free prices as 0", () => {
    assert.deepStrictEqual(pricesOf("ollama/llama3"), { "input/tokens": 0, "output/tokens": 0 })
    assert.strictEqual(real.observations.filter((c) => c.observation.raw_price === 0).length, 428)
  })

  it("reads provider, region, deployment, creator and image tiers out of keys", () => {
    const cases: ReadonlyArray<readonly [string, string, ReturnType<typeof litellmKey>]> = [
      ["gpt-4o", "openai", { model: "gpt-4o", creator: null, region: "global", qualifiers: [] }],
      ["gemini/gemini-2.5-pro", "gemini", { model: "gemini-2.5-pro", creator: null, region: "global", qualifiers: [] }],
      ["azure/eu/gpt-4o-2024-08-06", "azure", { model: "gpt-4o-2024-08-06", creator: null, region: "eu", qualifiers: [] }],
      ["azure/global/gpt-4o-2024-11-20", "azure", { model: "gpt-4o-2024-11-20", creator: null, region: "global", qualifiers: ["deployment_global"] }],
      ["bedrock/us-east-1/anthropic.claude-v2:1", "bedrock", { model: "anthropic.claude-v2-1", creator: "anthropic", region: "us-east-1", qualifiers: [] }],
      ["us.anthropic.claude-3-5-haiku-20241022-v1:0", "bedrock", { model: "anthropic.claude-3-5-haiku-20241022-v1-0", creator: "anthropic", region: "us", qualifiers: [] }],
      ["global.amazon.nova-2-lite-v1:0", "bedrock_converse", { model: "amazon.nova-2-lite-v1-0", creator: "amazon", region: "global", qualifiers: ["deployment_global"] }],
      ["vertex_ai/claude-3-5-sonnet@20240620", "vertex_ai-anthropic_models", { model: "claude-3-5-sonnet-20240620", creator: null, region: "global", qualifiers: [] }],
      ["openrouter/meta-llama/llama-3-8b-instruct:free", "openrouter", { model: "llama-3-8b-instruct-free", creator: "meta-llama", region: "global", qualifiers: [] }],
      ["fireworks_ai/accounts/fireworks/models/llama-v3p1-8b-instruct", "fireworks_ai", { model: "llama-v3p1-8b-instruct", creator: null, region: "global", qualifiers: [] }],
      ["cloudflare/@cf/meta/llama-2-7b-chat-int8", "cloudflare", { model: "llama-2-7b-chat-int8", creator: "meta", region: "global", qualifiers: [] }],
      ["azure/low/1024-x-1024/gpt-image-1", "azure", { model: "gpt-image-1", creator: null, region: "global", qualifiers: ["quality_low", "size_1024x1024"] }],
      ["bedrock/*/1-month-commitment/cohere.command-text-v14", "bedrock", { model: "cohere.command-text-v14", creator: "cohere", region: "global", qualifiers: ["commitment_1_months"] }]
    ]
    for (const [key, provider, expected] of cases) assert.deepStrictEqual(litellmKey(key, provider), expected, key)
  })

  it("names the line and key of what it cannot read, and skips what is not a per-token USD price", () => {
    const text = [
      "{",
      "  \"m\": {\"litellm_provider\": \"acme\", \"input_cost_per_token\": -1, \"output_cost_per_token\": \"2\",",
      "        \"input_cost_per_token_above_8s_interval\": 1e-6, \"output_cost_per_image\": 0.04, \"input_dbu_cost_per_token\": 1},",
      "  \"n\": {\"input_cost_per_token\": 1e-6},",
      "  \"acme/o\": {\"litellm_provider\": \"acme\", \"input_cost_per_token\": 1e-6},",
      "  \"o\": {\"litellm_provider\": \"acme\", \"input_cost_per_token\": 1e-6}",
      "}"
    ].join("\n")
    const c = fromLitellm(text, { observedAt: AT })
    assert.deepStrictEqual(c.observations.map((o) => [o.line, o.key, o.observation.model, o.observation.price_usd_per_1m_tokens]), [[5, "acme/o", "o", 1]])
    assert.deepStrictEqual(c.skipped, { non_token_price: 1, non_usd_price: 1, no_provider: 1, alias: 1 })
    assert.deepStrictEqual(c.issues, [
      { line: 2, key: "m", reason: "not_a_price", message: "input_cost_per_token: expected a price of 0 or more, got -1; price left out" },
      { line: 2, key: "m", reason: "not_a_price", message: "output_cost_per_token: expected a price of 0 or more, got \"2\"; price left out" },
      { line: 2, key: "m", reason: "unreadable", message: "input_cost_per_token_above_8s_interval: a per-token price with a tier this importer does not know; price left out" }
    ])
    assert.strictEqual(fromLitellm("[1]", { observedAt: AT }).unrecognised, "expected a JSON object of entries")
    assert.strictEqual(fromLitellm("{", { observedAt: AT }).unrecognised?.slice(0, 9), "not JSON:")
    assert.strictEqual(fromLitellm("{\"a\": {\"mode\": \"chat\"}}", { observedAt: AT }).unrecognised, "no entry names its litellm_provider")
  })
})
