import type Database from "better-sqlite3"
import * as fs from "node:fs"
import { realPathOf } from "./shared-reads.js"

/**
 * The header of a database file's WAL index (its `-shm` file), as a change stamp. SQLite rewrites
 * the header at every commit of any connection, in any process (its commit counter, last frame
 * and checksum change), and at every restart of the WAL (its salts change), and readers find new
 * commits through it; so while the header's bytes stay the same, nothing was committed.
 *
 * It is read with one `pread` on the descriptor SQLite itself keeps open for the `-shm` file (found
 * once in `/proc/self/fd`): a statement reading `data_version` opens and closes a read of the WAL
 * index instead, two `fcntl` calls and more, which on a processor whose system calls flush the TLB
 * cost a busy server about a fifth of a cached answer when every request read it. The descriptor is never closed here: a
 * close would drop the locks SQLite holds on the file through any descriptor of the process.
 *
 * The header is written twice, the second copy first (`walformat.html`); a read that finds the
 * copies unequal (a commit in progress), a header of another version, or no such file (not in WAL
 * mode, an in-memory database, not Linux) gives `undefined`, and the caller reads the statement.
 */

/** Bytes of one copy of the header. */
const HEADER_BYTES = 48
/** The header's `iVersion`: the format this reads. */
const WAL_INDEX_VERSION = 3007000

/** The descriptor this process holds on `shm`, if any. */
const descriptorOf = (shm: string): number | undefined => {
  try {
    for (const entry of fs.readdirSync("/proc/self/fd")) {
      try {
        if (fs.readlinkSync(`/proc/self/fd/${entry}`) === shm) return Number(entry)
      } catch {
        // A descriptor closed while listed.
      }
    }
  } catch {
    // No /proc: not Linux.
  }
  return undefined
}

/**
 * A reader of `db`'s WAL index header, or undefined when it has none this can read. `db` must stay
 * open while the reader is used: its connection keeps SQLite's descriptor of the file open.
 */
export const walIndexStamp = (db: Database.Database, filename: string): (() => string | undefined) | undefined => {
  if (String(db.pragma("journal_mode", { simple: true })).toLowerCase() !== "wal") return undefined
  let file: string | undefined
  try {
    file = realPathOf(filename)
  } catch {
    return undefined
  }
  if (file === undefined) return undefined
  const fd = descriptorOf(`${file}-shm`)
  if (fd === undefined) return undefined
  const header = Buffer.alloc(2 * HEADER_BYTES)
  return () => {
    if (!db.open) return undefined
    let read: number
    try {
      read = fs.readSync(fd, header, 0, header.length, 0)
    } catch {
      return undefined
    }
    if (read !== header.length || header.readUInt32LE(0) !== WAL_INDEX_VERSION || header[12] !== 1) return undefined
    if (header.compare(header, 0, HEADER_BYTES, HEADER_BYTES, 2 * HEADER_BYTES) !== 0) return undefined
    return header.toString("latin1", 0, HEADER_BYTES)
  }
}
