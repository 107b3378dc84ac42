import { afterAll, assert, describe, it } from "@effect/vitest"
import { type LlmTokenPrice, llmTokenPriceFields, type Storage } from "@gpu-market/core"
import {
  llmTokenPriceKeys, LlmTokenPriceStore, type PagePlan, type Predicate, putVersions, StorageDefect, type VersionView
} from "@gpu-market/core/storage"
import { llmRow } from "@gpu-market/storage-testkit"
import {
  compileLlmPage, layer, llmColumnsOf, llmRowFromColumns, makeClient, migrate, type SqliteClient
} from "../packages/storage-sqlite/src/internal"
import { Cause, Context, Effect, Either, Exit, Layer, Option } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gpu-market-llm-sqlite-"))
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))
let files = 0
const freshFile = () => path.join(dir, `db-${files++}`, "market.db")

const SORTS = ["model", "serving_provider", "price_type", "price_usd_per_1m_tokens", "source", "valid_from"] as const
const at = (day: number) => new Date(Date.UTC(2026, 0, 1) + day * 86_400_000).toISOString().replace("Z", "000Z")

const withStores = <A, E>(filename: string, f: (ctx: Context.Context<Storage>) => Effect.Effect<A, E>) =>
  Effect.scoped(Effect.flatMap(Layer.build(layer({ filename })), f))

const withClient = <A, E>(f: (client: SqliteClient) => Effect.Effect<A, E>) =>
  Effect.scoped(Effect.gen(function* () {
    const client = yield* makeClient({ filename: freshFile() })
    yield* migrate(client)
    return yield* f(client)
  }))

const explain = (client: SqliteClient, plan: PagePlan) => {
  const { sql, params } = compileLlmPage(plan)
  return (client.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>).map((r) => r.detail).join("\n")
}

describe("LLM token prices in SQLite", () => {
  it.effect("history pages sorted by valid_from seek to their position, not to the window edge", () =>
    withClient((client) => Effect.sync(() => {
      for (const order of ["asc", "desc"] as const) {
        const detail = explain(client, {
          scope: { _tag: "window", start: at(0), end: at(30) }, predicates: [],
          sort: { by: "valid_from", order }, after: { value: at(3), tie: "0".repeat(32) }, limit: 50
        })
        assert.notInclude(detail, "TEMP B-TREE", detail)
        assert.include(detail, `(valid_from,price_key)${order === "asc" ? ">" : "<"}(?,?)`, detail)
      }
    })))

  it.effect("columns match the row's fields in order; the flag is stored as 0 or 1 and read back as a boolean", () =>
    withClient((client) => Effect.sync(() => {
      const cols = client.db.prepare("PRAGMA table_info(llm_token_prices)").all() as Array<{ name: string; type: string }>
      assert.deepStrictEqual(cols.map((c) => c.name), [...llmTokenPriceFields])
      const types = Object.fromEntries(cols.map((c) => [c.name, c.type]))
      assert.strictEqual(types.price_usd_per_1m_tokens, "REAL")
      assert.strictEqual(types.is_price_outlier, "INTEGER")
      const row = llmRowFromColumns(llmTokenPriceFields.map((_, i) => i))
      assert.deepStrictEqual(Object.keys(row), [...llmTokenPriceFields])
      const flagged = llmRow({ model: "m", serving_provider: "p", is_price_outlier: true })
      assert.strictEqual(llmColumnsOf(flagged)[llmTokenPriceFields.indexOf("is_price_outlier")], 1)
      assert.deepStrictEqual(llmRowFromColumns(llmColumnsOf(flagged)), flagged)
      assert.deepStrictEqual(llmRowFromColumns(llmColumnsOf({ ...flagged, is_price_outlier: false })), { ...flagged, is_price_outlier: false })
    })))

  it.effect("/latest unanchored or with one model or provider never sorts, for every sort, order and position", () =>
    withClient((client) => Effect.sync(() => {
      const position = (by: string) => ({ value: by === "price_usd_per_1m_tokens" ? 2 : "x", tie: "8".repeat(32) })
      const anchors: ReadonlyArray<ReadonlyArray<Predicate>> = [
        [], [{ op: "in", field: "model", values: ["x"] }], [{ op: "in", field: "serving_provider", values: ["x"] }]
      ]
      const check = (label: string) => {
        for (const anchor of anchors) for (const extra of [[], [{ op: "eq", field: "is_price_outlier", value: "false" }]] as const) {
          for (const by of SORTS) for (const order of ["asc", "desc"] as const) for (const after of [undefined, position(by)]) {
            const plan: PagePlan = { scope: { _tag: "latest" }, predicates: [...anchor, ...extra], sort: { by, order }, after, limit: 101 }
            const detail = explain(client, plan)
            const what = `${label}: ${JSON.stringify(plan.predicates)} ${by} ${order} after=${after !== undefined}\n${detail}`
            assert.notInclude(detail, "TEMP B-TREE", what)
            assert.include(detail, "llm_token_prices_current_", what)
            // The position is part of the index seek, so a deep page costs what the first does.
            if (after !== undefined) assert.match(detail, /(\(\w+,price_key\)|price_key)[<>]/, what)
          }
        }
      }
      check("empty")
      const insert = client.db.prepare(`INSERT INTO llm_token_prices (${llmTokenPriceFields.join(", ")}) VALUES (${llmTokenPriceFields.map(() => "?").join(", ")})`)
      client.db.transaction(() => {
        for (let i = 0; i < 3000; i++) {
          insert.run(llmColumnsOf(llmRow({
            model: `m${i % 40}`, serving_provider: `p${i % 9}`, price_type: ["input", "output", "cached_input"][i % 3]!,
            region: `r${i % 4}`, qualifiers: `q${i}`, price_usd_per_1m_tokens: 0.1 + (i % 17) / 4, valid_from: at(i % 60),
            valid_to: i % 4 === 0 ? null : at(60 + (i % 7))
          })))
        }
      })()
      check("loaded")
      client.db.exec("ANALYZE")
      check("analyzed")
    })))

  it.effect("history and as-of read a model's versions through its valid_from index", () =>
    withClient((client) => Effect.sync(() => {
      for (const order of ["asc", "desc"] as const) {
        const window = explain(client, {
          scope: { _tag: "window", start: at(0), end: at(30) }, predicates: [{ op: "in", field: "model", values: ["x"] }],
          sort: { by: "valid_from", order }, after: { value: at(3), tie: "0".repeat(32) }, limit: 50
        })
        assert.include(window, "llm_token_prices_model_valid_from", window)
        assert.notInclude(window, "TEMP B-TREE", window)
        const unanchored = explain(client, {
          scope: { _tag: "window", start: at(0), end: at(30) }, predicates: [], sort: { by: "valid_from", order }, after: undefined, limit: 50
        })
        assert.notInclude(unanchored, "TEMP B-TREE", unanchored)
      }
    })))

  it.effect("plans naming unknown fields or sorting by a nullable or boolean field die with a StorageDefect: a bug, not storage trouble", () =>
    withStores(freshFile(), (ctx) => Effect.gen(function* () {
      const s = Context.get(ctx, LlmTokenPriceStore)
      const base: PagePlan = { scope: { _tag: "latest" }, predicates: [], sort: { by: "model", order: "asc" }, after: undefined, limit: 5 }
      for (const plan of [
        { ...base, predicates: [{ op: "eq", field: "model; DROP TABLE llm_token_prices", value: "x" }] },
        { ...base, sort: { by: "rowid", order: "asc" } },
        { ...base, sort: { by: "qualifiers", order: "asc" } },
        { ...base, sort: { by: "is_price_outlier", order: "asc" } }
      ] as Array<PagePlan>) {
        const exit = yield* Effect.exit(s.page(plan))
        const defect = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.dieOption(exit.cause)) : undefined
        assert.instanceOf(defect, StorageDefect, JSON.stringify(plan))
        assert.strictEqual((defect as StorageDefect).operation, "llm_token_prices.page")
      }
      assert.deepStrictEqual(yield* s.page(base), [])
    })))

  it.effect("two connections to one file see each other's writes, model summaries included; a step reads the other's latest row", () =>
    Effect.gen(function* () {
      const file = freshFile()
      yield* withStores(file, (a) => withStores(file, (b) => Effect.gen(function* () {
        const sa = Context.get(a, LlmTokenPriceStore)
        const sb = Context.get(b, LlmTokenPriceStore)
        assert.deepStrictEqual(yield* sb.models, [])
        const r1 = llmRow({ model: "m", serving_provider: "p", model_name: "M One" })
        const base = r1.base_price_key
        yield* putVersions(sa.transact, llmTokenPriceKeys, [r1])
        assert.deepStrictEqual((yield* sb.models).map((m) => [m.model, m.model_names, m.currently_listed]), [["m", ["M One"], true]])
        // Each step closes whatever row is current when it runs and opens `next`; it answers the key it closed.
        const moveTo = (next: LlmTokenPrice) => (view: VersionView<LlmTokenPrice>) =>
          Either.right({
            changes: { close: view.current.map((r) => ({ key: r.price_key, valid_to: next.valid_from })), open: [next] },
            result: view.current.map((r) => r.price_key)
          })
        // A moves the price on; B's step reads the current row inside its own transaction, so it
        // closes A's row rather than the one B saw before: no update is lost.
        const r2 = llmRow({ model: "m", serving_provider: "p", price_usd_per_1m_tokens: 2, valid_from: at(1) })
        assert.deepStrictEqual(yield* sa.transact([{ base, at: at(1) }], moveTo(r2)), [r1.price_key])
        const r3 = llmRow({ model: "m", serving_provider: "p", price_usd_per_1m_tokens: 3, valid_from: at(2) })
        assert.deepStrictEqual(yield* sb.transact([{ base, at: at(2) }], moveTo(r3)), [r2.price_key])
        // The lost update the old two-step write allowed, a decision taken on a read from before
        // A's step (closing r1, which A closed), cannot be written: it is a defect and writes nothing.
        const r4 = llmRow({ model: "m", serving_provider: "p", price_usd_per_1m_tokens: 4, valid_from: at(1) })
        const stale = yield* Effect.exit(sb.transact([{ base, at: at(1) }], () =>
          Either.right({ changes: { close: [{ key: r1.price_key, valid_to: at(1) }], open: [r4] }, result: undefined })))
        const defect = Exit.isFailure(stale) ? Option.getOrUndefined(Cause.dieOption(stale.cause)) : undefined
        assert.instanceOf(defect, StorageDefect)
        // One chain: r1 until day 1, r2 until day 2, then r3, seen the same from both connections.
        for (const s of [sa, sb]) {
          const asOf = (instant: string) => s.page({
            scope: { _tag: "asOf", at: instant }, predicates: [{ op: "eq", field: "model", value: "m" }],
            sort: { by: "valid_from", order: "asc" }, after: undefined, limit: 10
          })
          assert.deepStrictEqual(yield* asOf(at(0)), [{ ...r1, valid_to: at(1) }])
          assert.deepStrictEqual(yield* asOf(at(1)), [{ ...r2, valid_to: at(2) }])
          assert.deepStrictEqual(yield* asOf(at(3)), [r3])
        }
        yield* sa.transact([{ base, at: at(4) }], ({ current }) =>
          Either.right({ changes: { close: current.map((r) => ({ key: r.price_key, valid_to: at(4) })), open: [] }, result: undefined }))
        assert.isFalse((yield* sb.models)[0]!.currently_listed)
        assert.deepStrictEqual((yield* sb.models)[0]!.model_names, ["M One", "M"].sort())
      })))
    }))
})
