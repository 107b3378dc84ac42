import { assert, type Vitest } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Cause from "effect/Cause"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type { AggregatedTransaction } from "@gpu-market/core"
import { type Cohort, dealPool, evaluateTransactionPlan, type Predicate, type Scope, type Storage, type StoredDeal, type TransactionChanges, type TransactionReads, TransactionStore } from "@gpu-market/core/storage"
import { assertPagesMatchReference } from "./walk.js"
import { followVersion } from "./data-version.js"
import { namespace } from "./namespace.js"

/**
 * Conformance cases of the transaction store, registered by `suite` for every backend. Each test
 * keeps to GPUs, region groups and keys under its own prefix.
 */


const hex32 = (ns: string, n: number) => {
  let h = 0x811c9dc5
  for (const ch of `${ns}/${n}`) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193)
  return ((h >>> 0).toString(16).padStart(8, "0") + n.toString(16).padStart(8, "0")).repeat(2)
}

/** A published row under a namespace; `over` replaces fields. */
export const transactionRow = (ns: string, n: number, over: Partial<AggregatedTransaction> = {}): AggregatedTransaction => ({
  gpu_model: "H100",
  gpu_canonical_name: `${ns}-h100`,
  region_group: "north_america",
  contract_type: "reserved",
  tenor_days: 30,
  price_usd_per_gpu_hour: 2.5,
  total_gpu_count: 16,
  total_gpu_hours: 11_520,
  transaction_date: "2026-01-01",
  discount_percentage: null,
  is_rolling: false,
  blend_axis: "none",
  blend_tenor_days: 30,
  blend_region_group: "north_america",
  row_key: `${hex32(ns, n)}-${String(n).padStart(8, "0")}`,
  ...over
})

const deal = (ns: string, id: string, cohort: string | null, over: Partial<StoredDeal> = {}): StoredDeal => ({
  deal_id: `${ns}-${id}`,
  gpu_canonical_name: `${ns}-h100`,
  gpu_model: "H100",
  region_group: "north_america",
  contract_type: "reserved",
  tenor_days: 30,
  gpu_count: 8,
  gpu_hours: 5760,
  price_usd_per_gpu_hour: 2.5,
  list_price_usd_per_gpu_hour: null,
  settlement_date: "2026-01-01",
  cohort,
  ...over
})

const cohort = (ns: string, id: string, series: string, over: Partial<Cohort> = {}): Cohort => ({
  cohort: `${ns}-${id}`, series, transaction_date: "2026-01-01", deals: 2, gpu_count: 16, gpu_hours: 11_520,
  price_hours: 28_800, list_hours: null, ...over
})

const nothing: TransactionChanges = { deals: [], assign: [], cohorts: [], rows: [], series: [] }

/** Writes a change as it is, reading first what it names (its series included), as a decision must. */
const write = (s: TransactionStore["Type"], reads: TransactionReads, changes: TransactionChanges) =>
  s.transact(reads, (view) => {
    view.series(changes.series.map((x) => x.series))
    return Either.right({ changes, result: undefined })
  })

/**
 * A small published market under one namespace: two GPUs, three region groups, two contract
 * types, four tenors and ten days, with ties in every sort field and some null discounts.
 */
const market = (ns: string): Array<AggregatedTransaction> => {
  const rows: Array<AggregatedTransaction> = []
  let n = 0
  for (const gpu of ["h100", "a100"]) for (let day = 0; day < 10; day++) for (const region of ["apac", "europe", "north_america"]) {
    for (const tenor of [30, 90, 180, 365]) {
      if ((n * 7 + day) % 3 === 0) { n++; continue }
      rows.push(transactionRow(ns, n, {
        gpu_model: gpu.toUpperCase(),
        gpu_canonical_name: `${ns}-${gpu}`,
        region_group: `${ns}-${region}`,
        contract_type: n % 4 === 0 ? "spot" : "reserved",
        tenor_days: tenor,
        price_usd_per_gpu_hour: 1.5 + (n % 5) * 0.25,
        total_gpu_count: 8 * (1 + (n % 4)),
        total_gpu_hours: 1000 + (n % 6) * 10.5,
        transaction_date: `2026-01-${String(day + 1).padStart(2, "0")}`,
        discount_percentage: n % 3 === 0 ? null : (n % 7) * 2.5,
        is_rolling: n % 5 === 0,
        blend_axis: n % 6 === 0 ? "tenor" : "none",
        blend_tenor_days: n % 6 === 0 ? 365 : tenor,
        blend_region_group: `${ns}-${region}`
      }))
      n++
    }
  }
  return rows
}

const SORTS = ["contract_type", "gpu_model", "price_usd_per_gpu_hour", "region_group", "tenor_days", "total_gpu_count", "transaction_date"]

const window = (start: string, end: string): Scope => ({ _tag: "window", start, end })

/** Registers the transaction store's conformance tests on a suite's shared layer. */
export const transactionConformance = (it: Vitest.MethodsNonLive<Storage>) => {
  it.effect("transactions: transact stores deals, cohorts, series and rows; pending, series and audit follow", () =>
    Effect.gen(function* () {
      const s = yield* TransactionStore
      const ns = namespace("txapply")
      const pool = dealPool(deal(ns, "x", null))
      const [d1, d2, d3] = [deal(ns, "d1", `${ns}-c1`), deal(ns, "d2", `${ns}-c1`, { gpu_hours: 100.5, list_price_usd_per_gpu_hour: 3 }), deal(ns, "d3", null, { tenor_days: 90 })]
      const c1 = cohort(ns, "c1", `${ns}-s`)
      const r1 = transactionRow(ns, 1)
      yield* write(s, { deals: [d1.deal_id, d2.deal_id, d3.deal_id], pools: [pool] }, {
        deals: [d1, d2, d3], assign: [], cohorts: [c1], rows: [{ row: r1, cohorts: [c1.cohort] }], series: [{ series: `${ns}-s`, seq: 1, last: c1.cohort }]
      })
      assert.sameDeepMembers([...yield* s.deals([d1.deal_id, d2.deal_id, d3.deal_id, `${ns}-none`])], [d1, d2, d3])
      assert.deepStrictEqual(yield* s.pending([pool, `${ns}-other-pool`]), [d3])
      assert.include(yield* s.pendingPools, pool)
      assert.deepStrictEqual(yield* s.series([`${ns}-s`, `${ns}-unknown`]), [{ series: `${ns}-s`, seq: 1, last: c1 }])
      const mine = (audit: ReadonlyArray<{ row_key: string; deal_ids: ReadonlyArray<string> }>) => audit.filter((a) => a.deal_ids.some((id) => id.startsWith(ns)))
      assert.deepStrictEqual(mine(yield* s.audit), [{ row_key: r1.row_key, deal_ids: [d1.deal_id, d2.deal_id] }])

      // A late partner: the pending deal joins a new cohort, published rolling with the first.
      const d4 = deal(ns, "d4", `${ns}-c2`, { tenor_days: 90 })
      const c2 = cohort(ns, "c2", `${ns}-s`, { list_hours: 400 })
      const r2 = transactionRow(ns, 2, { is_rolling: true, discount_percentage: 12.5, transaction_date: "2026-01-02" })
      const seen = yield* s.transact({ deals: [d4.deal_id], pools: [pool] }, (view) => {
        const series = view.series([`${ns}-s`, `${ns}-unknown`])
        return Either.right({
          changes: {
            deals: [d4], assign: [{ deal_id: d3.deal_id, cohort: c2.cohort }], cohorts: [c2],
            rows: [{ row: r2, cohorts: [c1.cohort, c2.cohort] }], series: [{ series: `${ns}-s`, seq: 2, last: c2.cohort }]
          },
          result: { deals: view.deals, pending: view.pending, series }
        })
      })
      // The step read the pool's pending deal and the series as they stood before it.
      assert.deepStrictEqual(seen, { deals: [], pending: [d3], series: [{ series: `${ns}-s`, seq: 1, last: c1 }] })
      assert.deepStrictEqual(yield* s.pending([pool]), [])
      assert.notInclude(yield* s.pendingPools, pool)
      assert.deepStrictEqual(yield* s.deals([d3.deal_id]), [{ ...d3, cohort: c2.cohort }])
      assert.deepStrictEqual(yield* s.series([`${ns}-s`]), [{ series: `${ns}-s`, seq: 2, last: c2 }])
      assert.deepStrictEqual(mine(yield* s.audit), [
        { row_key: r1.row_key, deal_ids: [d1.deal_id, d2.deal_id] },
        { row_key: r2.row_key, deal_ids: [d1.deal_id, d2.deal_id, d3.deal_id, d4.deal_id].sort() }
      ].sort((a, b) => (a.row_key < b.row_key ? -1 : 1)))
      const page = yield* s.page({
        scope: window("2026-01-01T00:00:00.000000Z", "2026-01-03T00:00:00.000000Z"),
        predicates: [{ op: "in", field: "gpu_canonical_name", values: [`${ns}-h100`] }],
        sort: { by: "transaction_date", order: "asc" }, after: undefined, limit: 10
      })
      assert.deepStrictEqual(page, [r1, r2])
    }))

  it.effect("transactions: the data version moves with every step that publishes rows, and only then", () =>
    Effect.gen(function* () {
      const s = yield* TransactionStore
      const ns = namespace("txversion")
      const v = yield* followVersion(s.version)
      const pool = dealPool(deal(ns, "x", null))
      // A deal without a partner is stored privately: no page changes.
      const lone = deal(ns, "d0", null)
      yield* write(s, { deals: [lone.deal_id], pools: [pool] }, { ...nothing, deals: [lone] })
      yield* v.still
      const [d1, d2] = [deal(ns, "d1", `${ns}-c1`), deal(ns, "d2", `${ns}-c1`)]
      const c1 = cohort(ns, "c1", `${ns}-s`)
      yield* write(s, { deals: [d1.deal_id, d2.deal_id], pools: [pool] }, {
        deals: [d1, d2], assign: [], cohorts: [c1], rows: [{ row: transactionRow(ns, 1), cohorts: [c1.cohort] }], series: [{ series: `${ns}-s`, seq: 1, last: c1.cohort }]
      })
      yield* v.moved
      yield* s.summary
      yield* v.still
    }))

  it.effect("transactions: a refused decision, or one that breaks the rules, writes nothing, not even its progress mark", () =>
    Effect.gen(function* () {
      const s = yield* TransactionStore
      const ns = namespace("txconflict")
      const series = `${ns}-s`
      const c1 = cohort(ns, "c1", series)
      const r1 = transactionRow(ns, 1)
      const pendingDeal = deal(ns, "p", null)
      const pool = dealPool(pendingDeal)
      yield* write(s, { deals: [`${ns}-a`, `${ns}-b`, `${ns}-p`], pools: [] }, {
        ...nothing, deals: [deal(ns, "a", c1.cohort), deal(ns, "b", c1.cohort), pendingDeal], cohorts: [c1],
        rows: [{ row: r1, cohorts: [c1.cohort] }], series: [{ series, seq: 1, last: c1.cohort }]
      })
      const through = `${ns}-through`
      const state = Effect.all([s.mark(through), s.deals([`${ns}-a`, `${ns}-b`, `${ns}-p`, `${ns}-n`]), s.series([series]), s.pending([pool]),
        s.page({ scope: window("2026-01-01T00:00:00.000000Z", "2026-02-01T00:00:00.000000Z"), predicates: [{ op: "in", field: "gpu_canonical_name", values: [`${ns}-h100`] }], sort: { by: "row_key", order: "asc" }, after: undefined, limit: 100 })])
      const before = yield* state
      const c2 = cohort(ns, "c2", series)
      const r2 = transactionRow(ns, 2)
      const reads: TransactionReads = { deals: [`${ns}-n`], pools: [pool] }
      const good: TransactionChanges = {
        deals: [deal(ns, "n", c2.cohort)], assign: [{ deal_id: pendingDeal.deal_id, cohort: c2.cohort }], cohorts: [c2],
        rows: [{ row: r2, cohorts: [c2.cohort] }], series: [{ series, seq: 2, last: c2.cohort }], mark: { name: through, value: "2" }
      }
      const refused = yield* Effect.either(s.transact(reads, () => Either.left("not today")))
      assert.deepStrictEqual(refused, Either.left("not today"))
      assert.deepStrictEqual(yield* state, before)
      const bad: Array<[string, TransactionReads, TransactionChanges]> = [
        ["a deal that exists", { ...reads, deals: [`${ns}-n`, `${ns}-a`] }, { ...good, deals: [...good.deals, deal(ns, "a", c2.cohort)] }],
        ["a deal given twice", reads, { ...good, deals: [...good.deals, deal(ns, "n", c2.cohort)] }],
        ["a deal it did not read", { ...reads, deals: [] }, good],
        ["blending a deal already blended", reads, { ...good, assign: [...good.assign, { deal_id: `${ns}-a`, cohort: c2.cohort }] }],
        ["blending a deal of a pool it did not read", { ...reads, pools: [] }, good],
        ["a cohort that exists", reads, { ...good, cohorts: [c2, c1] }],
        ["a row key that exists", reads, { ...good, rows: [...good.rows, { row: r1, cohorts: [c2.cohort] }] }]
      ]
      for (const [what, r, change] of bad) {
        const exit = yield* Effect.exit(write(s, r, change))
        assert.isTrue(Exit.isFailure(exit) && Cause.isDie(exit.cause), what)
        assert.deepStrictEqual(yield* state, before, what)
      }
      // A series moved without reading it first.
      const unread = yield* Effect.exit(s.transact(reads, () => Either.right({ changes: good, result: undefined })))
      assert.isTrue(Exit.isFailure(unread) && Cause.isDie(unread.cause))
      assert.deepStrictEqual(yield* state, before)
      yield* write(s, reads, good)
      assert.deepStrictEqual((yield* s.series([series]))[0]!.seq, 2)
      assert.deepStrictEqual(yield* s.mark(through), Option.some("2"))
      yield* write(s, { deals: [], pools: [] }, nothing)
      // A write that changes nothing still writes its mark.
      yield* write(s, { deals: [], pools: [] }, { ...nothing, mark: { name: through, value: "3" } })
      assert.deepStrictEqual(yield* s.mark(through), Option.some("3"))
    }))

  it.effect("transactions: pages follow the window's dates, predicates, sort and keyset exactly", () =>
    Effect.gen(function* () {
      const s = yield* TransactionStore
      const ns = namespace("txpage")
      const rows = market(ns)
      yield* write(s, { deals: [], pools: [] }, { ...nothing, rows: rows.map((row, i) => ({ row, cohorts: [`${ns}-c${i}`] })) })
      const mine: Predicate = { op: "in", field: "gpu_canonical_name", values: [`${ns}-h100`, `${ns}-a100`] }
      const scopes: Array<Scope> = [
        window("2026-01-01T00:00:00.000000Z", "2026-01-11T00:00:00.000000Z"),
        // A date is in when its midnight is: the 3rd is out (midnight before start), the 7th in.
        window("2026-01-02T00:00:00.000001Z", "2026-01-07T00:00:00.000001Z"),
        window("2026-01-05T12:00:00.000000Z", "2026-01-05T18:00:00.000000Z"),
        { _tag: "latest" },
        { _tag: "asOf", at: "2026-01-05T00:00:00.000000Z" }
      ]
      const extra: Array<ReadonlyArray<Predicate>> = [
        [],
        [{ op: "in", field: "gpu_canonical_name", values: [`${ns}-h100`] }],
        [{ op: "in", field: "region_group", values: [`${ns}-apac`, `${ns}-europe`] }, { op: "eq", field: "contract_type", value: "reserved" }],
        [{ op: "gte", field: "total_gpu_count", value: 16 }, { op: "lte", field: "total_gpu_count", value: 24 }],
        [{ op: "gte", field: "discount_percentage", value: 5 }, { op: "lte", field: "price_usd_per_gpu_hour", value: 2 }],
        [{ op: "in", field: "contract_type", values: ["none-such"] }]
      ]
      yield* assertPagesMatchReference(s.page, evaluateTransactionPlan, rows, "row_key", { scopes, mine, extra, sorts: SORTS, limit: 7 })
      // Stated by hand: the dates of the second window, and nothing outside a window scope.
      const got = yield* s.page({ scope: scopes[1]!, predicates: [mine], sort: { by: "transaction_date", order: "asc" }, after: undefined, limit: 1000 })
      assert.deepStrictEqual([...new Set(got.map((r) => r.transaction_date))], ["2026-01-03", "2026-01-04", "2026-01-05", "2026-01-06", "2026-01-07"])
      assert.strictEqual(got.length, rows.filter((r) => r.transaction_date >= "2026-01-03" && r.transaction_date <= "2026-01-07").length)
      assert.deepStrictEqual(yield* s.page({ scope: scopes[2]!, predicates: [mine], sort: { by: "row_key", order: "asc" }, after: undefined, limit: 10 }), [])
      assert.deepStrictEqual(yield* s.page({ scope: { _tag: "latest" }, predicates: [mine], sort: { by: "row_key", order: "asc" }, after: undefined, limit: 10 }), [])
    }))

  it.effect("transactions: the summary lists published values and per-GPU coverage", () =>
    Effect.gen(function* () {
      const s = yield* TransactionStore
      const ns = namespace("txsummary")
      const rows = market(ns)
      // Pending deals are never part of the summary.
      yield* write(s, { deals: [`${ns}-lone`], pools: [] }, { ...nothing, deals: [deal(ns, "lone", null, { region_group: `${ns}-hidden`, gpu_canonical_name: `${ns}-hidden` })], rows: rows.map((row, i) => ({ row, cohorts: [`${ns}-c${i}`] })) })
      const summary = yield* s.summary
      for (const r of ["apac", "europe", "north_america"]) assert.include(summary.region_groups, `${ns}-${r}`)
      assert.notInclude(summary.region_groups, `${ns}-hidden`)
      assert.includeMembers([...summary.contract_types], ["reserved", "spot"])
      assert.includeMembers([...summary.tenors], [30, 90, 180, 365])
      assert.deepStrictEqual([...summary.tenors], [...summary.tenors].sort((a, b) => a - b))
      assert.deepStrictEqual([...summary.region_groups], [...summary.region_groups].sort())
      const gpus = summary.gpus.filter((g) => g.gpu_canonical_name.startsWith(ns))
      const count = (gpu: string) => rows.filter((r) => r.gpu_canonical_name === `${ns}-${gpu}`).length
      assert.deepStrictEqual(gpus, [
        { gpu_canonical_name: `${ns}-a100`, gpu_model: "A100", first_transaction_date: "2026-01-01", last_transaction_date: "2026-01-10", rows: count("a100") },
        { gpu_canonical_name: `${ns}-h100`, gpu_model: "H100", first_transaction_date: "2026-01-01", last_transaction_date: "2026-01-10", rows: count("h100") }
      ])
    }))
}
