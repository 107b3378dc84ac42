import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { StorageDefect } from "./errors.js"
import { type PeerRead, readView, type TransactVersions, versionChangeFault, type VersionKeys, type Versioned } from "./versions.js"
import { type EventSink, type EventTypes, versionEvents } from "./event-log.js"

/**
 * A memory store's data version (`…Store.version`): a counter, which never repeats while the
 * store exists, and the store lives exactly as long as the process that reads it.
 */
export const memoryDataVersion = () => {
  let n = 0
  return {
    bump: (): void => void n++,
    version: Effect.sync(() => String(n))
  }
}

/**
 * The reference `transact` of a versioned table held in `rows` (row key → row). A step runs
 * synchronously, so no other write interleaves with it. Progress marks go to `marks`; a step
 * that changes rows bumps `version`.
 */
export const memoryTransact = <Row extends Versioned>(
  operation: string,
  rows: Map<string, Row>,
  keys: VersionKeys<Row>,
  marks: Map<string, string>,
  version: { readonly bump: () => void },
  log?: { readonly sink: EventSink; readonly types: EventTypes<Row> }
): TransactVersions<Row> => {
  // Versions of each priced thing by row key, so a step reads a handful of rows, not the table.
  const byBase = new Map<string, Set<string>>()
  const versions = (base: string): Array<Row> => [...(byBase.get(base) ?? [])].map((k) => rows.get(k)!)
  // And by peer value, so a step reads the versions of its peers, not the table.
  const byPeer = new Map<string, Set<string>>()
  const index = (by: Map<string, Set<string>>, value: string, key: string) => {
    const set = by.get(value)
    if (set === undefined) by.set(value, new Set([key]))
    else set.add(key)
  }
  const put = (row: Row) => {
    rows.set(keys.key(row), row)
    index(byBase, keys.base(row), keys.key(row))
    if (keys.peers !== undefined) index(byPeer, keys.peers.of(row), keys.key(row))
  }
  const peersOf = ({ values, from }: PeerRead): Array<Row> =>
    [...new Set(values)].flatMap((v) => [...(byPeer.get(v) ?? [])].map((k) => rows.get(k)!).filter((r) => r.valid_to === null || r.valid_to > from))
  return (points, decide, peers) =>
    Effect.suspend(() => {
      const view = readView(points, keys.base, {
        current: (bases) => bases.flatMap((base) => versions(base).filter((r) => r.valid_to === null)),
        latest: (bases) => bases.flatMap((base) => versions(base).reduce<Array<Row>>((a, r) => (a[0] === undefined || r.valid_from > a[0].valid_from ? [r] : a), [])),
        versionAt: (base, at) => versions(base).find((r) => r.valid_from <= at && (r.valid_to === null || r.valid_to > at)),
        peers: peersOf
      }, peers)
      const decision = decide(view)
      if (Either.isLeft(decision)) return Effect.fail(decision.left)
      const { changes, result } = decision.right
      const fault = versionChangeFault(points, view, changes, keys) ??
        changes.open.map((r) => (rows.has(keys.key(r)) ? `opens ${keys.key(r)}, which is stored` : undefined)).find((f) => f !== undefined)
      if (fault !== undefined) return Effect.die(new StorageDefect({ operation, cause: new Error(fault) }))
      log?.sink(versionEvents(log.types, keys, view, changes))
      for (const r of changes.restate ?? []) put(r)
      for (const c of changes.close) put({ ...rows.get(c.key)!, valid_to: c.valid_to })
      for (const r of changes.open) put(r)
      if (changes.restate?.length || changes.close.length > 0 || changes.open.length > 0) version.bump()
      if (changes.mark !== undefined) marks.set(changes.mark.name, changes.mark.value)
      return Effect.succeed(result)
    })
}
