import { afterAll, assert, describe, it } from "@effect/vitest"
import { type AggregatedTransaction, transactionFields } from "@gpu-market/core"
import {
  evaluateTransactionPlan, MemoryStorage, type PagePlan, type Predicate, type Scope, StorageDefect, TransactionStore, transactionTable
} from "@gpu-market/core/storage"
import { Cause, Context, Effect, Either, Exit, Layer, Option } from "effect"
import fc from "fast-check"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { compileTransactionPage, layer, makeClient, migrate, type SqliteClient, transactionFromColumns } from "../src/internal"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gpu-market-sqlite-tx-"))
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))
let files = 0
const freshFile = () => path.join(dir, `db-${files++}`, "market.db")

/** Every sort the definition allows: each must have an index that serves it. */
const SORTS = transactionTable.sortable
const NUMERIC = new Set(["price_usd_per_gpu_hour", "tenor_days", "total_gpu_count"])
const day = (n: number) => new Date(Date.UTC(2026, 0, 1) + n * 86_400_000).toISOString().slice(0, 10)
const instant = (n: number, hour = 0) => new Date(Date.UTC(2026, 0, 1) + n * 86_400_000 + hour * 3_600_000).toISOString().replace("Z", "000Z")

const row = (i: number): AggregatedTransaction => ({
  gpu_model: ["H100", "A100", "B200"][i % 3]!,
  gpu_canonical_name: ["h100-sxm", "a100-sxm-80gb", "b200"][i % 3]!,
  region_group: ["apac", "europe", "north_america"][Math.floor(i / 3) % 3]!,
  contract_type: i % 4 === 0 ? "spot" : "reserved",
  tenor_days: [30, 90, 180, 365][i % 4]!,
  price_usd_per_gpu_hour: 1 + (i % 9) * 0.25,
  total_gpu_count: 8 * (1 + (i % 5)),
  total_gpu_hours: 100 + i,
  transaction_date: day(i % 60),
  discount_percentage: i % 3 === 0 ? null : i % 11,
  is_rolling: i % 4 === 1,
  blend_axis: i % 6 === 0 ? "tenor" : "none",
  blend_tenor_days: [30, 90, 180, 365][i % 4]!,
  blend_region_group: ["apac", "europe", "north_america"][Math.floor(i / 3) % 3]!,
  row_key: `${(i * 2654435761 % 4294967296).toString(16).padStart(8, "0").repeat(4)}-${String(i).padStart(8, "0")}`
})
const ROWS = Array.from({ length: 1500 }, (_, i) => row(i))

const withClient = <A, E>(f: (client: SqliteClient) => Effect.Effect<A, E>) =>
  Effect.scoped(Effect.gen(function* () {
    const client = yield* makeClient({ filename: freshFile() })
    yield* migrate(client)
    return yield* f(client)
  }))

/** Both stores holding `ROWS`, handed to `f` inside one scope. */
const withBoth = <A, E>(f: (sqlite: TransactionStore["Type"], memory: TransactionStore["Type"]) => Effect.Effect<A, E>) =>
  Effect.scoped(Effect.gen(function* () {
    const sqlite = Context.get(yield* Layer.build(layer({ filename: freshFile() })), TransactionStore)
    const memory = Context.get(yield* Layer.build(MemoryStorage.layer), TransactionStore)
    const changes = { deals: [], assign: [], cohorts: [], rows: ROWS.map((r, i) => ({ row: r, cohorts: [`c${i}`] })), series: [] }
    const publish = () => Either.right({ changes, result: undefined })
    yield* sqlite.transact({ deals: [], pools: [] }, publish)
    yield* memory.transact({ deals: [], pools: [] }, publish)
    return yield* f(sqlite, memory)
  }))

describe("aggregated transaction SQL", () => {
  it.effect("the published columns come first, in the row's field order, and are read back in place", () =>
    withClient((client) => Effect.sync(() => {
      const columns = (client.db.prepare("PRAGMA table_info(transaction_rows)").all() as Array<{ name: string }>).map((c) => c.name)
      assert.deepStrictEqual(columns.slice(0, transactionFields.length), [...transactionFields])
      const built = transactionFromColumns(transactionFields.map((f) => (f === "is_rolling" ? 1 : `v-${f}`)))
      assert.deepStrictEqual(Object.keys(built), [...transactionFields])
      for (const f of transactionFields) assert.strictEqual(built[f], f === "is_rolling" ? true : `v-${f}`)
      const { sql } = compileTransactionPage({
        scope: { _tag: "window", start: instant(0), end: instant(9) }, predicates: [], sort: { by: "transaction_date", order: "desc" },
        after: undefined, limit: 10
      })
      // The cohorts behind a row are private: a page never selects them.
      assert.notInclude(sql.split(" FROM ")[0]!, "cohort")
    })))

  it.effect("a page walks an index in order, never sorting, and continues from its position", () =>
    withClient((client) => Effect.sync(() => {
      const insert = client.db.prepare(`INSERT INTO transaction_rows (${transactionFields.join(", ")}, cohort) VALUES (${transactionFields.map(() => "?").join(", ")}, 'c')`)
      client.db.transaction(() => {
        for (const r of ROWS) insert.run(...transactionFields.map((f) => (f === "is_rolling" ? (r.is_rolling ? 1 : 0) : r[f])))
      })()
      const explain = (plan: PagePlan) => {
        const { sql, params } = compileTransactionPage(plan)
        return (client.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>).map((r) => r.detail).join("\n")
      }
      for (const by of SORTS) for (const order of ["asc", "desc"] as const) for (const gpu of [[], [{ op: "in", field: "gpu_canonical_name", values: ["b200"] }]] as Array<Array<Predicate>>) {
        for (const after of [undefined, { value: by === "transaction_date" ? day(20) : NUMERIC.has(by) ? 2 : "m", tie: "8".repeat(32) }]) {
          const plan: PagePlan = { scope: { _tag: "window", start: instant(10, 12), end: instant(50) }, predicates: gpu, sort: { by, order }, after, limit: 101 }
          const text = explain(plan)
          const what = `${by} ${order} ${JSON.stringify(gpu)} ${JSON.stringify(after)}:\n${text}`
          assert.notInclude(text, "TEMP B-TREE", what)
          assert.include(text, "USING INDEX", what)
          if (after !== undefined) assert.include(text, `(${by},row_key)`, what)
        }
      }
    })))

  it.effect("returns what the reference returns for positions anywhere, bounds and pinned sort fields", () =>
    withBoth((sqlite, memory) => Effect.gen(function* () {
      const scopes: Array<Scope> = [
        { _tag: "window", start: instant(0), end: instant(60) },
        { _tag: "window", start: instant(10, 12), end: instant(20, 1) },
        { _tag: "window", start: instant(30), end: instant(30, 1) },
        { _tag: "asOf", at: instant(5) }
      ]
      const predicates: Array<ReadonlyArray<Predicate>> = [
        [],
        [{ op: "in", field: "gpu_canonical_name", values: ["b200"] }],
        [{ op: "in", field: "region_group", values: ["europe"] }],
        [{ op: "eq", field: "contract_type", value: "spot" }, { op: "in", field: "gpu_model", values: ["H100", "A100"] }],
        [{ op: "gte", field: "total_gpu_count", value: 16 }, { op: "lte", field: "total_gpu_count", value: 32 }],
        [{ op: "gte", field: "price_usd_per_gpu_hour", value: 1.5 }, { op: "lte", field: "discount_percentage", value: 5 }],
        [{ op: "in", field: "tenor_days", values: ["30"] }]
      ]
      const positions = (by: string) => [
        undefined,
        ...(by === "transaction_date" ? [day(0), day(15), day(25), day(59), "2030-01-01", "1999-01-01"] : NUMERIC.has(by) ? [0, 2, 16, 1e9] : ["", "europe", "reserved", "H100", "zz"])
          .flatMap((value) => ["0".repeat(32), "8".repeat(32), "f".repeat(41)].map((tie) => ({ value, tie })))
      ]
      let checked = 0
      for (const scope of scopes) for (const preds of predicates) for (const by of SORTS) for (const order of ["asc", "desc"] as const) {
        for (const after of positions(by)) {
          const plan: PagePlan = { scope, predicates: preds, sort: { by, order }, after, limit: 13 }
          assert.deepStrictEqual(yield* sqlite.page(plan), yield* memory.page(plan), JSON.stringify(plan))
          checked++
        }
      }
      assert.isAbove(checked, 5000)
      // Stated by hand: a window from one midnight to 01:00 holds that one date.
      const oneDay = yield* sqlite.page({ scope: scopes[2]!, predicates: [], sort: { by: "row_key", order: "asc" }, after: undefined, limit: 5000 })
      assert.deepStrictEqual(oneDay.map((r) => r.row_key), ROWS.filter((r) => r.transaction_date === day(30)).map((r) => r.row_key).sort())
      assert.isAbove(oneDay.length, 0)
    })))

  it("agrees with the reference on random plans, page by page", () => {
    const planArb = fc.record({
      start: fc.integer({ min: -5, max: 65 }), span: fc.integer({ min: 1, max: 70 }), hour: fc.integer({ min: 0, max: 23 }),
      by: fc.constantFrom(...SORTS, "row_key"), order: fc.constantFrom("asc" as const, "desc" as const),
      gpu: fc.option(fc.subarray(["h100-sxm", "a100-sxm-80gb", "b200", "none"], { minLength: 1 }), { nil: undefined }),
      region: fc.option(fc.constantFrom("apac", "europe"), { nil: undefined }),
      min: fc.option(fc.integer({ min: 0, max: 48 }), { nil: undefined }), limit: fc.integer({ min: 1, max: 40 })
    })
    const plans = fc.sample(planArb, { seed: 20260615, numRuns: 150 })
    Effect.runSync(withBoth((sqlite, memory) => Effect.gen(function* () {
      for (const p of plans) {
        const predicates: Array<Predicate> = []
        if (p.gpu !== undefined) predicates.push({ op: "in", field: "gpu_canonical_name", values: p.gpu })
        if (p.region !== undefined) predicates.push({ op: "eq", field: "region_group", value: p.region })
        if (p.min !== undefined) predicates.push({ op: "gte", field: "total_gpu_count", value: p.min })
        const plan: PagePlan = {
          scope: { _tag: "window", start: instant(p.start, p.hour), end: instant(p.start + p.span) }, predicates,
          sort: { by: p.by, order: p.order }, after: undefined, limit: p.limit
        }
        let after: PagePlan["after"] = undefined
        const all: Array<AggregatedTransaction> = []
        for (let n = 0; n < 2000; n++) {
          const got: ReadonlyArray<AggregatedTransaction> = yield* sqlite.page({ ...plan, after })
          assert.deepStrictEqual(got, yield* memory.page({ ...plan, after }))
          all.push(...got)
          if (got.length < plan.limit) break
          const last: AggregatedTransaction = got[got.length - 1]!
          after = { value: last[plan.sort.by as keyof AggregatedTransaction] as string | number, tie: last.row_key }
        }
        assert.deepStrictEqual(all, evaluateTransactionPlan(ROWS, { ...plan, limit: ROWS.length }))
      }
    })))
  })

  it.effect("plans naming unknown fields or sorting by a nullable or boolean field die with a StorageDefect: a bug, not storage trouble", () =>
    withBoth((sqlite) => Effect.gen(function* () {
      const base: PagePlan = { scope: { _tag: "window", start: instant(0), end: instant(9) }, predicates: [], sort: { by: "transaction_date", order: "asc" }, after: undefined, limit: 5 }
      for (const plan of [
        { ...base, sort: { by: "discount_percentage", order: "asc" as const } },
        { ...base, sort: { by: "is_rolling", order: "asc" as const } },
        { ...base, sort: { by: "cohort", order: "asc" as const } },
        { ...base, predicates: [{ op: "eq" as const, field: "1; DROP TABLE transaction_rows", value: "x" }] }
      ]) {
        const exit = yield* Effect.exit(sqlite.page(plan))
        const defect = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.dieOption(exit.cause)) : undefined
        assert.instanceOf(defect, StorageDefect, JSON.stringify(plan))
      }
    })))
})
