import { StorageError } from "@gpu-market/core"
import {
  basesOf, basesWithout, type Decision, inForceLookup, inVersionScope, type PeerRead, stalePoints, type TransactVersions, versionChangeFault,
  type EventTypes, type VersionChanges, versionEvents, type VersionKeys, type Versioned, type VersionPoint, type VersionView
} from "@gpu-market/core/storage"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { Batch, BATCH_ATTEMPTS, untilApplied } from "./batch.js"
import type { RedisClient } from "./client.js"
import { CorruptValue, InvalidPlan } from "./errors.js"
import { type StoredRow, type Table, type TableSpec, versionScopeBounds } from "./table.js"
import { freshVersion } from "./data-version.js"
import { logEvents } from "./event-log.js"

/** How one versioned table is kept in Redis, besides its rows and indexes. */
export interface VersionTable<Row, Stored extends Readonly<Record<string, unknown>>> {
  readonly table: Table<Stored>
  readonly keys: VersionKeys<Row>
  /** The row field that names the priced thing, a group of the table. */
  readonly baseField: string
  readonly toStored: (row: Row) => Stored
  readonly fromStored: (stored: Stored) => Row
  /** Hash: base key → row key of its current row. */
  readonly currentKey: string
  /** The type's data version, set afresh by every write that changes rows (`freshVersion`). */
  readonly versionKey: string
  /** Hash: progress mark name → value, written in the batch of the rows it describes. */
  readonly marksKey: string
  /** Summary writes for a current row that closes. */
  readonly closed: (batch: Batch, row: Row) => void
  /** Summary writes for an opened row; `once(id)` is true the first time a write names `id`. */
  readonly opened: (batch: Batch, row: Row, once: (id: string) => boolean) => void
  /** The change-feed events of its new rows and withdrawals, logged in the stream of its hash tag. */
  readonly events: EventTypes<Row>
}

/** A window over every stored instant, for a priced thing's latest version whatever its dates. */
const BEGINNING_OF_TIME = "0000-01-01T00:00:00.000000Z"
const END_OF_TIME = "9999-12-31T23:59:59.999999Z"

type Attempt<A, E> = { readonly refused: E } | { readonly result: A }

/**
 * `transact` over one Redis table: read the view, decide, and write in one checked batch whose
 * checks are what the view was read from (each priced thing's current row key, each closing or
 * restated row's bytes, the absence of each opened key, the stamp of each peer value read).
 * When another writer moved any of it, nothing is written and the step reads and decides
 * again, a bounded number of times; after that the step fails with a `StorageError` (a 503:
 * sending the write again is safe). This is the only retry loop of a versioned write.
 *
 * A table with peers (`VersionKeys.peers`) keeps a `peers` hash, peer value → stamp, which every
 * write bumps for the values of the rows it opens, closes or restates: peers are read in several
 * commands and a new peer is a key the step never saw, so the stamps are what tells a step that
 * another writer changed the peers it decided on.
 */
export const redisTransact = <Row extends Versioned, Stored extends Readonly<Record<string, unknown>>>(
  client: RedisClient,
  operation: string,
  spec: VersionTable<Row, Stored>
): TransactVersions<Row> => {
  const { table, keys, currentKey } = spec
  const peerKeys = keys.peers
  const stampsKey = table.key("peers")

  const latestOf = async (base: string): Promise<Array<Row>> =>
    (await table.page({
      scope: { _tag: "window", start: BEGINNING_OF_TIME, end: END_OF_TIME },
      predicates: [{ op: "eq", field: spec.baseField, value: base }],
      sort: { by: "valid_from", order: "desc" },
      after: undefined,
      limit: 1
    })).map(spec.fromStored)

  const inForceAt = async (p: VersionPoint): Promise<readonly [VersionPoint, Row | undefined]> => {
    const [row] = await table.page({
      scope: { _tag: "asOf", at: p.at },
      predicates: [{ op: "eq", field: spec.baseField, value: p.base }],
      sort: { by: "valid_from", order: "desc" },
      after: undefined,
      limit: 1
    })
    return [p, row === undefined ? undefined : spec.fromStored(row)]
  }

  /** The peers `read` asks for, and the stamps of their values, read before them. */
  const peersOf = async (read: PeerRead | undefined) => {
    const values = peerKeys === undefined || read === undefined ? [] : [...new Set(read.values)]
    if (peerKeys === undefined || read === undefined || values.length === 0) return { values, stamps: [], peers: [] }
    const stamps = await client.redis.hmget(stampsKey, ...values)
    const versions = await table.page({
      scope: { _tag: "window", start: BEGINNING_OF_TIME, end: END_OF_TIME },
      predicates: [{ op: "in", field: peerKeys.field, values }],
      sort: { by: "valid_from", order: "desc" },
      after: undefined,
      limit: Number.POSITIVE_INFINITY
    })
    const peers = versions.map(spec.fromStored).filter((r) => r.valid_to === null || r.valid_to > read.from)
    return { values, stamps, peers }
  }

  const attempt = async <A, E>(
    points: ReadonlyArray<VersionPoint>,
    decide: (view: VersionView<Row>) => Either.Either<Decision<VersionChanges<Row>, A>, E>,
    ask: ((view: VersionView<Row>) => PeerRead | undefined) | undefined
  ): Promise<Attempt<A, E> | "retry"> => {
    const bases = basesOf(points)
    const pks = bases.length === 0 ? [] : await client.redis.hmget(currentKey, ...bases)
    const present = pks.filter((pk): pk is string => pk !== null)
    const stored = new Map<string, StoredRow<Stored>>()
    for (const [i, s] of (await table.fetch(present)).entries()) {
      if (s === undefined) throw new CorruptValue(`${currentKey} names row ${present[i]}, which is not stored`)
      stored.set(present[i]!, s)
    }
    const current = [...stored.values()].map((s) => spec.fromStored(s.row))
    // A priced thing without a current row is new or withdrawn; only the latter has versions.
    const withdrawn = (await Promise.all(basesWithout(points, current, keys.base).map(latestOf))).flat()
    // A "withdrawn" version still current was written after the current rows were read.
    if (withdrawn.some((r) => r.valid_to === null)) return "retry"
    const found = await Promise.all(stalePoints(points, current, withdrawn, keys.base).map(inForceAt))
    const pointView: VersionView<Row> = { current, withdrawn, inForce: inForceLookup(found), peers: [] }
    const { values, stamps, peers } = await peersOf(ask?.(pointView))
    const view: VersionView<Row> = { ...pointView, peers }
    const decision = decide(view)
    // The view is read in several commands, so another writer may have moved a priced thing in
    // between. Every write of a priced thing moves its current row, so the view was of one moment
    // if the current rows are still as read: the checked batch proves it for a write; a refusal,
    // or a decision that breaks the rules or opens a stored key, asks `moved`, and is made again
    // on a view that moved. Otherwise a refusal stands, and the others are bugs.
    const moved = async (): Promise<boolean> => {
      const now = bases.length === 0 ? [] : await client.redis.hmget(currentKey, ...bases)
      if (now.some((pk, i) => pk !== pks[i])) return true
      const stampsNow = values.length === 0 ? [] : await client.redis.hmget(stampsKey, ...values)
      return stampsNow.some((stamp, i) => stamp !== stamps[i])
    }
    if (Either.isLeft(decision)) return (await moved()) ? "retry" : { refused: decision.left }
    const { changes, result } = decision.right
    const fault = versionChangeFault(points, view, changes, keys)
    if (fault !== undefined) {
      if (await moved()) return "retry"
      throw new InvalidPlan(`${operation}: the decision ${fault}`)
    }
    const restate = changes.restate ?? []
    const changesRows = changes.close.length > 0 || changes.open.length > 0 || restate.length > 0
    // A step that writes nothing answers from reads no older than its first: what it found
    // stored is stored, so it stands even if another writer moved on since.
    if (!changesRows && changes.mark === undefined) return { result }
    const taken = (await table.fetch(changes.open.map(keys.key))).findIndex((s) => s !== undefined)
    if (taken >= 0) {
      if (await moved()) return "retry"
      throw new InvalidPlan(`${operation}: the decision opens ${keys.key(changes.open[taken]!)}, which is stored`)
    }
    // Restated rows as stored, to check and rewrite; a current one was read with the view.
    const restated = new Map(restate.map((r) => [keys.key(r), r]))
    const unread = [...restated.keys()].filter((k) => !stored.has(k))
    for (const [i, s] of (await table.fetch(unread)).entries()) {
      if (s === undefined) {
        if (await moved()) return "retry"
        throw new InvalidPlan(`${operation}: the decision restates ${unread[i]}, which is not stored`)
      }
      stored.set(unread[i]!, s)
    }

    const batch = new Batch()
    bases.forEach((base, i) => batch.expect(currentKey, base, pks[i] ?? null))
    values.forEach((value, i) => batch.expect(stampsKey, value, stamps[i] ?? null))
    for (const r of changes.open) batch.expect(table.rowsKey, keys.key(r), null)
    const closing = new Set<string>()
    // The peer values this write touches, whose stamps it bumps.
    const touched = new Set<string>()
    const touch = (row: Row) => peerKeys !== undefined && touched.add(peerKeys.of(row))
    for (const c of changes.close) {
      const s = stored.get(c.key)!
      batch.expect(table.rowsKey, c.key, s.bytes)
      const row = restated.get(c.key) ?? spec.fromStored(s.row)
      table.write(batch, s, spec.toStored({ ...row, valid_to: c.valid_to }))
      batch.op("HDEL", currentKey, keys.base(row))
      spec.closed(batch, row)
      closing.add(c.key)
      touch(row)
    }
    for (const [key, r] of restated) {
      if (closing.has(key)) continue
      const s = stored.get(key)!
      batch.expect(table.rowsKey, key, s.bytes)
      table.write(batch, s, spec.toStored(r))
      touch(r)
    }
    // A batch repeats the same few summary values a lot; each is written once.
    const seen = new Set<string>()
    const once = (id: string) => (seen.has(id) ? false : (seen.add(id), true))
    for (const r of changes.open) {
      table.write(batch, undefined, spec.toStored(r))
      if (r.valid_to === null) batch.op("HSET", currentKey, keys.base(r), keys.key(r))
      spec.opened(batch, r, once)
      touch(r)
    }
    for (const value of touched) batch.op("HINCRBY", stampsKey, value, "1")
    logEvents(client, batch, versionEvents(spec.events, keys, view, changes))
    if (changesRows) batch.op("SET", spec.versionKey, freshVersion())
    if (changes.mark !== undefined) batch.op("HSET", spec.marksKey, changes.mark.name, changes.mark.value)
    return (await batch.execute(client)) === 0 ? { result } : "retry"
  }

  return <A, E>(
    points: ReadonlyArray<VersionPoint>,
    decide: (view: VersionView<Row>) => Either.Either<Decision<VersionChanges<Row>, A>, E>,
    peers?: (view: VersionView<Row>) => PeerRead | undefined
  ): Effect.Effect<A, E | StorageError> =>
    Effect.flatMap(
      untilApplied(client, operation, () => attempt(points, decide, peers), () =>
        new StorageError({ operation, cause: `other writers moved these rows ${BATCH_ATTEMPTS} times in a row` })),
      (outcome) => ("refused" in outcome ? Effect.fail(outcome.refused) : Effect.succeed(outcome.result))
    )
}

/**
 * A versioned table's layout, from its definition: current rows (`cur`) and every version
 * (`all`) each indexed per sort field and anchor value; the versions of one priced thing in a
 * group; `/as-of` and `/history` walk `all` and keep the versions in scope. With the scope's
 * `unanchoredCurrent`, current rows also get unanchored indexes and `/latest` walks them alone;
 * without, an unanchored `/latest` walks `all` and keeps the current rows.
 */
export const versionTableSpec = <Row extends Versioned & Readonly<Record<string, unknown>>>(
  def: {
    readonly tie: keyof Row & string; readonly sortable: ReadonlyArray<string>; readonly anchors: ReadonlyArray<string>
    readonly scope: { readonly of: string; readonly unanchoredCurrent: boolean }
  },
  tag: string,
  options: { readonly structures: ReadonlyArray<ReadonlyArray<string>> }
): TableSpec<Row> => ({
  tag,
  tie: def.tie,
  sortFields: def.sortable,
  subsets: [
    { name: "cur", holds: (r) => r.valid_to === null, anchors: def.anchors, global: def.scope.unanchoredCurrent },
    { name: "all", holds: () => true, anchors: def.anchors, global: true }
  ],
  groups: [def.scope.of],
  subsetsFor: (scope) => (scope._tag !== "latest" ? ["all"] : def.scope.unanchoredCurrent ? ["cur"] : ["cur", "all"]),
  inScope: inVersionScope,
  scopeBounds: versionScopeBounds,
  structures: options.structures
})
