import { type HardwarePrice, hardwareTermFields, storedRowInTerms } from "@gpu-market/core"
import * as Effect from "effect/Effect"
import type { SqliteClient } from "./client.js"
import { dataVersion } from "./data-version.js"
import type { Migration } from "./migration.js"

/**
 * Hardware rows and events stored before the descriptive fields held terms (0.2.0 stored a
 * source's text, which may name the seller) are rewritten to the terms they read as, by the rule
 * ingest uses (`storedRowInTerms`), and the file is then vacuumed, so the text is neither served
 * nor left in the file's free pages or its WAL.
 */

type TermColumns = { -readonly [F in (typeof hardwareTermFields)[number]]: HardwarePrice[F] }

/** The settings row that says the file held hardware text: it is vacuumed when it opens (`purgeReplacedText`). */
const PURGE_PENDING = "hardware_prices.purge_pending"

/** Rows read per step of the rewrite: better-sqlite3 cannot update a table while iterating over it. */
const CHUNK = 5_000

const COLUMNS = hardwareTermFields.join(", ")
const SELECT_ROWS = `SELECT rowid, ${COLUMNS} FROM hardware_prices WHERE rowid > ? ORDER BY rowid LIMIT ${CHUNK}`
const UPDATE_ROW = `UPDATE hardware_prices SET ${hardwareTermFields.map((f) => `${f} = ?`).join(", ")} WHERE rowid = ?`
// Events logged as JSON copies; `_` matches any character in LIKE, so the type is checked again.
const SELECT_EVENTS = `SELECT id, event FROM events
  WHERE row_key IS NULL AND id > ? AND event LIKE '{"type":"hardware_observation",%' ORDER BY id LIMIT ${CHUNK}`
const UPDATE_EVENT = "UPDATE events SET event = ? WHERE id = ?"

const columnsOf = (row: TermColumns): Array<unknown> =>
  hardwareTermFields.map((f) => (f === "services_included" && row[f] !== null ? JSON.stringify(row[f]) : row[f]))

/** Rewrites every stored hardware row's descriptive fields to its terms; whether the table holds any row. */
const rewriteRows = (client: SqliteClient): boolean => {
  const select = client.prepare(SELECT_ROWS).raw(true)
  const update = client.prepare(UPDATE_ROW)
  let after = 0
  let any = false
  for (;;) {
    const rows = select.all(after) as Array<[number, ...Array<string | null>]>
    if (rows.length === 0) return any
    any = true
    for (const [rowid, ...values] of rows) {
      const stored = Object.fromEntries(hardwareTermFields.map((f, i) =>
        [f, f === "services_included" && values[i] !== null ? JSON.parse(values[i]!) : values[i]])) as TermColumns
      const terms = storedRowInTerms(stored)
      if (terms !== undefined) update.run(...columnsOf(terms), rowid)
    }
    after = rows[rows.length - 1]![0]
  }
}

/** Rewrites the rows inside the hardware events the log holds as JSON; whether it holds any. */
const rewriteEvents = (client: SqliteClient): boolean => {
  const select = client.prepare(SELECT_EVENTS).raw(true)
  const update = client.prepare(UPDATE_EVENT)
  let after = 0
  let any = false
  for (;;) {
    const events = select.all(after) as Array<[number, string]>
    if (events.length === 0) return any
    for (const [id, text] of events) {
      const event = JSON.parse(text) as { readonly type: string; readonly row: HardwarePrice }
      if (event.type !== "hardware_observation") continue
      any = true
      const row = storedRowInTerms(event.row)
      if (row !== undefined) update.run(JSON.stringify({ ...event, row }), id)
    }
    after = events[events.length - 1]![0]
  }
}

/**
 * Migration 10: the descriptive fields of every hardware row, and of every hardware event the
 * log holds, rewritten to the terms of the default vocabulary they read as, in the migration's
 * one transaction; listing keys, ids and event ids are unchanged. A file that held any hardware
 * row or event is marked to be vacuumed (`PURGE_PENDING`), since replaced text stays in free
 * space until pages are rebuilt.
 */
export const hardwareTermsMigration: Migration = {
  version: 10,
  name: "hardware descriptive fields as terms",
  sql: "",
  rewrite: (client) => {
    const rows = rewriteRows(client)
    const events = rewriteEvents(client)
    if (!rows && !events) return
    dataVersion(client, "hardware_prices").bump()
    client.prepare("INSERT OR REPLACE INTO settings (name, value) VALUES (?, '1')").run(PURGE_PENDING)
  }
}

/**
 * Vacuums a file migration 10 marked, then empties its WAL (a `TRUNCATE` checkpoint): the text
 * the rewrite replaced, and any left in free space by earlier writes, is then in neither file.
 * The mark goes only once both are done, so an open that stops part-way (a crash, another
 * connection reading the WAL) leaves it for the next open. VACUUM copies the file through a
 * temporary one, on disk here (the connection keeps temporary tables in memory). A failure is
 * logged instead of refusing the open: the rows already hold only terms.
 */
export const purgeReplacedText = (client: SqliteClient): Effect.Effect<void> =>
  Effect.catchAll(
    Effect.flatMap(
      client.run("hardware_prices.purge", () => {
        if (client.prepare("SELECT 1 FROM settings WHERE name = ?").get(PURGE_PENDING) === undefined) return "none" as const
        const temp = client.db.pragma("temp_store", { simple: true }) as number
        client.db.pragma("temp_store = FILE")
        try {
          client.db.exec("VACUUM")
        } finally {
          client.db.pragma(`temp_store = ${temp}`)
        }
        const [{ busy }] = client.db.pragma("wal_checkpoint(TRUNCATE)") as [{ busy: number }]
        if (busy !== 0) return "busy" as const
        // The WAL holds this one page of settings afterwards, none of the replaced text.
        client.prepare("DELETE FROM settings WHERE name = ?").run(PURGE_PENDING)
        return "done" as const
      }),
      (outcome) => outcome === "busy"
        ? Effect.logWarning("hardware text replaced by terms may stay in the WAL while other connections read it; the next open of the file empties it")
        : Effect.void
    ),
    (e) => Effect.logWarning(`hardware text replaced by terms is not yet purged from free space (${e.failed}); the next open of the file tries again`)
  )
