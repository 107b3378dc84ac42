import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createMarket, FormatImport, type ImportCounts, type Market, marketLayer, type PrincipalInput } from "@gpu-market/core"
import { LlmTokenPriceStore } from "@gpu-market/core/storage"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Effect, Layer, TestClock } from "effect"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { problemOf, tempDb } from "./support/adapters"
import { publicQuarantine } from "./support/formats"

/**
 * LiteLLM's price table imported through the Promise and Effect APIs into SQLite: the real table
 * (test/fixtures/real/SOURCES.md) with its prices per 1M tokens, and successive snapshots that
 * build price history and withdraw what a later table no longer lists.
 */

const TABLE = readFileSync(join(import.meta.dirname, "fixtures/real/litellm/model_prices.json"), "utf8")
const READER: PrincipalInput = {
  id: "reader", name: "reader", grants: { llm_token_prices: { history: { _tag: "unrestricted" } } }, indices: [],
  legacy_custom_index: false, procurement: false, rate_limit_per_minute: 100_000
}

/** What became of the real table's entries without a policy: each price field, and each top-level value left out whole. */
const LITELLM_COUNTS: ImportCounts = {
  read: 8386, stored: 7289, unchanged: 0, duplicate: 0,
  skipped: { sample_spec: 1, non_token_price: 832, non_usd_price: 56, no_provider: 1, not_a_model: 1, alias: 185 },
  quarantined: {}, rejected: { out_of_bounds: 20, unreadable: 1 }
}

/** A small LiteLLM table: each entry's input and output price per token. */
const table = (entries: Record<string, readonly [number, number]>) =>
  JSON.stringify(Object.fromEntries(Object.entries(entries).map(([key, [input, output]]) =>
    [key, { litellm_provider: "acme", mode: "chat", input_cost_per_token: input, output_cost_per_token: output }])), null, 2)

describe("LiteLLM import (Promise API, SQLite)", () => {
  let market: Market
  beforeAll(async () => {
    market = await createMarket({ storage: SqliteStorage.sqlite(tempDb("litellm-import")) })
    await market.tokens.create(READER, "reader")
  })
  afterAll(() => market.close())

  it("imports every per-token price of the real table, per 1M tokens, free prices as 0", async () => {
    const summary = await market.ingest.litellm(TABLE, { observedAt: "2026-07-24T18:23:43Z" })
    assert.deepStrictEqual([summary.observedAt, summary.counts, summary.withdrawn], ["2026-07-24T18:23:43.000000Z", LITELLM_COUNTS, null])
    // LiteLLM's wandb entries are priced in the wrong unit (gpt-oss-120b at 15,000 USD per 1M
    // tokens): the plausibility bound refuses their 20 prices, and only theirs.
    for (const r of summary.rejections.filter((r) => r.reason === "out_of_bounds")) {
      assert.match(r.key ?? "", /^wandb\//)
      assert.include(r.message, "outside the plausible range")
    }
    assert.deepStrictEqual(summary.rejections.filter((r) => r.reason === "unreadable").map((r) => [r.line, r.key]), [[42286, "fireworks_ai/accounts/fireworks/models/"]])
    assert.deepStrictEqual([summary.written.received, summary.written.opened], [7289, 7289])
    const prices = async (model: string, provider: string) => {
      const page = await market.llm.tokenPrices.latest({ model: [model], serving_provider: [provider], page_size: 100 }, { token: "reader" })
      return Object.fromEntries(page.data.filter((r) => r.qualifiers === null && r.metric === "tokens").map((r) => [r.price_type, r.price_usd_per_1m_tokens]))
    }
    assert.deepStrictEqual(await prices("gpt-4o", "openai"), { batch_input: 1.25, batch_output: 5, cached_input: 1.25, input: 2.5, output: 10 })
    assert.deepStrictEqual(await prices("claude-sonnet-4-5", "anthropic"), { cache_write: 3.75, cached_input: 0.3, input: 3, output: 15 })
    assert.deepStrictEqual(await prices("llama3", "ollama"), { input: 0, output: 0 })
    const row = (await market.llm.tokenPrices.latest({ model: ["gpt-4o"], serving_provider: ["openai"], price_type: ["input"], page_size: 10 }, { token: "reader" }))
      .data.find((r) => r.qualifiers === null)!
    assert.deepStrictEqual([row.source, row.model_name, row.raw_price, row.raw_price_unit, row.currency, row.valid_from],
      ["litellm", "gpt-4o", 0.0000025, "usd_per_token", "USD", "2026-07-24T18:23:43.000000Z"])
    // The same table again changes nothing; with the shipped policy its known-bad entries are
    // quarantined, each with its rule, and nothing is rejected.
    const again = await market.ingest.litellm(TABLE, { observedAt: "2026-07-25T00:00:00Z", quarantine: publicQuarantine() })
    assert.deepStrictEqual([again.written.opened, again.written.unchanged], [0, 7289])
    assert.deepStrictEqual(again.counts, {
      ...LITELLM_COUNTS, stored: 0, unchanged: 7289, quarantined: { out_of_bounds: 20, unreadable: 1 }, rejected: {}
    })
    assert.deepStrictEqual(again.rejections, [])
    assert.deepStrictEqual(new Set(again.quarantined.map((q) => q.key?.split("/")[0])), new Set(["wandb", "fireworks_ai"]))
    assert.isTrue(again.quarantined.every((q) => q.rule.length > 0))
  }, 120_000)

  it("refuses options it cannot use, naming them", async () => {
    const bad = await problemOf(market.ingest.litellm(table({ m: [1e-6, 2e-6] }), { observedAt: "yesterday" }))
    assert.deepStrictEqual([bad.problem.status, bad.problem.code, bad.problem.errors], [422, "validation_failed", [{ parameter: "observed_at", message: "expected an ISO 8601 datetime" }]])
    const vendor = await problemOf(market.ingest.skypilot("InstanceType\n", { vendor: "Lambda Labs" }))
    assert.deepStrictEqual([vendor.problem.status, vendor.problem.errors?.[0]?.parameter], [422, "vendor"])
  })

  it("refuses a file in another format whole, naming the format it looks like, and writes nothing", async () => {
    const refused = async (import_: Promise<unknown>) => {
      const { problem } = await problemOf(import_)
      assert.deepStrictEqual([problem.status, problem.code, problem.errors?.[0]?.parameter], [422, "validation_failed", "format"])
      return problem.detail
    }
    const skypilot = readFileSync(join(import.meta.dirname, "fixtures/real/skypilot/lambda-vms.csv"), "utf8")
    assert.match(await refused(market.ingest.skypilot(TABLE, { vendor: "lambda", snapshot: true })),
      /^format: the file is not a SkyPilot catalog .*: the header lacks InstanceType, AcceleratorName, AcceleratorCount, Price, Region; it looks like LiteLLM's price table \(--format litellm\)$/)
    assert.match(await refused(market.ingest.litellm(skypilot, { snapshot: true })),
      /^format: the file is not LiteLLM's price table .*: not JSON: .*; it looks like a SkyPilot catalog \(--format skypilot --vendor <slug>\)$/)
    assert.match(await refused(market.ingest.skypilot("vendor,vendor_gpu_name,raw_price\nacme,H100,2\n", { vendor: "acme" })),
      /; it looks like a CSV of rows \(--format csv --type <type>\)$/)
    // The refused snapshot withdrew nothing: the prices the real table stored above are still listed.
    const gpt4o = await market.llm.tokenPrices.latest({ model: ["gpt-4o"], serving_provider: ["openai"], page_size: 100 }, { token: "reader" })
    assert.isAbove(gpt4o.data.length, 0)
  })
})

/** Every stored version as [model, price type, price, valid_from, valid_to], sorted. */
const everyVersion = Effect.map(
  Effect.flatMap(LlmTokenPriceStore, (s) => s.page({
    scope: { _tag: "window", start: "2000-01-01T00:00:00.000000Z", end: "2100-01-01T00:00:00.000000Z" },
    predicates: [], sort: { by: "valid_from", order: "asc" }, after: undefined, limit: 1000
  })),
  (rows) => rows.map((r) => [r.model, r.price_type, r.price_usd_per_1m_tokens, r.valid_from, r.valid_to])
    .sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1))
)

describe("LiteLLM snapshots", () => {
  const layer = () => marketLayer.pipe(Layer.provideMerge(SqliteStorage.layer({ filename: tempDb("litellm-snapshots") })))

  it.effect("successive snapshots build history: a changed price opens a row, a dropped one is withdrawn at the later instant", () =>
    Effect.gen(function* () {
      const formats = yield* FormatImport
      const A = "2026-07-01T00:00:00Z"
      const B = "2026-07-08T00:00:00Z"
      const first = yield* formats.litellm(table({ "m-kept": [1e-6, 2e-6], "acme/m-dropped": [3e-6, 4e-6] }), { observedAt: A, snapshot: true })
      assert.deepStrictEqual([first.written.opened, first.withdrawn], [4, 0])
      // Not a snapshot: what the file leaves out stays.
      const partial = yield* formats.litellm(table({ "m-kept": [1e-6, 2e-6] }), { observedAt: "2026-07-02T00:00:00Z" })
      assert.deepStrictEqual([partial.written.unchanged, partial.withdrawn], [2, null])
      const second = yield* formats.litellm(table({ "m-kept": [1.5e-6, 2e-6] }), { observedAt: B, snapshot: true })
      assert.deepStrictEqual([second.written.opened, second.written.closed, second.written.unchanged, second.withdrawn], [1, 1, 1, 2])

      assert.deepStrictEqual(yield* everyVersion, [
        ["m-dropped", "input", 3, "2026-07-01T00:00:00.000000Z", "2026-07-08T00:00:00.000000Z"],
        ["m-dropped", "output", 4, "2026-07-01T00:00:00.000000Z", "2026-07-08T00:00:00.000000Z"],
        ["m-kept", "input", 1, "2026-07-01T00:00:00.000000Z", "2026-07-08T00:00:00.000000Z"],
        ["m-kept", "input", 1.5, "2026-07-08T00:00:00.000000Z", null],
        ["m-kept", "output", 2, "2026-07-01T00:00:00.000000Z", null]
      ])
      // A snapshot taken again at its instant withdraws nothing more.
      assert.strictEqual((yield* formats.litellm(table({ "m-kept": [1.5e-6, 2e-6] }), { observedAt: B, snapshot: true })).withdrawn, 0)
    }).pipe(Effect.provide(layer())))

  it.effect("an import without an instant is observed now", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(Date.UTC(2026, 6, 10, 12))
      const summary = yield* (yield* FormatImport).litellm(table({ m: [1e-6, 2e-6] }))
      assert.strictEqual(summary.observedAt, "2026-07-10T12:00:00.000000Z")
    }).pipe(Effect.provide(layer())))
})
