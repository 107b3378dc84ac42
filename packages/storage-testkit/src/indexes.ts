import { assert, type Vitest } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { type FleetWeight, formatDate, formatInstant, IndexDefinition, type IndexDefinitionInput, type IndexValue, MICROS_PER_DAY } from "@gpu-market/core"
import { evaluateIndexPlan, indexCoverage, IndexStore, INTRADAY_MICROS, type PagePlan, type Scope, type Storage } from "@gpu-market/core/storage"
import { walk } from "./walk.js"
import { followVersion } from "./data-version.js"
import { namespace } from "./namespace.js"

/**
 * Conformance cases of the index store, registered by `suite` for every backend. Each test keeps
 * to index ids and GPUs under its own prefix.
 */


const T0 = Date.UTC(2026, 0, 1) * 1000

/** A valid computed rental definition; `over` replaces fields. */
export const indexDefinition = (id: string, over: Partial<IndexDefinitionInput> = {}): IndexDefinition =>
  Schema.decodeUnknownSync(IndexDefinition)({
    id, index_type: "gpu_rental_price", row_type: "daily", asset: "gpu_compute_rental", tenor: "on_demand",
    publication: "end_of_utc_day", interval: "P1D", title: `Index ${id}`, description: "A test index.", gpu_family: "H100",
    gpu_group: "h100-sxm", region_group: "global", contract_type: "ondemand", vendor_category: "all", source: "computed", gpu_model: null,
    inputs: { kind: "rental", starts_at: "2026-01-01", gpus: ["h100-sxm"], contract_types: ["ondemand"], regions: null, vendors: null },
    ...over
  })

/**
 * Values of a daily and an intraday index under a namespace, with ties in `value` and one
 * administered-style value without an envelope.
 */
const market = (ns: string): Array<IndexValue> => {
  const out: Array<IndexValue> = []
  for (let d = 0; d < 12; d++) {
    if (d === 5) continue // a gap
    const value = 2 + (d % 4) * 0.25
    out.push({ id: `${ns}-daily`, type: "daily", timestamp: formatDate(T0 + d * MICROS_PER_DAY), value, p5: d === 7 ? null : value - 0.5, p95: d === 7 ? null : value + 0.5 })
  }
  for (let i = 0; i < 30; i++) {
    if (i === 11 || i === 12) continue
    const value = 1 + (i % 3) * 0.5
    out.push({ id: `${ns}-intraday`, type: "intraday", timestamp: formatInstant(T0 + i * INTRADAY_MICROS), value, p5: value - 0.1, p95: value + 0.1 })
  }
  return out
}

const at = (micros: number) => formatInstant(micros)

/** Registers the index store's conformance tests on a suite's shared layer. */
export const indexConformance = (it: Vitest.MethodsNonLive<Storage>) => {
  it.effect("indexes: definitions are stored by id, replaced in place, and keep their cursor", () =>
    Effect.gen(function* () {
      const s = yield* IndexStore
      const ns = namespace("ixdef")
      const b = indexDefinition(`${ns}-b`), a = indexDefinition(`${ns}-a`, { row_type: "intraday", interval: "PT30M", gpu_model: "h100-sxm" })
      yield* s.define([b, a])
      const mine = () => Effect.map(s.definitions, (all) => all.filter((d) => d.definition.id.startsWith(ns)))
      assert.deepStrictEqual(yield* mine(), [{ definition: a, computed_through: null }, { definition: b, computed_through: null }])
      assert.deepStrictEqual(yield* s.definition(`${ns}-a`), Option.some(a))
      assert.isTrue(Option.isNone(yield* s.definition(`${ns}-none`)))
      // Cursors only move forward, and a cursor of an unknown id is ignored.
      yield* s.apply({ clear: [], values: [], cursors: [{ id: `${ns}-b`, through: at(T0 + MICROS_PER_DAY) }, { id: `${ns}-none`, through: at(T0) }] })
      yield* s.apply({ clear: [], values: [], cursors: [{ id: `${ns}-b`, through: at(T0) }] })
      const retitled = { ...b, title: "Renamed" }
      yield* s.define([retitled])
      assert.deepStrictEqual(yield* mine(), [{ definition: a, computed_through: null }, { definition: retitled, computed_through: at(T0 + MICROS_PER_DAY) }])
    }))

  it.effect("indexes: fleet weights are replaced per GPU and listed by GPU, then valid_from", () =>
    Effect.gen(function* () {
      const s = yield* IndexStore
      const ns = namespace("ixw")
      const w = (gpu: string, day: number, weight: number, to: number | null): FleetWeight => ({
        gpu_canonical_name: `${ns}-${gpu}`, weight, valid_from: at(T0 + day * MICROS_PER_DAY), valid_to: to === null ? null : at(T0 + to * MICROS_PER_DAY)
      })
      yield* s.putWeights([`${ns}-b`, `${ns}-a`], [w("b", 5, 2, null), w("b", 0, 1, 5), w("a", 0, 0.5, null)])
      const mine = () => Effect.map(s.weights, (all) => all.filter((x) => x.gpu_canonical_name.startsWith(ns)))
      assert.deepStrictEqual(yield* mine(), [w("a", 0, 0.5, null), w("b", 0, 1, 5), w("b", 5, 2, null)])
      // Naming a GPU without weights clears it; GPUs not named keep theirs.
      yield* s.putWeights([`${ns}-b`, `${ns}-c`], [w("c", 1, 3, null)])
      assert.deepStrictEqual(yield* mine(), [w("a", 0, 0.5, null), w("c", 1, 3, null)])
    }))

  it.effect("indexes: apply clears a range, then upserts by (id, timestamp)", () =>
    Effect.gen(function* () {
      const s = yield* IndexStore
      const ns = namespace("ixapply")
      const values = market(ns)
      yield* s.apply({ clear: [], values, cursors: [] })
      const daily = (plan: Partial<PagePlan> = {}) => s.page({
        scope: { _tag: "window", start: at(T0), end: at(T0 + 100 * MICROS_PER_DAY) },
        predicates: [{ op: "eq", field: "id", value: `${ns}-daily` }], sort: { by: "timestamp", order: "asc" }, after: undefined, limit: 100, ...plan
      })
      assert.deepStrictEqual(yield* daily(), values.filter((v) => v.id === `${ns}-daily`))
      const replaced = { ...values[0]!, value: 9, p5: null, p95: null }
      // Days 2 and 3 go; day 0 is replaced; the intraday index is untouched.
      yield* s.apply({ clear: [{ id: `${ns}-daily`, start: at(T0 + 2 * MICROS_PER_DAY), end: at(T0 + 4 * MICROS_PER_DAY) }], values: [replaced], cursors: [] })
      const expected = [replaced, ...values.filter((v) => v.id === `${ns}-daily` && v !== values[0] && !["2026-01-03", "2026-01-04"].includes(v.timestamp))]
      assert.deepStrictEqual(yield* daily(), expected)
      const intraday = yield* s.page({
        scope: { _tag: "window", start: at(T0), end: at(T0 + MICROS_PER_DAY) }, predicates: [{ op: "in", field: "id", values: [`${ns}-intraday`] }],
        sort: { by: "timestamp", order: "asc" }, after: undefined, limit: 100
      })
      assert.deepStrictEqual(intraday, values.filter((v) => v.id === `${ns}-intraday`))
    }))

  it.effect("indexes: the data version moves with definitions, fleet weights and values written, and only then", () =>
    Effect.gen(function* () {
      const s = yield* IndexStore
      const ns = namespace("ixversion")
      const v = yield* followVersion(s.version)
      yield* s.define([indexDefinition(`${ns}-daily`)])
      yield* v.moved
      yield* s.putWeights([`${ns}-h100`], [{ gpu_canonical_name: `${ns}-h100`, weight: 1, valid_from: at(T0), valid_to: null }])
      yield* v.moved
      const values = market(ns)
      yield* s.apply({ clear: [], values, cursors: [] })
      yield* v.moved
      yield* s.page({
        scope: { _tag: "latest" }, predicates: [{ op: "eq", field: "id", value: `${ns}-daily` }], sort: { by: "timestamp", order: "asc" }, after: undefined, limit: 10
      })
      yield* s.definitions
      // A cursor or a progress mark alone serves no other value.
      yield* s.apply({ clear: [], values: [], cursors: [{ id: `${ns}-daily`, through: at(T0 + MICROS_PER_DAY) }], mark: { name: `${ns}-through`, value: "1" } })
      yield* v.still
      yield* s.apply({ clear: [{ id: `${ns}-daily`, start: at(T0), end: at(T0 + MICROS_PER_DAY) }], values: [], cursors: [] })
      yield* v.moved
    }))

  it.effect("indexes: a progress mark is written by the apply of its values, even one that changes nothing", () =>
    Effect.gen(function* () {
      const s = yield* IndexStore
      const ns = namespace("ixmark")
      const name = `${ns}-through`
      const values = market(ns)
      assert.deepStrictEqual(yield* s.mark(name), Option.none())
      yield* s.apply({ clear: [], values, cursors: [], mark: { name, value: "1" } })
      assert.deepStrictEqual(yield* s.mark(name), Option.some("1"))
      yield* s.apply({ clear: [], values: [], cursors: [], mark: { name, value: "2" } })
      assert.deepStrictEqual(yield* s.mark(name), Option.some("2"))
    }))

  it.effect("indexes: pages follow scope, sort and keyset exactly as the reference", () =>
    Effect.gen(function* () {
      const s = yield* IndexStore
      const ns = namespace("ixpage")
      const values = market(ns)
      yield* s.apply({ clear: [], values, cursors: [] })
      const scopes: Array<Scope> = [
        { _tag: "latest" },
        // Daily: at is truncated to its date (day 3 answers from its midnight on).
        { _tag: "asOf", at: at(T0 + 3 * MICROS_PER_DAY) },
        { _tag: "asOf", at: at(T0 + 3 * MICROS_PER_DAY - 1) },
        // The gap on day 5 answers with day 4; intraday 11 and 12 are missing too.
        { _tag: "asOf", at: at(T0 + 5 * MICROS_PER_DAY + 1) },
        // Intraday: only an interval complete at `at` answers (interval 2 ends at 3 × 30 minutes).
        { _tag: "asOf", at: at(T0 + 3 * INTRADAY_MICROS) },
        { _tag: "asOf", at: at(T0 + 3 * INTRADAY_MICROS - 1) },
        { _tag: "asOf", at: at(T0 + 13 * INTRADAY_MICROS) },
        { _tag: "asOf", at: at(T0 - 1) },
        { _tag: "window", start: at(T0), end: at(T0 + 100 * MICROS_PER_DAY) },
        { _tag: "window", start: at(T0 + 2 * MICROS_PER_DAY + 1), end: at(T0 + 8 * MICROS_PER_DAY) },
        { _tag: "window", start: at(T0 + 5 * INTRADAY_MICROS), end: at(T0 + 20 * INTRADAY_MICROS + 1) }
      ]
      for (const id of [`${ns}-daily`, `${ns}-intraday`, `${ns}-none`]) for (const scope of scopes) {
        for (const by of ["timestamp", "value"]) for (const order of ["asc", "desc"] as const) for (const extra of [[], [{ op: "gte", field: "value", value: 1.5 } as const]]) {
          const plan: PagePlan = { scope, predicates: [{ op: "eq", field: "id", value: id }, ...extra], sort: { by, order }, after: undefined, limit: 3 }
          const pages = yield* walk(s.page, plan, "timestamp")
          const expected = evaluateIndexPlan(values, { ...plan, limit: values.length })
          assert.deepStrictEqual(pages.flat(), expected, `${id} ${JSON.stringify(scope)} ${by} ${order} ${JSON.stringify(extra)}`)
        }
      }
      // Stated by hand: as of 00:59:59.999999 of day 0, intraday interval 00:00 is the last complete one.
      const one = yield* s.page({
        scope: { _tag: "asOf", at: at(T0 + 2 * INTRADAY_MICROS - 1) }, predicates: [{ op: "eq", field: "id", value: `${ns}-intraday` }],
        sort: { by: "timestamp", order: "asc" }, after: undefined, limit: 10
      })
      assert.deepStrictEqual(one.map((v) => v.timestamp), [at(T0)])
      const latest = yield* s.page({
        scope: { _tag: "latest" }, predicates: [{ op: "in", field: "id", values: [`${ns}-daily`] }],
        sort: { by: "timestamp", order: "asc" }, after: undefined, limit: 10
      })
      assert.deepStrictEqual(latest.map((v) => v.timestamp), ["2026-01-12"])
    }))

  it.effect("indexes: coverage counts values at or after `from`, and reports the latest of all", () =>
    Effect.gen(function* () {
      const s = yield* IndexStore
      const ns = namespace("ixcov")
      const values = market(ns)
      yield* s.apply({ clear: [], values, cursors: [] })
      const ids = [`${ns}-intraday`, `${ns}-daily`, `${ns}-none`]
      for (const from of [null, at(T0 + 3 * MICROS_PER_DAY), at(T0 + 3 * MICROS_PER_DAY + 1), at(T0 + 100 * MICROS_PER_DAY)]) {
        assert.deepStrictEqual(yield* s.coverage(ids, from), indexCoverage(values, ids, from), String(from))
      }
      assert.deepStrictEqual(yield* s.coverage([`${ns}-daily`], at(T0 + 3 * MICROS_PER_DAY)), [
        { id: `${ns}-daily`, first: "2026-01-04", count: 8, last: "2026-01-12" }
      ])
    }))
}
