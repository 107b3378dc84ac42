import type { MarketEvent } from "@gpu-market/core"
import { EventLogTrimmed, type EventLogStore, type LoggedEvent, numberedPositions } from "@gpu-market/core/storage"
import * as Effect from "effect/Effect"
import type { SqliteClient } from "./client.js"
import type { Migration } from "./migration.js"

/**
 * The change feed's log in SQLite: a table whose AUTOINCREMENT id is the event's id. A store's
 * write appends its events inside its own transaction (`appendEvents`), so an event is committed
 * exactly with its rows, and ids are handed out in commit order (one writer at a time), never
 * reused (AUTOINCREMENT), and without gaps (a rolled-back write takes its ids back with it).
 * Other processes on the file see new events by polling `WHERE id > ?`; followers in the
 * writing process are woken as soon as its write commits.
 */

/**
 * Followers of each file in this process, woken when a connection of the process appends to it:
 * the callbacks run after the current task, when the write's transaction has committed (one
 * that rolled back wakes them to find nothing, which costs one read).
 */
const followers = new Map<string, Set<() => void>>()
const scheduled = new Set<string>()
const wake = (file: string) => {
  if (scheduled.has(file)) return
  scheduled.add(file)
  setImmediate(() => {
    scheduled.delete(file)
    for (const f of followers.get(file) ?? []) f()
  })
}
/** Waits up to `ms` for a write of this process to `file`. */
const appended = (file: string, ms: number): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    let set = followers.get(file)
    if (set === undefined) followers.set(file, set = new Set())
    const done = () => {
      clearTimeout(timer)
      set.delete(done)
      resume(Effect.void)
    }
    const timer = setTimeout(done, ms)
    set.add(done)
    return Effect.sync(() => {
      clearTimeout(timer)
      set.delete(done)
    })
  })

/** Migration 8: the event log. */
export const eventLogMigration: Migration = {
  version: 8,
  name: "event log",
  sql: `
CREATE TABLE events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  event TEXT NOT NULL
);
`
}

/**
 * Migration 9: events that name their row by key. `event` holds the event's type, `row_key` the
 * row's key in its table and `row_valid_to` the row's `valid_to` when the event was logged; the
 * other events keep `row_key` null and their JSON in `event`, as before.
 */
export const keyedEventsMigration: Migration = {
  version: 9,
  name: "events by row key",
  sql: `
ALTER TABLE events ADD COLUMN row_key TEXT;
ALTER TABLE events ADD COLUMN row_valid_to TEXT;
`
}

/**
 * A table whose rows the log names by key instead of copying: once written, a row changes only
 * in `valid_to`, and is never deleted, so an event's row is the stored row with the `valid_to`
 * it had when the event was logged. A rental import logs an event per row it writes: copied as
 * JSON, the log wrote more than the rows themselves (BENCHMARKS.md (k)).
 */
export interface KeyedRows<Row extends { readonly valid_to: string | null }> {
  readonly table: string
  /** The unique column that names a row. */
  readonly key: string & keyof Row
  /** Every column, in the order `fromColumns` reads them. */
  readonly columns: ReadonlyArray<string>
  readonly fromColumns: (columns: ReadonlyArray<unknown>) => Row
  /** The event a logged type names with its row, or undefined for a type the table does not log. */
  readonly event: (type: string, row: Row) => MarketEvent | undefined
}

const INSERT = "INSERT INTO events (event) VALUES (?)"
const INSERT_KEYED = "INSERT INTO events (event, row_key, row_valid_to) VALUES (?, ?, ?)"
const TRIM = "DELETE FROM events WHERE id <= ?"
const HEAD = "SELECT seq FROM sqlite_sequence WHERE name = 'events'"
const FIRST = "SELECT min(id) FROM events"

/** Trims the log to its retention after an append whose last id was `last`, and wakes followers. */
const trimAndWake = (client: SqliteClient, last: number): void => {
  if (last > client.eventRetention) client.prepare(TRIM).run(last - client.eventRetention)
  wake(client.filename)
}

/**
 * Appends `events` and trims the log to its retention: call inside the write's transaction.
 * The trim is one seek on the primary key, so it runs with every write.
 */
export const appendEvents = (client: SqliteClient, events: ReadonlyArray<MarketEvent>): void => {
  if (events.length === 0) return
  const insert = client.prepare(INSERT)
  let last = 0
  for (const e of events) last = Number(insert.run(JSON.stringify(e)).lastInsertRowid)
  trimAndWake(client, last)
}

/** Appends `events`, whose rows `keyed` names by key, as `appendEvents` does. */
export const appendKeyedEvents = <Row extends { readonly valid_to: string | null }>(
  client: SqliteClient,
  keyed: KeyedRows<Row>,
  events: ReadonlyArray<{ readonly type: string; readonly row: Row }>
): void => {
  if (events.length === 0) return
  const insert = client.prepare(INSERT_KEYED)
  let last = 0
  for (const e of events) last = Number(insert.run(e.type, e.row[keyed.key], e.row.valid_to).lastInsertRowid)
  trimAndWake(client, last)
}

/** The event log over one connection. */
export const makeEventLogStore = <Row extends { readonly valid_to: string | null }>(
  client: SqliteClient,
  keyed: KeyedRows<Row>,
  pollMs = 100
): EventLogStore["Type"] => {
  const head = (): number => (client.prepare(HEAD).pluck().get() as number | undefined) ?? 0
  // The keyed row of each event joined by its key; other events find no row and carry their JSON.
  const READ = `SELECT e.id, e.event, e.row_key, e.row_valid_to, ${keyed.columns.map((c) => `k.${c}`).join(", ")}
    FROM events e LEFT JOIN ${keyed.table} k ON k.${keyed.key} = e.row_key
    WHERE e.id > ? ORDER BY e.id LIMIT ?`
  const keyColumn = keyed.columns.indexOf(keyed.key)
  const eventOf = ([id, event, key, validTo, ...columns]: Array<unknown>): LoggedEvent => {
    if (key === null) return { id: String(id), event: JSON.parse(event as string) as MarketEvent }
    if (columns[keyColumn] === null) throw new Error(`event ${id} names ${keyed.table} row ${key}, which is not stored`)
    const row = { ...keyed.fromColumns(columns), valid_to: typeof validTo === "string" ? validTo : null }
    const logged = keyed.event(String(event), row)
    if (logged === undefined) throw new Error(`event ${id} is a ${event}, which ${keyed.table} does not log`)
    return { id: String(id), event: logged }
  }
  const readSync = (position: string, limit: number): ReadonlyArray<LoggedEvent> | EventLogTrimmed => {
    const after = Number(position)
    const last = head()
    const first = (client.prepare(FIRST).pluck().get() as number | null) ?? last + 1
    // Before the oldest kept event, or past the newest ever written (another file's id).
    if (after < first - 1 || after > last) return new EventLogTrimmed({ position })
    return (client.prepare(READ).raw(true).all(after, limit) as Array<Array<unknown>>).map(eventOf)
  }
  // One read transaction: the bounds and the rows come from one snapshot.
  const readConsistently = client.db.transaction(readSync)
  const settled = (r: ReadonlyArray<LoggedEvent> | EventLogTrimmed) => r instanceof EventLogTrimmed ? Effect.fail(r) : Effect.succeed(r)
  const read = (position: string, limit: number) => Effect.flatMap(client.read("events.read", () => readConsistently(position, limit)), settled)
  // The position a follow last found nothing after, and the file's change stamp before that
  // read: while neither moves, nothing was committed to read, and a quiet feed reads no table.
  let quiet: { readonly position: string; readonly stamp: string } | undefined
  const stamp = client.read("events.stamp", client.changeStamp)
  // A follow reads the newest, in a snapshot begun after the stamp: in one the task's other reads
  // (a request's page) had begun before another process committed, it found nothing while the
  // stamp already showed the commit, took the log for quiet, and read nothing until the next one.
  const readUnlessQuiet = (position: string, limit: number, since: string) =>
    quiet !== undefined && quiet.position === position && quiet.stamp === since
      ? Effect.succeed([])
      : Effect.flatMap(client.run("events.follow", () => readConsistently(position, limit)), settled)
  return {
    positions: numberedPositions,
    head: client.read("events.head", () => String(head())),
    read,
    follow: (position, limit) =>
      Effect.flatMap(stamp, (before) => Effect.flatMap(readUnlessQuiet(position, limit, before), (found) => {
        if (found.length > 0) return Effect.succeed(found)
        quiet = { position, stamp: before }
        return Effect.zipRight(appended(client.filename, pollMs), Effect.flatMap(stamp, (after) => readUnlessQuiet(position, limit, after)))
      }))
  }
}

