import { afterAll, assert, describe, it } from "@effect/vitest"
import { formatDate, formatInstant, type IndexValue, indexValueFields } from "@gpu-market/core"
import { IndexStore, INTRADAY_MICROS, type PagePlan, type Scope } from "@gpu-market/core/storage"
import { Context, Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { compileIndexPage, indexValueFromColumns, layer, makeClient, migrate } from "../src/internal"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gpu-market-sqlite-indexes-"))
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))
let files = 0
const freshFile = () => path.join(dir, `db-${files++}`, "market.db")

const T0 = Date.UTC(2025, 0, 1) * 1000
/** A year of one intraday index and one daily one: enough rows for the planner to show its hand. */
const values: Array<IndexValue> = [
  ...Array.from({ length: 365 * 48 }, (_, i): IndexValue => {
    const value = 2 + (i % 17) * 0.01
    return { id: "big-intraday", type: "intraday", timestamp: formatInstant(T0 + i * INTRADAY_MICROS), value, p5: value - 0.1, p95: value + 0.1 }
  }),
  ...Array.from({ length: 365 }, (_, i): IndexValue => ({ id: "big-daily", type: "daily", timestamp: formatDate(T0 + i * 86_400_000_000), value: 3, p5: null, p95: null }))
]

describe("index SQL", () => {
  it("columns are read back in the row's field order", () => {
    const built = indexValueFromColumns(indexValueFields.map((f) => `v-${f}`))
    assert.deepStrictEqual(Object.keys(built), [...indexValueFields])
    for (const f of indexValueFields) assert.strictEqual(built[f], `v-${f}`)
  })

  it.effect("one index's pages seek its keys: no sort of the index's values, whatever the scope", () =>
    Effect.scoped(Effect.gen(function* () {
      const filename = freshFile()
      const store = Context.get(yield* Layer.build(layer({ filename })), IndexStore)
      yield* store.apply({ clear: [], values, cursors: [] })
      const client = yield* makeClient({ filename })
      yield* migrate(client)
      const explain = (plan: PagePlan) => {
        const { sql, params } = compileIndexPage(plan)
        return (client.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>).map((r) => r.detail).join(" | ")
      }
      const scopes: Array<Scope> = [
        { _tag: "latest" },
        { _tag: "asOf", at: "2025-06-01T10:00:00.000000Z" },
        { _tag: "window", start: "2025-06-01T00:00:00.000000Z", end: "2025-07-01T00:00:00.000000Z" }
      ]
      for (const id of ["big-intraday", "big-daily"]) for (const scope of scopes) for (const order of ["asc", "desc"] as const) {
        for (const after of [undefined, { value: "2025-06-10T00:00:00.000000Z", tie: "2025-06-10T00:00:00.000000Z" }]) {
          const plan: PagePlan = { scope, predicates: [{ op: "eq", field: "id", value: id }], sort: { by: "timestamp", order }, after, limit: 101 }
          const detail = explain(plan)
          assert.notInclude(detail, "TEMP B-TREE", `${id} ${JSON.stringify(scope)} ${order}: ${detail}`)
          assert.notInclude(detail, "SCAN", detail)
        }
        // Sorted by value, later pages seek the (id, value, timestamp) index.
        const byValue = explain({ scope, predicates: [{ op: "eq", field: "id", value: id }], sort: { by: "value", order }, after: { value: 2.05, tie: "2025-06-10T00:00:00.000000Z" }, limit: 101 })
        assert.notInclude(byValue, "SCAN", byValue)
      }
    })))
})
