import { afterAll, assert, describe, it } from "@effect/vitest"
import { type HardwarePrice, hardwarePriceFields } from "@gpu-market/core"
import { hardwarePriceTable, makeMemoryHardwarePriceStore, type PagePlan, type Predicate, type Scope } from "@gpu-market/core/storage"
import { hardwareDay, hardwareRow, testListingKey } from "@gpu-market/storage-testkit"
import { Effect } from "effect"
import fc from "fast-check"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import {
  compileHardwarePage, hardwareColumnsOf, hardwareRowFromColumns, make, makeClient, makeHardwarePriceStore, migrate, type SqliteClient
} from "../src/internal"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gpu-market-sqlite-hw-"))
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))
let files = 0
const freshFile = () => path.join(dir, `db-${files++}`, "market.db")

/** Every sort the definition allows: each must have an index that serves it. */
const SORTS = hardwarePriceTable.sortable
const instant = (day: number, time = "00:00:00.000000") => `${hardwareDay(day)}T${time}Z`

const withClient = <A, E>(f: (client: SqliteClient) => Effect.Effect<A, E>) =>
  Effect.scoped(Effect.gen(function* () {
    const client = yield* makeClient({ filename: freshFile() })
    yield* migrate(client)
    return yield* f(client)
  }))

/** A row with a distinct, non-null value in every field. */
const fullRow = (): HardwarePrice => hardwareRow({
  listing_key: testListingKey("full"), gpu_canonical_name: "h100-sxm", observed_date: hardwareDay(3),
  listing_last_updated_date: hardwareDay(1), price_amount: 23_000.5, currency: "EUR", price_usd: 25_000.25, price_usd_low: 24_000,
  price_usd_high: 26_000, price_type: "ask", price_per_gpu_system_attach: 3_125, price_basis: "per_server", taxes_included: true,
  payment_terms: "net_30", stock_status: "in_stock", units_available: 3, min_order_quantity: 1, lead_time_weeks: 2.5,
  market: "primary", channel: "var_reseller", source_type: "reseller_quote", confidence: "high", counterparty_class: "dealer",
  transaction_level: "server", gpu_count_in_unit: 8, includes_host_cpus: 2, includes_dram_gb: 2048, includes_storage_tb: 30.72,
  includes_nics: "8x 400G", includes_nvswitch: true, includes_scaleout_fabric: false, includes_chassis_psu: true,
  includes_cooling_hw: "air", software_entitlements: "NVAIE", support_years: 3, warranty_months: 36,
  services_included: ["installation", "burn-in"], condition: "new_sealed", module_packaging: "sxm5", unit_age_months: 0,
  unit_age_basis: "seller_stated", warranty_remaining_months: 36, hours_used: 0, warranty_transferable: false,
  firmware_region_lock: false, country: "DE", country_group: "europe", export_control_regime: "eccn_3a090"
})

describe("hardware schema", () => {
  it.effect("columns are the row's fields in order, then the listing's next day", () =>
    withClient((client) => Effect.sync(() => {
      const cols = client.db.prepare("PRAGMA table_info(hardware_prices)").all() as Array<{ name: string; type: string }>
      assert.deepStrictEqual(cols.map((c) => c.name), [...hardwarePriceFields, "next_observed_date"])
      const types = Object.fromEntries(cols.map((c) => [c.name, c.type]))
      for (const f of ["price_usd", "price_amount", "lead_time_weeks", "includes_dram_gb", "hours_used"]) assert.strictEqual(types[f], "REAL", f)
      for (const f of ["units_available", "gpu_count_in_unit", "includes_host_cpus", "taxes_included", "includes_nvswitch"]) assert.strictEqual(types[f], "INTEGER", f)
    })))

  it("rows are built with column i under field i; booleans and the services list survive the round trip", () => {
    const row = fullRow()
    assert.deepStrictEqual(Object.keys(row), [...hardwarePriceFields])
    const stored = hardwareColumnsOf(row)
    assert.deepStrictEqual(stored.filter((v) => typeof v === "boolean" || Array.isArray(v)), [])
    const back = hardwareRowFromColumns(stored)
    assert.deepStrictEqual(Object.keys(back), [...hardwarePriceFields])
    assert.deepStrictEqual(back, row)
    assert.deepStrictEqual(hardwareRowFromColumns(hardwareColumnsOf(hardwareRow({ ...row, taxes_included: null, services_included: null }))),
      { ...row, taxes_included: null, services_included: null })
  })

  it.effect("a stored row reads back equal, every field", () =>
    Effect.scoped(Effect.gen(function* () {
      const s = (yield* make({ filename: freshFile() })).hardwarePriceStore
      const row = fullRow()
      yield* s.put([row])
      assert.deepStrictEqual(yield* s.page({ scope: { _tag: "latest" }, predicates: [], sort: { by: "price_usd", order: "asc" }, after: undefined, limit: 5 }), [row])
    })))
})

describe("hardware page SQL", () => {
  const explain = (client: SqliteClient, plan: PagePlan) => {
    const { sql, params } = compileHardwarePage(plan)
    return (client.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>).map((r) => r.detail).join("\n")
  }
  const position = (by: string) => ({ value: by === "price_usd" ? 20_000 : by === "observed_date" ? hardwareDay(20) : "m", tie: "8".repeat(32) })

  it.effect("latest (with or without a GPU) and history (each sort; a GPU by day) never sort, for every order and position", () =>
    withClient((client) => Effect.gen(function* () {
      const store = makeHardwarePriceStore(client)
      // Enough rows that a plan is not chosen for an empty table's sake.
      const rows: Array<HardwarePrice> = []
      for (let l = 0; l < 150; l++) for (let d = l % 7; d < 40; d += 1 + (l % 3)) {
        rows.push(hardwareRow({
          listing_key: testListingKey(`plan-${l}`), gpu_canonical_name: `g${l % 9}`, observed_date: hardwareDay(d),
          price_usd: 1000 + ((l * d) % 50) * 10, condition: l % 5 === 0 ? null : `c${l % 3}`, country: l % 2 === 0 ? "US" : "DE"
        }))
      }
      yield* store.put(rows)
      const gpu: Predicate = { op: "in", field: "gpu_canonical_name", values: ["g1"] }
      const window: Scope = { _tag: "window", start: instant(5, "12:00:00.000000"), end: instant(30) }
      const cases: Array<[Scope, ReadonlyArray<Predicate>, ReadonlyArray<string>]> = [
        [{ _tag: "latest" }, [], SORTS],
        [{ _tag: "latest" }, [gpu], SORTS],
        [{ _tag: "latest" }, [{ op: "in", field: "country", values: ["US"] }], SORTS],
        [window, [], SORTS],
        [window, [{ op: "in", field: "country", values: ["US", "DE"] }, { op: "gte", field: "price_usd", value: 1200 }], SORTS],
        [window, [gpu], ["observed_date", "gpu_canonical_name"]]
      ]
      for (const [scope, predicates, sorts] of cases) for (const by of sorts) for (const order of ["asc", "desc"] as const) {
        for (const after of [undefined, position(by)]) {
          const detail = explain(client, { scope, predicates, sort: { by, order }, after, limit: 101 })
          const label = `${scope._tag} ${JSON.stringify(predicates)} ${by} ${order} ${after === undefined ? "first" : "after"}:\n${detail}`
          assert.notInclude(detail, "TEMP B-TREE", label)
          assert.include(detail, "USING", label)
          // A continued page seeks to its position rather than reading from the window's edge.
          if (after !== undefined && by === "observed_date") assert.match(detail, /\(observed_date,observation_id\)[<>]/, label)
        }
      }
      // A listing's own days come from its index, whatever the sort.
      for (const by of SORTS) {
        const detail = explain(client, { scope: window, predicates: [{ op: "eq", field: "listing_key", value: testListingKey("plan-3") }], sort: { by, order: "asc" }, after: undefined, limit: 101 })
        assert.include(detail, "hardware_prices_listing_day", by)
      }
    })))

  it("compiles only the row's own fields and the collection's sorts", () => {
    const base: PagePlan = { scope: { _tag: "latest" }, predicates: [], sort: { by: "price_usd", order: "asc" }, after: undefined, limit: 10 }
    assert.throws(() => compileHardwarePage({ ...base, predicates: [{ op: "eq", field: "price_usd; DROP TABLE x", value: "1" }] }))
    assert.throws(() => compileHardwarePage({ ...base, sort: { by: "hours_used", order: "asc" } }))
    assert.throws(() => compileHardwarePage({ ...base, limit: -1 }))
    assert.notInclude(compileHardwarePage(base).sql, "OFFSET")
  })
})

// ---------------------------------------------------------------------------------------------
// Differential check against the in-memory reference store.

const GPUS = ["a100-sxm-80gb", "h100-sxm", "l40s"]
const rowArb = fc.record({
  listing: fc.integer({ min: 0, max: 14 }),
  day: fc.integer({ min: 0, max: 25 }),
  gpu: fc.constantFrom(...GPUS),
  price: fc.constantFrom(1500, 8000, 8000.5, 25_000, 200_000),
  condition: fc.constantFrom(null, "new_sealed", "refurbished", "used"),
  country: fc.constantFrom(null, "US", "DE", "JP"),
  market: fc.constantFrom(null, "primary", "secondary"),
  units: fc.constantFrom(null, 1, 8)
}).map((r) => hardwareRow({
  listing_key: testListingKey(`diff-${r.listing}`), gpu_canonical_name: r.gpu, observed_date: hardwareDay(r.day), price_usd: r.price,
  condition: r.condition, country: r.country, market: r.market, gpu_count_in_unit: r.units
}))

const dayArb = fc.integer({ min: -2, max: 28 })
const timeArb = fc.constantFrom("00:00:00.000000", "00:00:00.000001", "12:00:00.000000", "23:59:59.999999")
const scopeArb: fc.Arbitrary<Scope> = fc.oneof(
  fc.constant({ _tag: "latest" as const }),
  fc.tuple(dayArb, timeArb).map(([d, t]) => ({ _tag: "asOf" as const, at: instant(d, t) })),
  fc.tuple(dayArb, timeArb, fc.integer({ min: 0, max: 20 }), timeArb).map(([d, t, span, u]) =>
    ({ _tag: "window" as const, start: instant(d, t), end: instant(d + span, u) }))
)
const predicateArb: fc.Arbitrary<Predicate> = fc.oneof(
  fc.subarray(GPUS).map((values) => ({ op: "in" as const, field: "gpu_canonical_name", values })),
  fc.subarray(["new_sealed", "refurbished", "used", ""]).map((values) => ({ op: "in" as const, field: "condition", values })),
  fc.subarray(["US", "DE", "ZZ"]).map((values) => ({ op: "in" as const, field: "country", values })),
  fc.constantFrom("primary", "secondary").map((value) => ({ op: "eq" as const, field: "market", value })),
  fc.integer({ min: 0, max: 14 }).map((l) => ({ op: "eq" as const, field: "listing_key", value: testListingKey(`diff-${l}`) })),
  fc.tuple(fc.constantFrom("gte" as const, "lte" as const), fc.constantFrom("price_usd", "gpu_count_in_unit"), fc.constantFrom(1, 8, 8000, 25_000))
    .map(([op, field, value]) => ({ op, field, value })),
  fc.constantFrom<Predicate>({ op: "eq", field: "gpu_count_in_unit", value: "8" }, { op: "gte", field: "country", value: 1 })
)
const planArb: fc.Arbitrary<PagePlan> = fc.record({
  scope: scopeArb,
  predicates: fc.array(predicateArb, { maxLength: 2 }),
  sort: fc.record({ by: fc.constantFrom(...SORTS), order: fc.constantFrom("asc" as const, "desc" as const) }),
  after: fc.constant(undefined),
  limit: fc.integer({ min: 1, max: 9 })
})
/** A position anywhere, of the right type for the sort, not only one a walk reaches. */
const positionArb = fc.record({
  number: fc.constantFrom(0, 1500, 8000, 8000.5, 25_000, 1e9),
  text: fc.constantFrom("", "a", "h100-sxm", "new_sealed", "used", "zzz", hardwareDay(4), hardwareDay(30)),
  tie: fc.constantFrom("", "0", `${testListingKey("diff-3")}:${hardwareDay(5)}`, "f".repeat(40))
}).map((p) => (by: string): NonNullable<PagePlan["after"]> => ({ value: by === "price_usd" ? p.number : p.text, tie: p.tie }))

describe("hardware differential against the memory store", () => {
  it("returns what the reference returns, page by page, after puts in any order with replacements", () => {
    let runs = 0
    fc.assert(
      fc.property(
        fc.array(fc.array(rowArb, { minLength: 1, maxLength: 40 }), { minLength: 1, maxLength: 4 }),
        fc.array(fc.tuple(planArb, fc.option(positionArb)), { minLength: 20, maxLength: 40 }),
        (batches, plans) => {
          runs++
          Effect.runSync(Effect.scoped(Effect.gen(function* () {
            const sqlite = (yield* make({ filename: freshFile() })).hardwarePriceStore
            const memory = makeMemoryHardwarePriceStore()
            for (const batch of batches) assert.deepStrictEqual(yield* sqlite.put(batch), yield* memory.put(batch))
            assert.deepStrictEqual(yield* sqlite.summary, yield* memory.summary)
            for (const [plan, start] of plans) {
              let after: PagePlan["after"] = start === null ? undefined : start(plan.sort.by)
              for (let n = 0; n < 200; n++) {
                const p: PagePlan = { ...plan, after }
                const got = yield* sqlite.page(p)
                assert.deepStrictEqual(got, yield* memory.page(p), `page ${n} of ${JSON.stringify(p)}`)
                if (got.length < plan.limit) break
                const last = got[got.length - 1]!
                after = { value: (last[plan.sort.by as keyof HardwarePrice] ?? "") as string | number, tie: last.observation_id }
              }
            }
          })))
        }
      ),
      { seed: 20261121, numRuns: 60 }
    )
    assert.strictEqual(runs, 60)
  })
})
