import type Database from "better-sqlite3"
import * as fs from "node:fs"
import * as path from "node:path"

/**
 * The reads a connection makes for the work of one task of the event loop (one request's token
 * version, data version and page, say, and those of any request handled with it) share one read
 * transaction: opened by the first of them, ended once the task and the promise jobs it started
 * have run (`process.nextTick` queued from them runs after those jobs). Each read transaction of
 * its own locks and unlocks a slot of the WAL index with two `fcntl` calls (and, while the WAL is
 * empty, sizes the file with `fstat`): in a server whose memory the request's other work has
 * just swept through, that costs many times a read in a transaction already open (BENCHMARKS.md (l)).
 *
 * Fresh as before: a transaction never outlives the task that opened it, so a request that
 * arrives later (after a write it has seen acknowledged, in this process or another) reads in a
 * transaction of its own, opened after it arrived. A write on any connection to the same file in
 * this process ends the shared reads of all of them first, so a read after it sees it. Reads in
 * one transaction see one snapshot: a page, its version and the caller's token version agree.
 */
export interface SharedReads {
  /** Joins the read transaction of the current task, opening it if none is open. */
  readonly join: () => void
  /** Ends the shared read transactions of every connection of this process to this file: before a write. */
  readonly end: () => void
  /** Ends this connection's and forgets it: before it closes. */
  readonly close: () => void
}

/**
 * The real path of a database file as SQLite names its own files after it (`-wal`, `-shm`), so
 * connections that named it through another path or a link find each other; undefined for a
 * database private to its connection (`:memory:`, `""`).
 */
export const realPathOf = (filename: string): string | undefined =>
  filename === ":memory:" || filename === "" ? undefined : fs.realpathSync(path.resolve(filename))

/** Each file's connections in this process, by real path: a write on one ends the others' shared reads. */
const connectionsOf = new Map<string, Set<() => void>>()

/** Shared reads of `db`, a connection to `filename` (`:memory:` and `""` are private to the connection). */
export const sharedReads = (db: Database.Database, filename: string): SharedReads => {
  const begin = db.prepare("BEGIN")
  const commit = db.prepare("COMMIT")
  let open = false
  const endOwn = () => {
    if (!open) return
    open = false
    if (!db.open || !db.inTransaction) return
    // Ending a transaction that only read cannot lose anything; should SQLite refuse even that,
    // it is rolled back rather than thrown into the event loop.
    try {
      commit.run()
    } catch {
      if (db.inTransaction) db.exec("ROLLBACK")
    }
  }
  const key = realPathOf(filename)
  const peers = key === undefined ? new Set<() => void>() : connectionsOf.get(key) ?? new Set<() => void>()
  if (key !== undefined) connectionsOf.set(key, peers)
  peers.add(endOwn)
  return {
    join: () => {
      if (open || db.inTransaction) return
      begin.run()
      open = true
      process.nextTick(endOwn)
    },
    end: () => {
      for (const end of peers) end()
    },
    close: () => {
      endOwn()
      peers.delete(endOwn)
      if (key !== undefined && peers.size === 0) connectionsOf.delete(key)
    }
  }
}
