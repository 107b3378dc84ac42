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
  /**
   * The peers the step read (`PeerRead`): every version whose peer value is one of those asked
   * for and that is in force at its `from` or later (`valid_to` null or after it), in no order.
   * Empty when the step read none.
   */
  readonly peers: ReadonlyArray<Row>
}

/**
 * Rows a step reads besides its points, to compare its rows with (`VersionKeys.peers`): the
 * versions of the peer values `values` in force at `from` or later, the market every instant from
 * `from` on is made of.
 */
export interface PeerRead {
  readonly values: ReadonlyArray<string>
  readonly from: string
}

/**
 * A change to a versioned table: current rows to close (by row key) and new rows, stored rows
 * restated, and the progress mark written with them, if the write carries one.
 */
export interface VersionChanges<Row> {
  readonly close: ReadonlyArray<{ readonly key: string; readonly valid_to: string }>
  readonly open: ReadonlyArray<Row>
  /**
   * Peers the step read, written again with new values of their restatable fields
   * (`PeerKeys.restatable`), e.g. outlier flags judged again against a market that changed. A
   * row the same change closes is restated, then closed.
   */
  readonly restate?: ReadonlyArray<Row>
  readonly mark?: ProgressMark
}

/** What a write decided: the changes to make, and what the write answers. */
export interface Decision<Changes, A> {
  readonly changes: Changes
  readonly result: A
}

/**
 * The one write of a versioned store. The store reads the view of `points` (their priced things'
 * current rows, and the versions in force at stale points), then the peers `peers` asks for
 * given that view (none without it, or when it answers `undefined`), calls `decide`, and writes
 * its changes, all as one atomic step no other writer interleaves with: SQLite inside one
 * `BEGIN IMMEDIATE`, Redis in one checked batch retried from fresh reads a bounded number of
 * times. A `Left` writes nothing and fails with its error. `peers` and `decide` are pure and may
 * run more than once.
 *
 * A decision may only close current rows of the view, at an instant after their start, open
 * rows of the priced things asked about, with new keys, leaving at most one current row per
 * priced thing, and restate peers it read, once each, changing only restatable fields. The
 * planner never decides otherwise; a store dies with a `StorageDefect` if it does.
 */
export type TransactVersions<Row> = <A, E>(
  points: ReadonlyArray<VersionPoint>,
  decide: (view: VersionView<Row>) => Either.Either<Decision<VersionChanges<Row>, A>, E>,
  peers?: (view: VersionView<Row>) => PeerRead | undefined
) => Effect.Effect<A, E | StorageError>

/**
 * Which rows of a versioned table a write compares with each other (LLM prices of one model),
 * and which of their fields it may restate on stored rows (the outlier flag). No summary a
 * backend keeps may be built from a restatable field.
 */
export interface PeerKeys<Row> {
  /** The field whose value names a row's peers; backends read peers by it. */
  readonly field: string
  /** A row's value of `field`. */
  readonly of: (row: Row) => string
  readonly restatable: ReadonlyArray<string>
}

/** How a versioned table names a row and the priced thing it is a version of, and its peers if it has any. */
export interface VersionKeys<Row> {
  readonly key: (row: Row) => string
  readonly base: (row: Row) => string
  readonly peers?: PeerKeys<Row>
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
  return restateFault(view, changes.restate ?? [], keys)
}

/** Why restating `restate` breaks the rules against `view`, or `undefined`. */
const restateFault = <Row extends Versioned>(view: VersionView<Row>, restate: ReadonlyArray<Row>, keys: VersionKeys<Row>): string | undefined => {
  if (restate.length === 0) return undefined
  if (keys.peers === undefined) return "restates rows of a table without restatable fields"
  const restatable = new Set(keys.peers.restatable)
  const peers = new Map(view.peers.map((r) => [keys.key(r), r]))
  const restated = new Set<string>()
  for (const r of restate) {
    const key = keys.key(r)
    const read = peers.get(key) as Readonly<Record<string, unknown>> | undefined
    if (read === undefined) return `restates ${key}, which is not a peer it read`
    if (restated.has(key)) return `restates ${key} twice`
    restated.add(key)
    const row = r as Readonly<Record<string, unknown>>
    const fields = new Set([...Object.keys(read), ...Object.keys(row)])
    for (const f of fields) if (!restatable.has(f) && row[f] !== read[f]) return `restates ${key}'s ${f}, which is not restatable`
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
 * the versions in force at the stale points (`stalePoints`), then the peers `peers` asks for.
 */
export const readView = <Row extends Versioned>(
  points: ReadonlyArray<VersionPoint>,
  base: (row: Row) => string,
  reads: {
    readonly current: (bases: ReadonlyArray<string>) => ReadonlyArray<Row>
    /** The latest version of each of `bases` that has any. */
    readonly latest: (bases: ReadonlyArray<string>) => ReadonlyArray<Row>
    readonly versionAt: (base: string, at: string) => Row | undefined
    readonly peers: (read: PeerRead) => ReadonlyArray<Row>
  },
  peers?: (view: VersionView<Row>) => PeerRead | undefined
): VersionView<Row> => {
  const current = reads.current(basesOf(points))
  const without = basesWithout(points, current, base)
  const withdrawn = without.length === 0 ? [] : reads.latest(without)
  const found = stalePoints(points, current, withdrawn, base).map((p) => [p, reads.versionAt(p.base, p.at)] as const)
  const view: VersionView<Row> = { current, withdrawn, inForce: inForceLookup(found), peers: [] }
  const read = peers?.(view)
  return read === undefined || read.values.length === 0 ? view : { ...view, peers: reads.peers(read) }
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
