import { assert, describe, it, layer } from "@effect/vitest"
import { type AggregatedTransaction, InvalidRecords, type TransactionDealInput, TransactionIngest } from "@gpu-market/core"
import { dealPool, TransactionStore } from "@gpu-market/core/storage"
import { Effect, Either, Exit, Layer } from "effect"
import fc from "fast-check"
import { emptyMarket } from "./support/transactions"

const everything = Effect.flatMap(TransactionStore, (s) => s.page({
  scope: { _tag: "window", start: "2000-01-01T00:00:00.000000Z", end: "2100-01-01T00:00:00.000000Z" },
  predicates: [], sort: { by: "row_key", order: "asc" }, after: undefined, limit: 100_000
}))
const audit = Effect.flatMap(TransactionStore, (s) => s.audit)
const record = (deals: ReadonlyArray<unknown>) => Effect.flatMap(TransactionIngest, (i) => i.record(deals))

const deal = (deal_id: string, over: Partial<TransactionDealInput> = {}): TransactionDealInput => ({
  deal_id, gpu_canonical_name: "h100-sxm", gpu_model: "H100", region_group: "north_america", contract_type: "reserved",
  tenor_days: 30, gpu_count: 8, gpu_hours: 1000, price_usd_per_gpu_hour: 2, settlement_date: "2026-06-01", ...over
})

/** The rows of an `everything` read, as `[row_key → row]`, with the deals audit says are in each. */
const withDeals = Effect.gen(function* () {
  const rows = yield* everything
  const members = new Map((yield* audit).map((a) => [a.row_key, a.deal_ids]))
  return rows.map((row) => ({ row, deals: members.get(row.row_key) ?? [] }))
})

const failure = <A, E>(exit: Exit.Exit<A, E>): E | undefined =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined

describe("aggregated transactions write path", () => {
  it.effect("a blend's price is Σ(price × GPU-hours) / Σ GPU-hours; totals are sums; discount compares with list prices", () =>
    Effect.gen(function* () {
      // Three deals of one cell: (2.00 × 100 + 3.00 × 300 + 2.50 × 200) / 600 = 1600 / 600 = 2.666667.
      // List: 2.50 × 100 + 4.00 × 300 + 3.00 × 200 = 2050, so the discount is 100 × (1 − 1600 / 2050) = 21.9512.
      const summary = yield* record([
        deal("a", { price_usd_per_gpu_hour: 2, gpu_hours: 100, gpu_count: 8, list_price_usd_per_gpu_hour: 2.5 }),
        deal("b", { price_usd_per_gpu_hour: 3, gpu_hours: 300, gpu_count: 16, list_price_usd_per_gpu_hour: 4 }),
        deal("c", { price_usd_per_gpu_hour: 2.5, gpu_hours: 200, gpu_count: 8, list_price_usd_per_gpu_hour: 3 })
      ])
      assert.deepStrictEqual(summary, { received: 3, recorded: 3, duplicates: 0, blended: 3, published: 1, pending: 0 })
      const [row] = yield* everything
      assert.deepStrictEqual({ ...row!, row_key: "" }, {
        gpu_model: "H100", gpu_canonical_name: "h100-sxm", region_group: "north_america", contract_type: "reserved", tenor_days: 30,
        price_usd_per_gpu_hour: 2.666667, total_gpu_count: 32, total_gpu_hours: 600, transaction_date: "2026-06-01",
        discount_percentage: 21.9512, is_rolling: false, blend_axis: "none", blend_tenor_days: 30, blend_region_group: "north_america",
        row_key: ""
      })
      assert.match(row!.row_key, /^[0-9a-f]{32}-00000001$/)

      // Two tenors of one region group and day: (1.50 × 240 + 2.10 × 720) / 960 = 1872 / 960 = 1.95. The
      // 30-day deal gives a discount (25% off a list of 2.00), the 90-day one no list price: the discount is null.
      yield* record([
        deal("t30", { gpu_canonical_name: "b200", gpu_model: "B200", tenor_days: 30, price_usd_per_gpu_hour: 1.5, gpu_hours: 240, discount_percentage: 25 }),
        deal("t90", { gpu_canonical_name: "b200", gpu_model: "B200", tenor_days: 90, price_usd_per_gpu_hour: 2.1, gpu_hours: 720 })
      ])
      // Two region groups of one tenor and day, both with list prices: (2 × 100 + 2.5 × 100) / 200 = 2.25,
      // list (2.5 × 100 + 2.5 × 100) = 500, so 100 × (1 − 450 / 500) = 10.
      yield* record([
        deal("eu", { gpu_canonical_name: "l40s", gpu_model: "L40S", region_group: "europe", tenor_days: 180, gpu_hours: 100, price_usd_per_gpu_hour: 2, discount_percentage: 20 }),
        deal("ap", { gpu_canonical_name: "l40s", gpu_model: "L40S", region_group: "apac", tenor_days: 180, gpu_hours: 100, gpu_count: 1, price_usd_per_gpu_hour: 2.5, list_price_usd_per_gpu_hour: 2.5 })
      ])
      const rows = yield* everything
      const tenor = rows.find((r) => r.gpu_canonical_name === "b200")!
      assert.deepStrictEqual(
        [tenor.price_usd_per_gpu_hour, tenor.total_gpu_count, tenor.total_gpu_hours, tenor.discount_percentage, tenor.blend_axis, tenor.tenor_days, tenor.blend_tenor_days, tenor.region_group, tenor.blend_region_group],
        [1.95, 16, 960, null, "tenor", 30, 90, "north_america", "north_america"]
      )
      const region = rows.find((r) => r.gpu_canonical_name === "l40s")!
      assert.deepStrictEqual(
        [region.price_usd_per_gpu_hour, region.total_gpu_count, region.total_gpu_hours, region.discount_percentage, region.blend_axis, region.tenor_days, region.blend_tenor_days, region.region_group, region.blend_region_group],
        [2.25, 9, 200, 10, "region_group", 180, 180, "apac", "europe"]
      )
    }).pipe(Effect.provide(emptyMarket("tx-vwap"))))

  it.effect("a thin (two-deal) blend rolls in its series' previous blend; three deals or a week's gap stand alone", () =>
    Effect.gen(function* () {
      const day = (d: string, ids: ReadonlyArray<string>, price: number) =>
        record(ids.map((id) => deal(id, { settlement_date: d, price_usd_per_gpu_hour: price, gpu_hours: 100, gpu_count: 2 })))
      yield* day("2026-06-01", ["a1", "a2"], 2)
      yield* day("2026-06-02", ["b1", "b2"], 3)
      yield* day("2026-06-03", ["c1", "c2", "c3"], 4)
      yield* day("2026-06-05", ["d1", "d2"], 5)
      yield* day("2026-06-13", ["e1", "e2"], 6)
      const rows = yield* withDeals
      assert.deepStrictEqual(rows.map(({ row, deals }) => [row.transaction_date, row.is_rolling, deals, row.total_gpu_count, row.total_gpu_hours, row.price_usd_per_gpu_hour]), [
        ["2026-06-01", false, ["a1", "a2"], 4, 200, 2],
        // (3 × 200 + 2 × 200) / 400: the rolling row counts a1 and a2 again.
        ["2026-06-02", true, ["a1", "a2", "b1", "b2"], 8, 400, 2.5],
        ["2026-06-03", false, ["c1", "c2", "c3"], 6, 300, 4],
        ["2026-06-05", true, ["c1", "c2", "c3", "d1", "d2"], 10, 500, 4.4],
        // The previous blend is eight days older: no rolling.
        ["2026-06-13", false, ["e1", "e2"], 4, 200, 6]
      ])
      // One series, numbered in publication order.
      const prefix = rows[0]!.row.row_key.slice(0, 32)
      assert.deepStrictEqual(rows.map(({ row }) => row.row_key), [1, 2, 3, 4, 5].map((n) => `${prefix}-0000000${n}`))
      // Summing rows double-counts: 32 GPUs in rows, 22 in deals.
      assert.strictEqual(rows.reduce((n, { row }) => n + row.total_gpu_count, 0), 32)
    }).pipe(Effect.provide(emptyMarket("tx-rolling"))))

  it.effect("a lone deal stays unpublished until a compatible partner arrives", () =>
    Effect.gen(function* () {
      assert.strictEqual((yield* record([deal("lone", { region_group: "north_america", tenor_days: 30 })])).published, 0)
      // Not partners: another GPU, another day, another contract type, or another region group and tenor.
      const strangers = [
        deal("other-gpu", { gpu_canonical_name: "b200", gpu_model: "B200" }),
        deal("other-day", { settlement_date: "2026-06-02" }),
        deal("other-contract", { contract_type: "spot" }),
        deal("other-both", { region_group: "europe", tenor_days: 90 })
      ]
      for (const d of strangers) assert.deepStrictEqual(yield* record([d]), { received: 1, recorded: 1, duplicates: 0, blended: 0, published: 0, pending: d.deal_id === "other-both" ? 2 : 1 })
      assert.deepStrictEqual(yield* everything, [])
      assert.deepStrictEqual((yield* Effect.flatMap(TransactionStore, (s) => s.summary)).gpus, [])
      // A partner of the same tenor in another region group: the two are published together.
      const joined = yield* record([deal("partner", { region_group: "apac", tenor_days: 30 })])
      assert.deepStrictEqual(joined, { received: 1, recorded: 1, duplicates: 0, blended: 2, published: 1, pending: 1 })
      assert.deepStrictEqual((yield* withDeals).map(({ row, deals }) => [row.blend_axis, row.region_group, row.blend_region_group, deals]), [
        ["region_group", "apac", "north_america", ["lone", "partner"]]
      ])
      // other-both still waits; a 30-day deal in its region group pairs with it across tenors.
      yield* record([deal("eu-30", { region_group: "europe", tenor_days: 30 })])
      const rows = yield* withDeals
      assert.strictEqual(rows.length, 2)
      const tenor = rows.find(({ row }) => row.blend_axis === "tenor")!
      assert.deepStrictEqual(tenor.deals, ["eu-30", "other-both"])
      assert.deepStrictEqual([tenor.row.tenor_days, tenor.row.blend_tenor_days], [30, 90])
    }).pipe(Effect.provide(emptyMarket("tx-lone"))))

  it.effect("publication is idempotent: publishing again or recording a batch again adds nothing", () =>
    Effect.gen(function* () {
      const batch = [
        deal("x1"), deal("x2"), deal("x3", { tenor_days: 90 }), deal("x4", { tenor_days: 180 }),
        deal("x5", { region_group: "apac", tenor_days: 180 }), deal("x6", { region_group: "europe", tenor_days: 180 })
      ]
      const first = yield* record(batch)
      assert.deepStrictEqual(first, { received: 6, recorded: 6, duplicates: 0, blended: 6, published: 3, pending: 0 })
      const rows = yield* everything
      const members = yield* audit
      assert.deepStrictEqual(yield* Effect.flatMap(TransactionIngest, (i) => i.publish()), { received: 0, recorded: 0, duplicates: 0, blended: 0, published: 0, pending: 0 })
      assert.deepStrictEqual(yield* record(batch), { received: 6, recorded: 0, duplicates: 6, blended: 0, published: 0, pending: 0 })
      assert.deepStrictEqual(yield* record([...batch].reverse()), { received: 6, recorded: 0, duplicates: 6, blended: 0, published: 0, pending: 0 })
      assert.deepStrictEqual(yield* everything, rows)
      assert.deepStrictEqual(yield* audit, members)
      // The same stream on another store publishes the same rows, keys included.
      const again = yield* Effect.provide(Effect.zipRight(record(batch), everything), emptyMarket("tx-idem-2"))
      assert.deepStrictEqual(again, rows)
      // A known deal id with other terms is refused, and nothing changes.
      const changed = failure(yield* Effect.exit(record([deal("x1", { price_usd_per_gpu_hour: 9 })])))
      assert.instanceOf(changed, InvalidRecords)
      assert.include((changed as InvalidRecords).detail, "already recorded")
      assert.deepStrictEqual(yield* everything, rows)
    }).pipe(Effect.provide(emptyMarket("tx-idem"))))

  it.effect("a writer decides on the store as it stands inside its step: a compatible deal another writer just recorded is blended, not left waiting", () => {
    // Another process records a compatible deal of the same pool after this writer decoded its
    // batch and before its step reads the pool.
    let raced = false
    const racing = Layer.effect(TransactionStore, Effect.map(TransactionStore, (store): TransactionStore["Type"] => ({
      ...store,
      transact: (reads, decide) => Effect.suspend(() => {
        if (raced) return store.transact(reads, decide)
        raced = true
        const other = { ...deal("other-writer"), list_price_usd_per_gpu_hour: null, cohort: null }
        return Effect.zipRight(
          store.transact({ deals: [other.deal_id], pools: [] }, () =>
            Either.right({ changes: { deals: [other], assign: [], cohorts: [], rows: [], series: [] }, result: undefined })),
          store.transact(reads, decide)
        )
      })
    })))
    const ingest = TransactionIngest.Default.pipe(Layer.provide(racing))
    return Effect.gen(function* () {
      const summary = yield* Effect.flatMap(TransactionIngest, (i) => i.record([deal("mine")])).pipe(Effect.provide(ingest))
      assert.isTrue(raced)
      assert.deepStrictEqual(summary, { received: 1, recorded: 1, duplicates: 0, blended: 2, published: 1, pending: 0 })
      assert.deepStrictEqual((yield* withDeals).map(({ deals }) => deals), [["mine", "other-writer"]])
    }).pipe(Effect.provide(emptyMarket("tx-race")))
  })

  it.effect("a bad record refuses the whole batch with its index and reason; nothing is stored", () =>
    Effect.gen(function* () {
      const good = [deal("g1"), deal("g2")]
      const bad: Array<[unknown, string]> = [
        [{ ...deal("b"), price_usd_per_gpu_hour: -1 }, "price_usd_per_gpu_hour"],
        [{ ...deal("b"), seller: "acme" }, "unknown field"],
        [deal("b", { list_price_usd_per_gpu_hour: 3, discount_percentage: 10 }), "not both"],
        [deal("b", { gpu_count: 1, tenor_days: 30, gpu_hours: 721 }), "gpu_hours"],
        [deal("b", { settlement_date: "2026-02-30" }), "settlement_date"],
        [deal("b", { region_group: "North America" }), "region_group"],
        [deal("b", { tenor_days: 0 }), "tenor_days"],
        [deal("b", { discount_percentage: 100 }), "discount_percentage"],
        [deal("g1"), "given twice"],
        [{ ...deal("b"), deal_id: undefined }, "deal_id"],
        ["not a deal", "record"]
      ]
      for (const [record_, says] of bad) {
        const error = failure(yield* Effect.exit(record([...good, record_])))
        assert.instanceOf(error, InvalidRecords, says)
        assert.strictEqual((error as InvalidRecords).errors[0]!.index, 2, says)
        assert.include((error as InvalidRecords).detail, says)
      }
      const store = yield* TransactionStore
      assert.deepStrictEqual(yield* store.deals(["g1", "g2", "b"]), [])
      assert.deepStrictEqual(yield* store.pendingPools, [])
      assert.deepStrictEqual(yield* everything, [])
      assert.strictEqual((yield* record(good)).published, 1)
    }).pipe(Effect.provide(emptyMarket("tx-atomic"))))
})

/**
 * The columns of the deals that no combination of rows isolates. Rows are 0/1 vectors over deals;
 * a deal's figures (count, GPU-hours, price × GPU-hours, list × GPU-hours) can be derived from
 * published rows exactly when its unit vector is in their row space. In reduced row echelon form
 * that is when some row has a single non-zero entry. Exact: integer elimination over BigInt.
 */
const isolatedDeals = (matrix: ReadonlyArray<ReadonlyArray<number>>): Array<number> => {
  const rows = matrix.map((r) => r.map(BigInt))
  const width = rows[0]?.length ?? 0
  const abs = (v: bigint) => (v < 0n ? -v : v)
  const gcd = (a: bigint, b: bigint): bigint => (b === 0n ? a : gcd(b, a % b))
  let rank = 0
  for (let c = 0; c < width && rank < rows.length; c++) {
    const p = rows.findIndex((r, i) => i >= rank && r[c] !== 0n)
    if (p < 0) continue
    ;[rows[rank], rows[p]] = [rows[p]!, rows[rank]!]
    const pivot = rows[rank]!
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!
      if (i === rank || row[c] === 0n) continue
      const a = pivot[c]!, b = row[c]!
      const next = row.map((v, k) => a * v - b * pivot[k]!)
      const g = next.reduce((acc, v) => gcd(acc, abs(v)), 0n)
      rows[i] = g > 1n ? next.map((v) => v / g) : next
    }
    rank++
  }
  const out: Array<number> = []
  for (const row of rows) {
    const nonZero = row.flatMap((v, k) => (v === 0n ? [] : [k]))
    if (nonZero.length === 1) out.push(nonZero[0]!)
  }
  return out.sort((a, b) => a - b)
}

const dealArb = fc.record({
  gpu: fc.constantFrom("g1", "g2"),
  region: fc.constantFrom("r1", "r2", "r3"),
  tenor: fc.constantFrom(30, 90, 180),
  day: fc.constantFrom(1, 2, 3, 12),
  count: fc.integer({ min: 1, max: 4 }),
  hoursPerGpu: fc.integer({ min: 1, max: 720 }),
  price: fc.constantFrom(1, 1.5, 2.25, 3),
  list: fc.option(fc.constantFrom(3, 4), { nil: null })
})
type StreamDeal = typeof dealArb extends fc.Arbitrary<infer T> ? T : never
const streamArb = fc.array(fc.array(dealArb, { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 6 })

let run = 0

describe("untraceability", () => {
  it("the checker finds what a combination of rows reveals", () => {
    assert.deepStrictEqual(isolatedDeals([[1, 1, 0], [1, 1, 1]]), [2])
    assert.deepStrictEqual(isolatedDeals([[1, 1, 0], [0, 1, 1], [1, 0, 1]]), [0, 1, 2])
    assert.deepStrictEqual(isolatedDeals([[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]]), [])
    assert.deepStrictEqual(isolatedDeals([[1, 1, 0, 0], [1, 1, 1, 1], [0, 0, 1, 1]]), [])
  })

  layer(emptyMarket("tx-property"), { timeout: "300 seconds" })((it) => {
    it.effect("property: over random deal streams, no combination of published rows isolates a deal", () =>
      Effect.gen(function* () {
        const context = yield* Effect.context<TransactionIngest | TransactionStore>()
        const check = (stream: ReadonlyArray<ReadonlyArray<StreamDeal>>) =>
          Effect.gen(function* () {
            const ns = `p${run++}`
            const inputs = new Map<string, TransactionDealInput>()
            const gpus = [`${ns}-g1`, `${ns}-g2`]
            for (const [b, batch] of stream.entries()) {
              yield* record(batch.map((d, i) => {
                const input = deal(`${ns}-${b}-${i}`, {
                  gpu_canonical_name: `${ns}-${d.gpu}`, gpu_model: d.gpu.toUpperCase(), region_group: d.region, tenor_days: d.tenor,
                  settlement_date: `2026-06-${String(d.day).padStart(2, "0")}`, gpu_count: d.count, gpu_hours: d.count * d.hoursPerGpu,
                  price_usd_per_gpu_hour: d.price, ...(d.list === null ? {} : { list_price_usd_per_gpu_hour: d.list })
                })
                inputs.set(input.deal_id, input)
                return input
              }))
              const store = yield* TransactionStore
              const published: Array<AggregatedTransaction> = (yield* everything).filter((r) => gpus.includes(r.gpu_canonical_name))
              const members = new Map((yield* audit).map((a) => [a.row_key, a.deal_ids]))
              const sets = published.map((r) => members.get(r.row_key)!)
              // 1. Every row blends at least two deals.
              for (const s of sets) assert.isAtLeast(s.length, 2)
              // 2. No two rows differ by exactly one deal where one contains the other.
              for (const a of sets) for (const b of sets) {
                if (b.length === a.length + 1) assert.isFalse(a.every((id) => b.includes(id)), `${a} within ${b}`)
              }
              // 3. No combination of rows isolates a deal.
              const ids = [...new Set(sets.flat())].sort()
              const isolated = isolatedDeals(sets.map((s) => ids.map((id) => (s.includes(id) ? 1 : 0))))
              assert.deepStrictEqual(isolated.map((k) => ids[k]), [])
              // 4. Each row's figures are those of its deals.
              for (const [k, row] of published.entries()) {
                const ds = sets[k]!.map((id) => inputs.get(id)!)
                const hours = ds.reduce((n, d) => n + d.gpu_hours, 0)
                assert.strictEqual(row.total_gpu_count, ds.reduce((n, d) => n + d.gpu_count, 0))
                assert.closeTo(row.total_gpu_hours, hours, 1e-6)
                assert.closeTo(row.price_usd_per_gpu_hour, ds.reduce((n, d) => n + d.price_usd_per_gpu_hour * d.gpu_hours, 0) / hours, 1e-6)
                const lists = ds.every((d) => d.list_price_usd_per_gpu_hour != null)
                assert.strictEqual(row.discount_percentage === null, !lists)
              }
              // 5. is_rolling: the row shares a deal with the row before it in its series.
              const order = published.map((r, k) => ({ r, s: sets[k]! })).sort((x, y) => (x.r.row_key < y.r.row_key ? -1 : 1))
              for (const [k, { r, s }] of order.entries()) {
                const before = k > 0 && order[k - 1]!.r.row_key.slice(0, 32) === r.row_key.slice(0, 32) ? order[k - 1]!.s : []
                assert.strictEqual(r.is_rolling, s.some((id) => before.includes(id)), r.row_key)
              }
              // 6. What still waits has no partner: no two pending deals of one pool share a region group or tenor.
              const pending = yield* store.pending([...new Set([...inputs.values()].map((d) => dealPool(d)))])
              for (const a of pending) for (const b of pending) {
                if (a.deal_id < b.deal_id && dealPool(a) === dealPool(b)) {
                  assert.isFalse(a.region_group === b.region_group || a.tenor_days === b.tenor_days, `${a.deal_id} and ${b.deal_id} could blend`)
                }
              }
              assert.strictEqual(pending.length + new Set(sets.flat()).size, inputs.size, "every deal is pending or published")
            }
            // Publishing again adds nothing.
            assert.strictEqual((yield* Effect.flatMap(TransactionIngest, (i) => i.publish())).published, 0)
          })
        yield* Effect.promise(() =>
          fc.assert(fc.asyncProperty(streamArb, (stream) => Effect.runPromise(Effect.provide(check(stream), context))), {
            numRuns: 80, seed: 20260615
          }))
      }))
  })
})
