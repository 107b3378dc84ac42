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


const INSERT = "INSERT INTO events (event) VALUES (?)"
const TRIM = "DELETE FROM events WHERE id <= ?"
const READ = "SELECT id, event FROM events WHERE id > ? ORDER BY id LIMIT ?"
const HEAD = "SELECT seq FROM sqlite_sequence WHERE name = 'events'"
const FIRST = "SELECT min(id) FROM events"

/**
 * Appends `events` and trims the log to its retention: call inside the write's transaction.
 * The trim is one seek on the primary key, so it runs with every write.
 */
export const appendEvents = (client: SqliteClient, events: ReadonlyArray<MarketEvent>): void => {
  const retention = client.eventRetention
  if (events.length === 0) return
  const insert = client.prepare(INSERT)
  let last = 0
  for (const e of events) last = Number(insert.run(JSON.stringify(e)).lastInsertRowid)
  if (last > retention) client.prepare(TRIM).run(last - retention)
  wake(client.filename)
}

/** The event log over one connection. */
export const makeEventLogStore = (client: SqliteClient, pollMs = 100): EventLogStore["Type"] => {
  const head = (): number => (client.prepare(HEAD).pluck().get() as number | undefined) ?? 0
  const readSync = (position: string, limit: number): ReadonlyArray<LoggedEvent> | EventLogTrimmed => {
    const after = Number(position)
    const last = head()
    const first = (client.prepare(FIRST).pluck().get() as number | null) ?? last + 1
    // Before the oldest kept event, or past the newest ever written (another file's id).
    if (after < first - 1 || after > last) return new EventLogTrimmed({ position })
    return (client.prepare(READ).raw(true).all(after, limit) as Array<[number, string]>).map(([id, event]) => ({
      id: String(id),
      event: JSON.parse(event) as MarketEvent
    }))
  }
  // One read transaction: the bounds and the rows come from one snapshot.
  const readConsistently = client.db.transaction(readSync)
  const read = (position: string, limit: number) =>
    Effect.flatMap(client.read("events.read", () => readConsistently(position, limit)), (r) =>
      r instanceof EventLogTrimmed ? Effect.fail(r) : Effect.succeed(r))
  // The position a follow last found nothing after, and the file's change stamp before that
  // read: while neither moves, nothing was committed to read, and a quiet feed reads no table.
  let quiet: { readonly position: string; readonly stamp: string } | undefined
  const stamp = client.read("events.stamp", client.changeStamp)
  const readUnlessQuiet = (position: string, limit: number, since: string) =>
    quiet !== undefined && quiet.position === position && quiet.stamp === since ? Effect.succeed([]) : read(position, limit)
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

