import { StorageError } from "@gpu-market/core"
import { DEFAULT_EVENT_RETENTION, StorageDefect, type StorageFault } from "@gpu-market/core/storage"
import Database from "better-sqlite3"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as path from "node:path"
import { sharedReads } from "./shared-reads.js"
import { walIndexStamp } from "./wal-index-stamp.js"

/** Where the database lives. */
export interface SqliteOptions {
  /** Path of the database file; its directory is created when missing. `:memory:` works too. */
  readonly filename: string
  /**
   * WAL pages this connection's commits add before it copies them into the database (a
   * checkpoint); SQLite's default is 1,000. A bulk load sets more: a page changed by many of its
   * writes is copied once, not once per write, and checkpoints pause the loader less often.
   */
  readonly checkpointPages?: number
  /**
   * The connection of a bulk load (an import): rental writes of `BULK_ROWS_PER_WRITE` rows, and a
   * page cache of `BULK_CACHE_MIB`, which holds most of the indexes such writes touch at random
   * (their keys are hashes) across a million rows; a page it drops is read back from the
   * operating system's file cache. Larger, it held them all, and an import's memory grew by it.
   */
  readonly bulk?: boolean
  /**
   * Change-feed events the file keeps: the newest this many (default 100,000). A subscriber
   * that resumes from an older id is answered 410 `event_id_expired`.
   */
  readonly eventRetention?: number
  /** How often a process polls the file for other processes' events, in ms (default 100). */
  readonly eventPollMs?: number
  /**
   * Rows of rental and LLM token prices a connection keeps in memory per data type for its pages
   * (default 10,000, about 2 KB each with their JSON text; 0 reads every page whole). Pages then
   * read only the keys of their rows from the index they walk, and rows held are served as they
   * are: see docs/guides/caching.md, "Row cache".
   */
  readonly rowCacheRows?: number
  /**
   * Check the file with `PRAGMA quick_check` in a worker thread once it is open (what a server
   * does): the result is logged, and a corrupt file makes `/readyz` answer 503. Default false.
   */
  readonly integrityCheck?: boolean
}

/** A statement as the stores use it: positional or named parameters, rows as plain objects. */
export type Statement = Database.Statement<Array<unknown>, unknown>

/**
 * Thrown inside a transaction body to roll the transaction back and fail with `error` as it is,
 * rather than as a `StorageError` (a decision's refusal, say).
 */
export class Rollback<E> {
  constructor(readonly error: E) {}
}

/** One better-sqlite3 connection with a statement cache and Effect-returning runners. */
export interface SqliteClient {
  readonly db: Database.Database
  readonly filename: string
  /** Change-feed events kept (`SqliteOptions.eventRetention`): every write that logs events trims to it. */
  readonly eventRetention: number
  /** The first corruption a statement of this connection met (`SQLITE_CORRUPT`, `SQLITE_NOTADB`), if any: its operation and SQLite's words. */
  readonly corruption: () => string | undefined
  /**
   * A reading that moves whenever the file may have changed (the change feed polls it): the header of
   * its WAL index, which every commit of any connection rewrites, read with one `pread`
   * (`walIndexStamp`); where it cannot be read, the rows this connection has changed
   * (`total_changes()`) and SQLite's `data_version`, which moves with every other connection's
   * commit, in one statement that reads no table.
   */
  readonly changeStamp: () => string
  /** The statement of `sql`, prepared once and reused while it stays in the cache. */
  readonly prepare: (sql: string) => Statement
  /**
   * Runs `body`, which only reads, in the read transaction the reads of the current task share
   * (see `SharedReads`): one snapshot, and one lock of the WAL index for all of them. Failures are
   * told apart as in `run`.
   */
  readonly read: <A>(operation: string, body: () => A) => Effect.Effect<A, StorageError>
  /**
   * `read` as `read` runs it, its value kept while the WAL index header (`walIndexStamp`) has not
   * moved since: every commit of any connection to the file rewrites the header, so while it is
   * the same, no row changed and the value is current. For a version row every request reads
   * (a type's data version, the token store's), whose read cost more than the rest of a cached
   * page. The header is read before a fresh read transaction is opened for the value, so a value
   * is never kept under a header older than it; inside a transaction already open, whose snapshot
   * may be older than the header, and where the header cannot be read, it is read every time.
   */
  readonly readStamped: <A>(operation: string, read: () => A) => Effect.Effect<A, StorageError>
  /**
   * Runs `body` outside any explicit transaction, once the shared reads of every connection of
   * this process to the file have ended, so it may write and what it reads is the newest. What it
   * throws becomes a `StorageError` when it is storage trouble, and a `StorageDefect` the effect
   * dies with otherwise (see `isStorageTrouble`).
   */
  readonly run: <A>(operation: string, body: () => A) => Effect.Effect<A, StorageError>
  /**
   * Runs `body` in one `BEGIN IMMEDIATE` transaction (once the shared reads have ended, as `run`
   * does), so writers in other processes queue on the busy timeout instead of failing half-way. A
   * throw rolls back and is told apart as in `run`; `abort(e)` rolls back and fails with `e`.
   */
  readonly transaction: <A, E = never>(
    operation: string,
    body: (abort: (error: E) => never) => A
  ) => Effect.Effect<A, StorageError | E>
  /** Ends its shared reads and closes the connection. */
  readonly close: () => void
}

/**
 * Statements are cached by SQL text. Page shapes vary with the number of list values and the
 * filters combined, so the cache is bounded: least recently used shapes go first.
 */
const STATEMENT_CACHE_SIZE = 500

const abort = <E>(error: E): never => {
  throw new Rollback(error)
}

/**
 * SQLite's result codes (extended ones add a suffix) for work the storage could not do: locked
 * past the busy timeout, out of memory or disk, an I/O error, a file it cannot open or write, a
 * damaged file. Every other code is about our own SQL or data (a syntax error, a constraint an
 * apply should not have broken, a bind mismatch), which no retry mends.
 */
const STORAGE_TROUBLE = /^SQLITE_(BUSY|LOCKED|NOMEM|READONLY|IOERR|CORRUPT|FULL|CANTOPEN|PROTOCOL|NOTADB|PERM|NOLFS)(_|$)/

/**
 * Whether a failure is the storage's rather than ours. better-sqlite3 reports whatever the engine
 * could not do as a `SqliteError` with its result code, and the file system (opening a file in a
 * directory that cannot be made) as Node's system errors; the rest (an `InvalidPlan`, a JSON column
 * that does not parse, a `TypeError`) is this package's own.
 */
const isStorageTrouble = (e: unknown): boolean =>
  e instanceof Database.SqliteError ? STORAGE_TROUBLE.test(e.code) : e instanceof Error && typeof (e as NodeJS.ErrnoException).syscall === "string"

/**
 * The fault an operator must fix, where the failure names one: SQLite's `SQLITE_FULL` (its write
 * found no room) or the file system's `ENOSPC` for a full disk, `SQLITE_CORRUPT` or
 * `SQLITE_NOTADB` for a damaged file.
 */
export const faultOf = (e: unknown): StorageFault | undefined => {
  const code = e instanceof Database.SqliteError ? e.code : e instanceof Error ? (e as NodeJS.ErrnoException).code : undefined
  if (code === undefined) return undefined
  if (code.startsWith("SQLITE_FULL") || code === "ENOSPC") return "disk_full"
  return code.startsWith("SQLITE_CORRUPT") || code === "SQLITE_NOTADB" ? "corrupt" : undefined
}

/**
 * The single place where a backend failure becomes a `StorageError`, a retryable 503 for the
 * caller, or a `StorageDefect`, a 500 that is logged and never retried.
 */
const attempt = <A, E>(operation: string, body: () => A, failed?: (error: StorageError) => void): Effect.Effect<A, StorageError | E> => {
  try {
    return Effect.succeed(body())
  } catch (cause) {
    if (cause instanceof Rollback) return Effect.fail(cause.error as E)
    if (!isStorageTrouble(cause)) return Effect.die(new StorageDefect({ operation, cause }))
    const error = storageError(operation, cause)
    failed?.(error)
    return Effect.fail(error)
  }
}

/** A storage failure of `operation`, with its fault where it names one. */
export const storageError = (operation: string, cause: unknown): StorageError => {
  const fault = faultOf(cause)
  return new StorageError(fault === undefined ? { operation, cause } : { operation, cause, fault })
}

/** Page cache of a bulk load's connection (`SqliteOptions.bulk`), MiB. */
export const BULK_CACHE_MIB = 128

const open = ({ filename, checkpointPages, bulk }: SqliteOptions): Database.Database => {
  if (filename !== ":memory:" && filename !== "") fs.mkdirSync(path.dirname(path.resolve(filename)), { recursive: true })
  const db = new Database(filename, { timeout: 5000 })
  try {
    // WAL lets readers in other processes carry on while one writer commits; NORMAL sync is
    // durable across application crashes in WAL mode and much cheaper than FULL.
    db.pragma("journal_mode = WAL")
    db.pragma("synchronous = NORMAL")
    db.pragma("foreign_keys = ON")
    db.pragma("busy_timeout = 5000")
    // 64 MiB of page cache: the hot partial indexes of current rows stay resident.
    db.pragma(`cache_size = -${(bulk === true ? BULK_CACHE_MIB : 64) * 1024}`)
    db.pragma("temp_store = MEMORY")
    if (checkpointPages !== undefined) db.pragma(`wal_autocheckpoint = ${Math.max(1, Math.floor(checkpointPages))}`)
  } catch (e) {
    db.close()
    throw e
  }
  return db
}

/** Wraps an open connection. The caller owns closing it. */
export const fromDatabase = (db: Database.Database, filename: string, eventRetention = DEFAULT_EVENT_RETENTION): SqliteClient => {
  const cache = new Map<string, Statement>()
  const prepare = (sql: string): Statement => {
    const hit = cache.get(sql)
    if (hit !== undefined) {
      // Re-inserting keeps Map order as recency order, which is what eviction reads.
      cache.delete(sql)
      cache.set(sql, hit)
      // A cached reader may have been switched to raw or plucked rows by its last user; every
      // caller gets object rows unless it asks for another mode itself (`raw(false)` alone leaves
      // a plucked statement plucked).
      return hit.reader ? hit.pluck(false).raw(false) : hit
    }
    const statement = db.prepare<Array<unknown>, unknown>(sql)
    if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!)
    cache.set(sql, statement)
    return statement
  }
  let stamp: Statement | undefined
  // The WAL index header's reader (`walIndexStamp`), looked for on first use; null until then.
  let header: (() => string | undefined) | undefined | null = null
  const reads = sharedReads(db, filename)
  let corruption: string | undefined
  const failed = (error: StorageError) => {
    if (error.fault === "corrupt") corruption ??= `${error.operation}: ${error.cause instanceof Error ? error.cause.message : String(error.cause)}`
  }
  return {
    db,
    filename,
    eventRetention,
    corruption: () => corruption,
    changeStamp: () => {
      if (header === null) header = walIndexStamp(db, filename)
      const read = header?.()
      if (read !== undefined) return read
      // Read in the task's shared transaction when one is open, else on its own: a feed poll
      // reads nothing else when it is unchanged, and opening a transaction to share would cost
      // it two statements more.
      stamp ??= db.prepare<Array<unknown>, unknown>("SELECT total_changes(), data_version FROM pragma_data_version").raw(true)
      const [changed, version] = stamp.get() as [number, number]
      return `${changed}:${version}`
    },
    prepare,
    read: (operation, body) => Effect.suspend(() => attempt(operation, () => (reads.join(), body()), failed)),
    readStamped: <A>(operation: string, read: () => A) => {
      let kept: { readonly at: string; readonly value: A } | undefined
      return Effect.suspend(() => attempt(operation, () => {
        if (header === null) header = walIndexStamp(db, filename)
        const at = db.inTransaction ? undefined : header?.()
        if (at !== undefined && kept?.at === at) return kept.value
        reads.join()
        const value = read()
        if (at !== undefined) kept = { at, value }
        return value
      }, failed))
    },
    run: (operation, body) => Effect.suspend(() => attempt(operation, () => (reads.end(), body()), failed)),
    transaction: <A, E = never>(operation: string, body: (abort: (error: E) => never) => A) =>
      Effect.suspend(() => attempt<A, E>(operation, () => (reads.end(), db.transaction(() => body(abort)).immediate()), failed)),
    close: () => {
      reads.close()
      if (db.open) db.close()
    }
  }
}

/** Opens (creating when missing) the database for the life of the scope, and closes it after. */
export const makeClient = (options: SqliteOptions): Effect.Effect<SqliteClient, StorageError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.suspend(() => attempt<SqliteClient, never>("open", () => fromDatabase(open(options), options.filename, options.eventRetention))),
    (client) => Effect.sync(client.close)
  )
