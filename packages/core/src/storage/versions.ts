import type * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type { StorageError } from "./errors.js"
import type { ProgressMark } from "./marks.js"

/**
 * The write contract of versioned tables (rental and LLM token prices): one transactional step
 * that reads what a write depends on, hands it to a pure decision, and writes what was decided,
 * with no other writer in between.
 */

/** A versioned row: in force from `valid_from` until `valid_to` (null: still in force). */
export interface Versioned {
  readonly valid_from: string
  readonly valid_to: string | null
}

/** A priced thing (its base key) observed at a stored instant: what a versioned write decides about. */
export interface VersionPoint {
  readonly base: string
  readonly at: string
}

/** The stored version of a priced thing in force at an instant, if there is one. */
export type InForce<Row> = (base: string, at: string) => Row | undefined

/** What a versioned write decides on, read inside its transaction. */
export interface VersionView<Row> {
  /** The current rows (`valid_to` null) of the priced things asked about, one per priced thing that has one. */
  readonly current: ReadonlyArray<Row>
  /**
   * The latest version of each priced thing asked about that has versions but no current row
   * (it was withdrawn): a later observation lists it again, an earlier one is history.
   */
  readonly withdrawn: ReadonlyArray<Row>
  /**
   * The version of a priced thing in force at a point asked about whose instant is not after
   * the start of its current row, or before the end of its withdrawn latest version (a resent or
   * late observation). Other points answer `undefined`.
   */
  readonly inForce: InForce<Row>
}

/**
 * A change to a versioned table: current rows to close (by row key) and new rows, and the
 * progress mark written with them, if the write carries one.
 */
export interface VersionChanges<Row> {
  readonly close: ReadonlyArray<{ readonly key: string; readonly valid_to: string }>
  readonly open: ReadonlyArray<Row>
  readonly mark?: ProgressMark
}

/** What a write decided: the changes to make, and what the write answers. */
export interface Decision<Changes, A> {
  readonly changes: Changes
  readonly result: A
}

/**
 * The one write of a versioned store. The store reads the view of `points` (their priced things'
 * current rows, and the versions in force at stale points), calls `decide`, and writes its
 * changes, all as one atomic step no other writer interleaves with: SQLite inside one
 * `BEGIN IMMEDIATE`, Redis in one checked batch retried from fresh reads a bounded number of
 * times. A `Left` writes nothing and fails with its error. `decide` is pure and may run more
 * than once.
 *
 * A decision may only close current rows of the view, at an instant after their start, and
 * open rows of the priced things asked about, with new keys, leaving at most one current row per
 * priced thing. The planner never decides otherwise; a store dies with a `StorageDefect` if it does.
 */
export type TransactVersions<Row> = <A, E>(
  points: ReadonlyArray<VersionPoint>,
  decide: (view: VersionView<Row>) => Either.Either<Decision<VersionChanges<Row>, A>, E>
) => Effect.Effect<A, E | StorageError>

/** How a versioned table names a row and the priced thing it is a version of. */
export interface VersionKeys<Row> {
  readonly key: (row: Row) => string
  readonly base: (row: Row) => string
}

/**
 * Why `changes` breaks the rules of `TransactVersions` against `view`, or `undefined` when it
 * keeps them. Every backend checks a decision with this before writing it; keys of opened rows
 * are checked against what is stored by the backend itself.
 */
export const versionChangeFault = <Row extends Versioned>(
  points: ReadonlyArray<VersionPoint>,
  view: VersionView<Row>,
  changes: VersionChanges<Row>,
  keys: VersionKeys<Row>
): string | undefined => {
  const asked = new Set(points.map((p) => p.base))
  const current = new Map(view.current.map((r) => [keys.key(r), r]))
  const withdrawn = new Set(view.withdrawn.map(keys.key))
  const live = new Set(view.current.map(keys.base))
  const closing = new Set<string>()
  for (const c of changes.close) {
    const row = current.get(c.key)
    if (row === undefined) return `closes ${c.key}, which is not a current row it read`
    if (closing.has(c.key)) return `closes ${c.key} twice`
    if (c.valid_to <= row.valid_from) return `closes ${c.key} at ${c.valid_to}, not after its start ${row.valid_from}`
    closing.add(c.key)
    live.delete(keys.base(row))
  }
  const opened = new Set<string>()
  for (const r of changes.open) {
    const key = keys.key(r)
    const base = keys.base(r)
    if (!asked.has(base)) return `opens ${key} of ${base}, which it did not read`
    if (opened.has(key) || current.has(key) || withdrawn.has(key)) return `opens ${key} twice`
    opened.add(key)
    if (r.valid_to === null) {
      if (live.has(base)) return `opens a second current row of ${base}`
      live.add(base)
    }
  }
  return undefined
}

/** The distinct priced things of `points`, in first-seen order. */
export const basesOf = (points: ReadonlyArray<VersionPoint>): Array<string> => [...new Set(points.map((p) => p.base))]

/**
 * The points that need the version in force at their instant: those not after the start of
 * their priced thing's current row, and those before the end of its withdrawn latest version.
 */
export const stalePoints = <Row extends Versioned>(
  points: ReadonlyArray<VersionPoint>,
  current: ReadonlyArray<Row>,
  withdrawn: ReadonlyArray<Row>,
  base: (row: Row) => string
): Array<VersionPoint> => {
  const start = new Map(current.map((r) => [base(r), r.valid_from]))
  const end = new Map(withdrawn.map((r) => [base(r), r.valid_to!]))
  return points.filter((p) => {
    const from = start.get(p.base)
    if (from !== undefined) return p.at <= from
    const to = end.get(p.base)
    return to !== undefined && p.at < to
  })
}

/** The priced things of `points` with no row in `current`: those whose withdrawn latest version a step reads. */
export const basesWithout = <Row>(points: ReadonlyArray<VersionPoint>, current: ReadonlyArray<Row>, base: (row: Row) => string): Array<string> => {
  const live = new Set(current.map(base))
  return basesOf(points).filter((b) => !live.has(b))
}

/**
 * What a step reads, through synchronous reads inside its transaction (the reference store,
 * SQLite): the current rows of the points' priced things, the last version of those without one,
 * and the versions in force at the stale points (`stalePoints`).
 */
export const readView = <Row extends Versioned>(
  points: ReadonlyArray<VersionPoint>,
  base: (row: Row) => string,
  reads: {
    readonly current: (bases: ReadonlyArray<string>) => ReadonlyArray<Row>
    /** The latest version of each of `bases` that has any. */
    readonly latest: (bases: ReadonlyArray<string>) => ReadonlyArray<Row>
    readonly versionAt: (base: string, at: string) => Row | undefined
  }
): VersionView<Row> => {
  const current = reads.current(basesOf(points))
  const without = basesWithout(points, current, base)
  const withdrawn = without.length === 0 ? [] : reads.latest(without)
  const found = stalePoints(points, current, withdrawn, base).map((p) => [p, reads.versionAt(p.base, p.at)] as const)
  return { current, withdrawn, inForce: inForceLookup(found) }
}

/** A lookup of read versions by point. */
export const inForceLookup = <Row>(found: ReadonlyArray<readonly [VersionPoint, Row | undefined]>): InForce<Row> => {
  const byPoint = new Map(found.map(([p, row]) => [`${p.base}\u0000${p.at}`, row]))
  return (base, at) => byPoint.get(`${base}\u0000${at}`)
}

/** An instant after every stored one: a point at it asks for a priced thing's current row only. */
const END_OF_TIME = "9999-12-31T23:59:59.999999Z"

/**
 * Stores prepared rows as they are, in one `transact` (loading a prepared market: tests,
 * benchmarks). Rows must keep the contract's rules: new keys, at most one current row per
 * priced thing, none for a priced thing that has one stored.
 */
export const putVersions = <Row extends Versioned>(
  transact: TransactVersions<Row>,
  keys: VersionKeys<Row>,
  rows: ReadonlyArray<Row>
): Effect.Effect<void, StorageError> =>
  transact([...new Set(rows.map(keys.base))].map((base) => ({ base, at: END_OF_TIME })), () =>
    Either.right({ changes: { close: [], open: rows }, result: undefined }))

/** The current rows of the priced things `bases` names, read in one `transact` that writes nothing. */
export const currentVersions = <Row extends Versioned>(
  transact: TransactVersions<Row>,
  bases: ReadonlyArray<string>
): Effect.Effect<ReadonlyArray<Row>, StorageError> =>
  transact(bases.map((base) => ({ base, at: END_OF_TIME })), (view) =>
    Either.right({ changes: { close: [], open: [] }, result: view.current }))
