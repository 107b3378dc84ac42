import { assert, type Vitest } from "@effect/vitest"
import * as Cause from "effect/Cause"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { formatInstant, MICROS_PER_DAY } from "../query/time.js"
import { StorageDefect } from "./errors.js"
import type { ReadMark } from "./marks.js"
import type { Scope } from "./plan.js"
import {
  currentVersions, putVersions, type TransactVersions, type VersionChanges, type VersionKeys, type Versioned, type VersionPoint
} from "./versions.js"

let counter = 0
const namespace = (label: string) => `${label}-${Date.now().toString(36)}-${(counter++).toString(36)}`

const T0 = Date.UTC(2026, 0, 1) * 1000
const at = (day: number, hour = 0) => formatInstant(T0 + day * MICROS_PER_DAY + hour * 3_600_000_000)

/**
 * The scopes the page tests of versioned tables walk, over markets whose versions start on days
 * 0, 10 and 20: now, an instant on a version boundary and one just before it, and two windows.
 */
export const VERSION_SCOPES: ReadonlyArray<Scope> = [
  { _tag: "latest" },
  { _tag: "asOf", at: at(10) },
  { _tag: "asOf", at: at(9, 23) },
  { _tag: "window", start: at(0), end: at(10) },
  { _tag: "window", start: at(10), end: at(30) }
]

/** What the write conformance of one versioned store needs. */
export interface VersionedSubject<Row extends Versioned, Id, S extends { readonly transact: TransactVersions<Row>; readonly mark: ReadMark }> {
  readonly label: string
  readonly tag: Context.Tag<Id, S>
  readonly keys: VersionKeys<Row>
  /** A current row of priced thing `thing` (0, 1, …) under `ns`, at `price`, starting at `from`. */
  readonly row: (ns: string, thing: number, price: number, from: string) => Row
}

/**
 * Registers the tests of `transact` on a versioned store: what a step reads, that a refusal
 * or a decision breaking the rules writes nothing, that a progress mark is written with the
 * rows or not at all, and that concurrent steps on one priced thing build one version chain.
 */
export const versionConformance = <Row extends Versioned, Id, S extends { readonly transact: TransactVersions<Row>; readonly mark: ReadMark }>(
  it: Vitest.MethodsNonLive<Id>,
  subject: VersionedSubject<Row, Id, S>
) => {
  const { label, tag, keys, row } = subject
  const close = (r: Row, valid_to: string) => ({ key: keys.key(r), valid_to })
  const decided = <A>(changes: VersionChanges<Row>, result: A) => () => Either.right({ changes, result })

  it.effect(`${label}: transact reads current rows and the versions in force at earlier points, then writes`, () =>
    Effect.gen(function* () {
      const { transact } = yield* tag
      const ns = namespace(`${label}-tx`)
      const v1 = row(ns, 0, 2, at(0))
      const v2 = row(ns, 0, 3, at(2))
      const other = row(ns, 1, 5, at(0))
      const base = keys.base(v1)
      assert.strictEqual(keys.base(v2), base)
      assert.strictEqual(yield* transact([{ base, at: at(0) }], decided({ close: [], open: [v1] }, "first")), "first")
      yield* transact([{ base, at: at(2) }], decided({ close: [close(v1, at(2))], open: [v2] }, undefined))
      // A withdrawn priced thing: its last version is closed and none is current.
      const gone = { ...other, valid_to: at(3) }
      yield* putVersions(transact, keys, [gone])
      const points: Array<VersionPoint> = [
        { base, at: at(1) }, { base, at: at(2) }, { base, at: at(3) }, { base, at: at(-1) },
        { base: keys.base(other), at: at(1) }, { base: keys.base(other), at: at(3) }, { base: `${ns}-new`, at: at(1) }
      ]
      const seen = yield* transact(points, (view) =>
        Either.right({
          changes: { close: [], open: [] },
          result: { current: view.current, withdrawn: view.withdrawn, points: points.map((p) => view.inForce(p.base, p.at)) }
        }))
      assert.deepStrictEqual(seen.current, [v2])
      assert.deepStrictEqual(seen.withdrawn, [gone])
      // valid_from is inclusive and valid_to exclusive; a point after the current row's start, or
      // from the end of a withdrawn thing's last version on, needs no read.
      assert.deepStrictEqual(seen.points, [{ ...v1, valid_to: at(2) }, v2, undefined, undefined, gone, undefined, undefined])
      assert.deepStrictEqual(yield* currentVersions(transact, [base, keys.base(other), "f".repeat(32)]), [v2])
    }))

  it.effect(`${label}: a refused decision writes nothing and fails with its reason`, () =>
    Effect.gen(function* () {
      const { transact } = yield* tag
      const ns = namespace(`${label}-refuse`)
      const v1 = row(ns, 0, 2, at(0))
      const refused = yield* Effect.either(transact([{ base: keys.base(v1), at: at(0) }], () => Either.left("no, thank you")))
      assert.deepStrictEqual(refused, Either.left("no, thank you"))
      assert.deepStrictEqual(yield* currentVersions(transact, [keys.base(v1)]), [])
    }))

  it.effect(`${label}: a progress mark is written by the step that writes its rows, even one that changes none`, () =>
    Effect.gen(function* () {
      const { transact, mark } = yield* tag
      const ns = namespace(`${label}-mark`)
      const v1 = row(ns, 0, 2, at(0))
      const point = [{ base: keys.base(v1), at: at(0) }]
      const name = `${ns}-through`
      assert.deepStrictEqual(yield* mark(name), Option.none())
      const refused = yield* Effect.either(transact(point, () => Either.left("no")))
      assert.isTrue(Either.isLeft(refused))
      assert.deepStrictEqual(yield* mark(name), Option.none())
      const broken = yield* Effect.exit(transact(point, decided({ close: [close(v1, at(1))], open: [], mark: { name, value: "0" } }, undefined)))
      assert.isTrue(Exit.isFailure(broken))
      assert.deepStrictEqual(yield* mark(name), Option.none())
      yield* transact(point, decided({ close: [], open: [v1], mark: { name, value: "1" } }, undefined))
      assert.deepStrictEqual(yield* mark(name), Option.some("1"))
      assert.deepStrictEqual(yield* currentVersions(transact, [keys.base(v1)]), [v1])
      yield* transact(point, decided({ close: [], open: [], mark: { name, value: "2" } }, undefined))
      assert.deepStrictEqual(yield* mark(name), Option.some("2"))
      yield* transact([], decided({ close: [], open: [], mark: { name, value: "3" } }, undefined))
      assert.deepStrictEqual(yield* mark(name), Option.some("3"))
    }))

  it.effect(`${label}: a decision that breaks the rules is a defect and writes nothing`, () =>
    Effect.gen(function* () {
      const { transact } = yield* tag
      const ns = namespace(`${label}-defect`)
      const v1 = row(ns, 0, 2, at(0))
      const other = row(ns, 1, 5, at(0))
      const next = row(ns, 0, 3, at(2))
      const old = { ...row(ns, 0, 1, at(-2)), valid_to: at(-1) }
      yield* putVersions(transact, keys, [old, v1])
      const point = (r: Row) => ({ base: keys.base(r), at: at(2) })
      const bad: Array<readonly [ReadonlyArray<VersionPoint>, VersionChanges<Row>]> = [
        // A row that is not current, beside a good open.
        [[point(other)], { close: [close(other, at(2))], open: [other] }],
        // One row closed twice.
        [[point(v1)], { close: [close(v1, at(2)), close(v1, at(3))], open: [next] }],
        // A second current row of a priced thing, beside a good close.
        [[point(v1), point(other)], { close: [], open: [other, next] }],
        [[point(v1)], { close: [close(v1, at(2))], open: [next, row(ns, 0, 4, at(3))] }],
        // A close not after the row's start.
        [[point(v1)], { close: [close(v1, at(0))], open: [] }],
        // A key opened twice, and a key already stored.
        [[point(other)], { close: [], open: [other, other] }],
        [[point(v1)], { close: [], open: [{ ...v1, valid_to: at(1) }] }],
        [[point(v1)], { close: [close(v1, at(2))], open: [next, old] }],
        // A priced thing it did not read.
        [[point(v1)], { close: [], open: [other] }]
      ]
      for (const [points, changes] of bad) {
        const exit = yield* Effect.exit(transact(points, decided(changes, undefined)))
        assert.isTrue(Exit.isFailure(exit) && Cause.isDie(exit.cause), JSON.stringify(changes.close))
        if (Exit.isFailure(exit)) {
          const defect = Cause.dieOption(exit.cause)
          assert.isTrue(defect._tag === "Some" && defect.value instanceof StorageDefect)
        }
      }
      assert.deepStrictEqual(yield* currentVersions(transact, [keys.base(v1), keys.base(other)]), [v1])
    }))

  it.effect(`${label}: concurrent steps on one priced thing build one version chain`, () =>
    Effect.gen(function* () {
      const { transact } = yield* tag
      const ns = namespace(`${label}-race`)
      const first = row(ns, 0, 1, at(0))
      const base = keys.base(first)
      yield* putVersions(transact, keys, [first])
      // Each step moves the price one hour past the current row it reads; none may decide on a
      // row another step already closed.
      const step = transact([{ base, at: at(0) }], (view) => {
        const now = view.current[0]!
        const hours = Math.round((Date.parse(now.valid_from) - T0 / 1000) / 3_600_000) + 1
        const next = row(ns, 0, hours + 1, at(0, hours))
        return Either.right({ changes: { close: [close(now, next.valid_from)], open: [next] }, result: undefined })
      })
      yield* Effect.all(Array.from({ length: 8 }, () => step), { concurrency: "unbounded", discard: true })
      const [last] = yield* currentVersions(transact, [base])
      assert.strictEqual(last!.valid_from, at(0, 8))
    }))
}
