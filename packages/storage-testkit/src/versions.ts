import { assert, type Vitest } from "@effect/vitest"
import * as Cause from "effect/Cause"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { formatInstant, MICROS_PER_DAY } from "@gpu-market/core"
import { currentVersions, type PeerRead, putVersions, type ReadMark, type Scope, StorageDefect, type StorageError, type TransactVersions, type VersionChanges, type Versioned, type VersionKeys, type VersionPoint, type VersionView } from "@gpu-market/core/storage"
import { followVersion } from "./data-version.js"
import { namespace } from "./namespace.js"


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

/** What a versioned store offers that its conformance tests use. */
type VersionedStore<Row extends Versioned> = {
  readonly transact: TransactVersions<Row>
  readonly mark: ReadMark
  readonly version: Effect.Effect<string, StorageError>
}

/** What the write conformance of one versioned store needs. */
export interface VersionedSubject<Row extends Versioned, Id, S extends VersionedStore<Row>> {
  readonly label: string
  readonly tag: Context.Tag<Id, S>
  readonly keys: VersionKeys<Row>
  /**
   * A current row of priced thing `thing` (0, 1, …) under `ns`, at `price`, starting at `from`;
   * with peers (`keys.peers`), the rows of one `ns` are peers.
   */
  readonly row: (ns: string, thing: number, price: number, from: string) => Row
  /** With peers: the row with a restatable field changed. */
  readonly restated?: (row: Row) => Row
}

/**
 * Registers the tests of `transact` on a versioned store: what a step reads, that a refusal
 * or a decision breaking the rules writes nothing, that a progress mark is written with the
 * rows or not at all, and that concurrent steps on one priced thing build one version chain;
 * with peers, what a step reads of them, that it restates them, and that concurrent steps over
 * one set of peers each decide on what the others wrote.
 */
export const versionConformance = <Row extends Versioned, Id, S extends VersionedStore<Row>>(
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

  it.effect(`${label}: the data version moves with every step that opens, closes or withdraws rows, and only then`, () =>
    Effect.gen(function* () {
      const { transact, version } = yield* tag
      const ns = namespace(`${label}-version`)
      const v = yield* followVersion(version)
      const v1 = row(ns, 0, 2, at(0))
      const v2 = row(ns, 0, 3, at(2))
      const base = keys.base(v1)
      yield* transact([{ base, at: at(0) }], decided({ close: [], open: [v1] }, undefined))
      yield* v.moved
      yield* Effect.either(transact([{ base, at: at(2) }], () => Either.left("no")))
      yield* currentVersions(transact, [base])
      yield* transact([{ base, at: at(2) }], decided({ close: [], open: [], mark: { name: `${ns}-through`, value: "1" } }, undefined))
      yield* v.still
      yield* transact([{ base, at: at(2) }], decided({ close: [close(v1, at(2))], open: [v2] }, undefined))
      yield* v.moved
      // A withdrawal closes the current row and opens none.
      yield* transact([{ base, at: at(3) }], decided({ close: [close(v2, at(3))], open: [] }, undefined))
      yield* v.moved
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

  it.effect(`${label}: restating rows of a table without peers, or rows not read as peers, is a defect`, () =>
    Effect.gen(function* () {
      const { transact } = yield* tag
      const ns = namespace(`${label}-restate-defect`)
      const v1 = row(ns, 0, 2, at(0))
      const v2 = row(ns, 1, 3, at(0))
      const gone = { ...row(ns, 2, 4, at(0)), valid_to: at(1) }
      yield* putVersions(transact, keys, [v1, v2, gone])
      const changed = subject.restated ?? ((r: Row) => r)
      const point = [{ base: keys.base(v1), at: at(1) }]
      const everyPeer = keys.peers === undefined ? undefined : () => ({ values: [keys.peers!.of(v1)], from: at(0) })
      const bad: Array<readonly [VersionChanges<Row>, ((view: unknown) => PeerRead | undefined) | undefined]> = keys.peers === undefined
        ? [[{ close: [], open: [], restate: [changed(v1)] }, undefined]]
        : [
          // Current, but no peer read; read, but twice; a field that is not restatable.
          [{ close: [], open: [], restate: [changed(v1)] }, undefined],
          [{ close: [], open: [], restate: [changed(v2), changed(v2)] }, everyPeer],
          [{ close: [], open: [], restate: [{ ...changed(v2), valid_to: at(5) }] }, everyPeer],
          // Peers in force from day 1 on: gone, closed then, is not among them.
          [{ close: [], open: [], restate: [changed(gone)] }, () => ({ values: [keys.peers!.of(v1)], from: at(1) })]
        ]
      for (const [changes, peers] of bad) {
        const exit = yield* Effect.exit(transact(point, decided(changes, undefined), peers))
        assert.isTrue(Exit.isFailure(exit) && Cause.isDie(exit.cause), JSON.stringify(changes.restate))
      }
      assert.deepStrictEqual(yield* currentVersions(transact, [keys.base(v1)]), [v1])
      assert.deepStrictEqual(yield* currentVersions(transact, [keys.base(v2)]), [v2])
    }))

  const { peers, restated } = { peers: keys.peers, restated: subject.restated }
  if (peers === undefined || restated === undefined) return
  /** The peers a step over `points` reads, writing nothing. */
  const peersRead = (transact: TransactVersions<Row>, points: ReadonlyArray<VersionPoint>, ask: (view: VersionView<Row>) => PeerRead | undefined) =>
    transact(points, (view) => Either.right({ changes: { close: [], open: [] }, result: view.peers }), ask)

  it.effect(`${label}: a step reads the peers it asks for, given its view`, () =>
    Effect.gen(function* () {
      const { transact } = yield* tag
      const ns = namespace(`${label}-peers`)
      const v1 = { ...row(ns, 0, 2, at(0)), valid_to: at(2) }
      const v2 = row(ns, 0, 3, at(2))
      const other = row(ns, 1, 5, at(0))
      const gone = { ...row(ns, 2, 7, at(0)), valid_to: at(1) }
      const stranger = row(`${ns}-x`, 0, 2, at(0))
      yield* putVersions(transact, keys, [v1, v2, other, gone, stranger])
      const value = peers.of(v1)
      assert.notStrictEqual(peers.of(stranger), value)
      const asked: Array<number> = []
      const read = (from: string) =>
        peersRead(transact, [{ base: keys.base(v2), at: at(3) }], (view) => {
          // The view of the points comes first: a step asks for peers knowing its current rows.
          asked.push(view.current.length)
          return { values: [value, value, `${ns}-none`], from }
        })
      const byKey = (rows: ReadonlyArray<Row>) => [...rows].sort((a, b) => (keys.key(a) < keys.key(b) ? -1 : 1))
      // In force at `from` or later: valid_to null or after it.
      assert.deepStrictEqual(byKey(yield* read(at(1))), byKey([v1, v2, other]))
      assert.deepStrictEqual(byKey(yield* read(at(0))), byKey([v1, v2, other, gone]))
      assert.deepStrictEqual(byKey(yield* read(at(2))), byKey([v2, other]))
      assert.deepStrictEqual(asked, [1, 1, 1])
      assert.deepStrictEqual(yield* peersRead(transact, [{ base: keys.base(v2), at: at(3) }], () => undefined), [])
    }))

  it.effect(`${label}: restated peers are stored as restated, then closed by the same change`, () =>
    Effect.gen(function* () {
      const { transact } = yield* tag
      const ns = namespace(`${label}-restate`)
      const v1 = row(ns, 0, 2, at(0))
      const w1 = row(ns, 1, 3, at(0))
      const w2 = row(ns, 1, 4, at(3))
      yield* putVersions(transact, keys, [v1, w1])
      const all = () => ({ values: [peers.of(v1)], from: at(0) })
      yield* transact([{ base: keys.base(w1), at: at(3) }], decided({ close: [close(w1, at(3))], open: [w2], restate: [restated(v1), restated(w1)] }, undefined), all)
      assert.deepStrictEqual(yield* currentVersions(transact, [keys.base(v1)]), [restated(v1)])
      assert.deepStrictEqual(yield* currentVersions(transact, [keys.base(w1)]), [w2])
      const stored = yield* peersRead(transact, [], all)
      const byKey = new Map(stored.map((r) => [keys.key(r), r]))
      assert.deepStrictEqual(byKey.get(keys.key(w1)), { ...restated(w1), valid_to: at(3) })
      assert.deepStrictEqual(byKey.get(keys.key(v1)), restated(v1))
      // Restated back, on its own.
      yield* transact([], decided({ close: [], open: [], restate: [v1] }, undefined), all)
      assert.deepStrictEqual(yield* currentVersions(transact, [keys.base(v1)]), [v1])
    }))

  it.effect(`${label}: concurrent steps that read one set of peers each see what the others wrote`, () =>
    Effect.gen(function* () {
      const { transact } = yield* tag
      const ns = namespace(`${label}-peer-race`)
      const value = peers.of(row(ns, 0, 1, at(0)))
      // Each step opens a new priced thing priced by how many peers it saw: steps that decided
      // on the same peers would open two rows at one price.
      const step = (thing: number) =>
        transact([{ base: keys.base(row(ns, thing, 1, at(0))), at: at(0) }], (view) =>
          Either.right({ changes: { close: [], open: [row(ns, thing, view.peers.length + 1, at(0))] }, result: undefined }), () => ({ values: [value], from: at(0) }))
      yield* Effect.all([0, 1, 2, 3, 4, 5].map(step), { concurrency: "unbounded", discard: true })
      const stored = yield* peersRead(transact, [], () => ({ values: [value], from: at(0) }))
      const things = [0, 1, 2, 3, 4, 5]
      const prices = stored.map((r) => things.map((n) => n + 1).find((price) => things.some((thing) => keys.key(row(ns, thing, price, at(0))) === keys.key(r))))
      assert.sameMembers(prices, [1, 2, 3, 4, 5, 6])
    }))
}
