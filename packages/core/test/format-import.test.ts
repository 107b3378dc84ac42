import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { InvalidRecords } from "../src/errors.js"
import { writeAccepting } from "../src/ingest/formats/import.js"
import { sniffFormat } from "../src/ingest/formats/report.js"
import type { IngestSummary } from "../src/ingest/versions.js"

/** How a public-format import writes: again without what the write path refuses, each refusal at its place in the file. */

const converted = [
  { line: 2, observation: "a" }, { line: 3, key: "k", observation: "b" }, { line: 5, observation: "c" }, { line: 9, observation: "d" }
]
const summary = (received: number): IngestSummary => ({ received, opened: received, closed: 0, unchanged: 0, duplicates: 0 })

describe("sniffFormat", () => {
  it("tells each format by its shape, from a whole file or its first bytes", () => {
    const litellm = JSON.stringify({ sample_spec: { mode: "chat" }, "gpt-x": { litellm_provider: "openai", input_cost_per_token: 1e-6 } }, null, 2)
    assert.strictEqual(sniffFormat(litellm), "litellm")
    assert.strictEqual(sniffFormat(JSON.stringify(JSON.parse(litellm))), "litellm")
    assert.strictEqual(sniffFormat(litellm.slice(0, litellm.length - 20)), "litellm")
    assert.strictEqual(sniffFormat("\uFEFFInstanceType,AcceleratorName,AcceleratorCount,Price,Region\r\nx,H100,1,2,us\r\n"), "skypilot")
    assert.strictEqual(sniffFormat("vendor,vendor_gpu_name,raw_price\nacme,H100,2\n"), "csv")
    assert.strictEqual(sniffFormat("{\"vendor\":\"acme\"}\n{\"vendor\":\"b\"}\n"), "jsonl")
    assert.strictEqual(sniffFormat("{\"vendor\":\"acme\"}"), "jsonl")
    assert.strictEqual(sniffFormat("{ not json\n"), undefined)
    assert.strictEqual(sniffFormat("just words"), undefined)
  })
})

describe("writeAccepting", () => {
  it.effect("writes again without the refused records, naming the records a message names by their lines", () =>
    Effect.gen(function* () {
      const batches: Array<ReadonlyArray<string>> = []
      const write = (rows: ReadonlyArray<string>) => {
        batches.push(rows)
        return batches.length === 1
          ? Effect.fail(new InvalidRecords({
            detail: "2 problem(s)",
            errors: [{ index: 3, message: "two prices for one product: records 1 and 3" }, { index: 1, message: "two prices for one product: records 1 and 3" }]
          }))
          : Effect.succeed(summary(rows.length))
      }
      const result = yield* writeAccepting(converted, write, [])
      assert.deepStrictEqual(batches, [["a", "b", "c", "d"], ["a", "c"]])
      assert.deepStrictEqual(result, {
        written: summary(2),
        rejections: [
          { line: 9, reason: "conflicting_price", message: "two prices for one product: line 3 (k) and line 9" },
          { line: 3, key: "k", reason: "conflicting_price", message: "two prices for one product: line 3 (k) and line 9" }
        ],
        quarantined: []
      })
    }))

  it.effect("a refusal a quarantine rule expects is quarantined with the rule's why; the rule names its reason, so another refusal of the same entry is still rejected", () =>
    Effect.gen(function* () {
      const objects = [{ line: 2, observation: { vendor: "acme", vendor_sku: "x-1" } }, { line: 3, observation: { vendor: "acme", vendor_sku: "y-1" } }]
      const write = (rows: ReadonlyArray<{ readonly vendor_sku: string }>) => rows.length === 0 ? Effect.succeed(summary(0)) : Effect.fail(new InvalidRecords({
        detail: "refused",
        errors: rows.map((_, index) => ({ index, message: "price_usd_per_gpu_hour: 500 is outside the plausible range [0.01, 100] (IngestBounds)" }))
      }))
      const rules = [
        { match: { vendor: "acme", vendor_sku: "x-*" }, reason: "out_of_bounds" as const, why: "x is priced per month" },
        { match: { vendor_sku: "y-1" }, reason: "conflicting_price" as const, why: "y is listed twice" }
      ]
      const result = yield* writeAccepting(objects, write, rules)
      assert.deepStrictEqual(result.quarantined.map((q) => [q.line, q.reason, q.rule]), [[2, "out_of_bounds", "x is priced per month"]])
      assert.deepStrictEqual(result.rejections.map((r) => [r.line, r.reason]), [[3, "out_of_bounds"]])
    }))

  it.effect("a refusal naming no record refuses every record with its detail", () =>
    Effect.gen(function* () {
      const write = (rows: ReadonlyArray<string>) =>
        rows.length > 0 ? Effect.fail(new InvalidRecords({ detail: "refused", errors: [] })) : Effect.succeed(summary(0))
      const result = yield* writeAccepting(converted, write, [])
      assert.deepStrictEqual(result.rejections.map((r) => [r.line, r.reason, r.message]), [[2, "invalid", "refused"], [3, "invalid", "refused"], [5, "invalid", "refused"], [9, "invalid", "refused"]])
    }))
})
