import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { InvalidRecords } from "../src/errors.js"
import { writeAccepting } from "../src/ingest/formats/import.js"
import type { IngestSummary } from "../src/ingest/versions.js"

/** How a public-format import writes: again without what the write path refuses, each refusal at its place in the file. */

const converted = [
  { line: 2, observation: "a" }, { line: 3, key: "k", observation: "b" }, { line: 5, observation: "c" }, { line: 9, observation: "d" }
]
const summary = (received: number): IngestSummary => ({ received, opened: received, closed: 0, unchanged: 0, duplicates: 0 })

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
      const result = yield* writeAccepting(converted, write)
      assert.deepStrictEqual(batches, [["a", "b", "c", "d"], ["a", "c"]])
      assert.deepStrictEqual(result, {
        written: summary(2), accepted: 2,
        rejected: [
          { line: 3, key: "k", message: "two prices for one product: line 3 (k) and line 9" },
          { line: 9, message: "two prices for one product: line 3 (k) and line 9" }
        ]
      })
    }))

  it.effect("a refusal naming no record refuses every record with its detail", () =>
    Effect.gen(function* () {
      const write = (rows: ReadonlyArray<string>) =>
        rows.length > 0 ? Effect.fail(new InvalidRecords({ detail: "refused", errors: [] })) : Effect.succeed(summary(0))
      const result = yield* writeAccepting(converted, write)
      assert.deepStrictEqual([result.accepted, result.rejected.map((r) => [r.line, r.message])], [0, [[2, "refused"], [3, "refused"], [5, "refused"], [9, "refused"]]])
    }))
})
