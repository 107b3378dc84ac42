import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { StorageError } from "@gpu-market/core"
import type { SqliteClient } from "./client.js"

/**
 * A bulk load of rental prices with the serving indexes held back: they are dropped before the
 * load and built again, by sorting, when it ends. Building an index from sorted keys costs a
 * fraction of keeping it up to date row by row (each key is a hash, so every row lands on a page
 * of its own in each index, and every write copies those pages to the WAL again).
 *
 * Held back: the indexes readers use to serve pages (the current rows by anchor and sort, the
 * history by `valid_from`). Kept: the unique constraints and the indexes the write path reads
 * through (`rental_prices_current_base`, `rental_prices_base_valid_from`, the `product_key`
 * unique index), so every write still checks what it always checks. Readers in other processes
 * keep working meanwhile and see the same rows, from the same transactions: a query the planner
 * answered through a missing index scans the table instead, slower but right.
 *
 * What was dropped, with its SQL and planner statistics (`sqlite_stat1` loses a dropped index's
 * row), is recorded in a settings row in the same transaction as the drop, and each index is
 * built again in a transaction of its own that also takes it off the record. So a load killed
 * part-way leaves the record, and the next bulk load on the file (an import run again, say)
 * takes it over and builds the indexes when it ends.
 */

/** The settings row that records held-back indexes: JSON `Array<HeldIndex>`. */
const RECORD = "rental_prices.held_indexes"

/** Indexes of `rental_prices` a bulk load never drops: the write path reads through them. */
const KEPT = new Set(["rental_prices_current_base", "rental_prices_base_valid_from"])

/**
 * A bulk load holds the indexes back when it brings at least this many rows and at least half as
 * many as the table holds: below that, keeping the indexes up to date costs less than sorting
 * the whole table into them again.
 */
export const BULK_MIN_ROWS = 5_000

interface HeldIndex {
  readonly name: string
  readonly sql: string
  /** Its `sqlite_stat1.stat`, if it had one. */
  readonly stat: string | null
}

const readRecord = (client: SqliteClient): Array<HeldIndex> => {
  const value = client.prepare("SELECT value FROM settings WHERE name = ?").pluck().get(RECORD) as string | undefined
  return value === undefined ? [] : JSON.parse(value) as Array<HeldIndex>
}

const writeRecord = (client: SqliteClient, held: ReadonlyArray<HeldIndex>): void => {
  if (held.length === 0) client.prepare("DELETE FROM settings WHERE name = ?").run(RECORD)
  else {
    client.prepare("INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value")
      .run(RECORD, JSON.stringify(held))
  }
}

/** Drops the serving indexes, recording them; returns how many the record now holds. */
const holdBack = (client: SqliteClient, rows: number): Effect.Effect<number, StorageError> =>
  client.transaction("rental_prices.holdIndexes", () => {
    const held = readRecord(client)
    // Rows the table holds, near enough: its rowids only grow.
    const stored = (client.prepare("SELECT max(rowid) FROM rental_prices").pluck().get() as number | null) ?? 0
    if (rows < BULK_MIN_ROWS || rows * 2 < stored) return held.length
    const indexes = client.prepare(
      `SELECT i.name, i.sql, s.stat FROM sqlite_schema i LEFT JOIN sqlite_stat1 s ON s.tbl = i.tbl_name AND s.idx = i.name
       WHERE i.type = 'index' AND i.tbl_name = 'rental_prices' AND i.sql IS NOT NULL ORDER BY i.name`
    ).all() as Array<HeldIndex>
    const dropped = indexes.filter((i) => !KEPT.has(i.name))
    for (const i of dropped) client.db.exec(`DROP INDEX ${i.name}`)
    const all = [...held.filter((h) => !dropped.some((d) => d.name === h.name)), ...dropped]
    writeRecord(client, all)
    return all.length
  })

/**
 * Between two index builds, ms: longer than the longest sleep of SQLite's busy handler (100 ms), so
 * a writer of another process that waited for one build gets the file before the next begins,
 * rather than polling through all of them (BENCHMARKS.md (k): how long it waited without this pause).
 */
const PAUSE_BETWEEN_BUILDS_MS = 120

/**
 * Copies the WAL into the database file without taking the write lock (a passive checkpoint), so
 * the pause between two builds does work the file's last close would do anyway: each build's index
 * pages leave the WAL as the next build begins, the WAL starts over small, and the close has one
 * index left to copy. Returns how long it took, ms.
 */
const checkpoint = (client: SqliteClient): Effect.Effect<number, StorageError> =>
  client.run("rental_prices.checkpoint", () => {
    const started = performance.now()
    client.db.pragma("wal_checkpoint(PASSIVE)")
    return performance.now() - started
  })

/** The pause between two builds: a checkpoint, then a sleep for what is left of `PAUSE_BETWEEN_BUILDS_MS`. */
const pauseBetweenBuilds = (client: SqliteClient): Effect.Effect<void, StorageError> =>
  Effect.flatMap(checkpoint(client), (took) => took < PAUSE_BETWEEN_BUILDS_MS ? Effect.sleep(`${PAUSE_BETWEEN_BUILDS_MS - took} millis`) : Effect.void)

/**
 * Sorter memory of an index build, KiB: the page cache the connection has while it builds (SQLite
 * sizes the sorter's runs by it). A build sorts a million keys in runs of this size, each sorted in
 * memory and written to a temporary file, then merges them. Runs that fit in the CPU's cache sort
 * fastest, and one list sorted all in memory far slower (BENCHMARKS.md (k)).
 */
const SORT_RUN_KIB = 512

/**
 * Runs `build` with the connection set for sorting (`SORT_RUN_KIB`, temporary files on disk: with
 * `temp_store = MEMORY` SQLite never ends a run and sorts everything in one list), and puts its
 * page cache and temporary store back after, whatever happens.
 */
const sortingOnDisk = <A, E>(client: SqliteClient, build: Effect.Effect<A, E>): Effect.Effect<A, E | StorageError> =>
  Effect.acquireUseRelease(
    client.run("rental_prices.sortSettings", () => {
      const kept = { cache: client.db.pragma("cache_size", { simple: true }) as number, temp: client.db.pragma("temp_store", { simple: true }) as number }
      client.db.pragma(`cache_size = -${SORT_RUN_KIB}`)
      client.db.pragma("temp_store = FILE")
      return kept
    }),
    () => build,
    (kept) => Effect.sync(() => {
      if (!client.db.open) return
      client.db.pragma(`cache_size = ${kept.cache}`)
      client.db.pragma(`temp_store = ${kept.temp}`)
    })
  )

/**
 * Builds every recorded index again, one transaction each (so another writer waits for one index
 * at a time, never for all of them), restoring its planner statistics in the same transaction:
 * other connections load them with the new schema.
 */
export const restoreHeldIndexes = (client: SqliteClient): Effect.Effect<void, StorageError> =>
  sortingOnDisk(client, Effect.gen(function* () {
    // The load's own pages leave the WAL first: each build's scan of the table then finds them in
    // the file, not by searching a WAL of up to `checkpointPages` frames for every page it reads.
    if (readRecord(client).length > 0) yield* checkpoint(client)
    for (;;) {
      const more = yield* client.transaction("rental_prices.restoreIndexes", () => {
        const [next, ...rest] = readRecord(client)
        if (next === undefined) return false
        const exists = client.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'index' AND name = ?").pluck().get(next.name) !== undefined
        if (!exists) {
          client.db.exec(next.sql)
          if (next.stat !== null) {
            client.prepare("INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES ('rental_prices', ?, ?)").run(next.name, next.stat)
          }
        }
        writeRecord(client, rest)
        return rest.length > 0
      })
      if (!more) return
      yield* pauseBetweenBuilds(client)
    }
  }))

/**
 * `restoreHeldIndexes` as a connection that serves does it when it opens: a named fault (a full
 * disk, a damaged file) leaves the indexes held back and is logged instead of refusing the open,
 * so reads go on (slower, through the table) and a later open builds them once there is room.
 */
export const rebuildHeldIndexes = (client: SqliteClient): Effect.Effect<void, StorageError> =>
  Effect.catchIf(
    restoreHeldIndexes(client),
    (e) => e.fault !== undefined,
    (e) => Effect.logWarning(`rental price indexes held back by an import are not built again yet (${e.failed}); the next open of the file builds them`)
  )

/**
 * For the life of the scope, a bulk load of about `rows` rental rows: holds the serving indexes
 * back when the load is large against the table (`BULK_MIN_ROWS`), or when an earlier load left
 * them held back. Returns the load's end, which builds them again; should the scope close
 * without it (the load failed), they are built then, and should that fail too, the next bulk
 * load builds them.
 */
export const bulkLoad = (client: SqliteClient, rows: number): Effect.Effect<Effect.Effect<void, StorageError>, StorageError, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(holdBack(client, rows), (held) =>
      held === 0 || !client.db.open
        ? Effect.void
        : Effect.catchAll(restoreHeldIndexes(client), (e) => Effect.logWarning(`rental price indexes not built again yet (${e.failed}); the next open of the file builds them`))),
    () => restoreHeldIndexes(client)
  )
