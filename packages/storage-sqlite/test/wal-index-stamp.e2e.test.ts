import { assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import { migratedFiles } from "./support/files"
import { walIndexStamp } from "../src/wal-index-stamp"

/**
 * The change stamp the change feed polls by (`changeStamp`) is read from the WAL index header: it
 * must move with every commit, whoever makes it (this connection, another of the process, another
 * process) and with every restart of the WAL, and stay put while nothing commits. Read on every
 * poll, it must also be the header's pread, not the statement it falls back to.
 */

const { withFile, fileNamed } = migratedFiles("wal-stamp")

const put = (db: Database.Database, value: string) =>
  db.prepare("INSERT INTO settings (name, value) VALUES ('probe', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value").run(value)

/** A commit by another process, through its own connection. */
const putElsewhere = (filename: string, value: string) =>
  execFileSync(process.execPath, ["-e", `
    const Database = require(${JSON.stringify(require.resolve("better-sqlite3"))})
    const db = new Database(${JSON.stringify(filename)}, { timeout: 5000 })
    db.prepare("INSERT INTO settings (name, value) VALUES ('probe', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value").run(${JSON.stringify(value)})
    db.close()
  `])

describe("the WAL index stamp", () => {
  it.effect("is the header's bytes, and the client's change stamp is it", () =>
    withFile((client, _other, filename) => Effect.sync(() => {
      const header = walIndexStamp(client.db, filename)
      assert.isDefined(header, "a WAL file on Linux has a header to read")
      const stamp = header!()
      assert.isString(stamp)
      assert.strictEqual(stamp!.length, 48)
      assert.strictEqual(client.changeStamp(), stamp)
    })))

  it.effect("moves with every commit, by this connection, another one, or another process, and stays put otherwise", () =>
    withFile((client, other, filename) => Effect.sync(() => {
      const seen = new Set<string>()
      const fresh = (why: string) => {
        const stamp = client.changeStamp()
        assert.isFalse(seen.has(stamp), `the stamp after ${why} was seen before`)
        seen.add(stamp)
        return stamp
      }
      let last = fresh("opening")
      // Random commits and reads; the stamp must be new after each commit and the same after a read.
      let seed = 7
      const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648
      for (let i = 0; i < 120; i++) {
        const pick = random()
        if (pick < 0.3) {
          put(client.db, `own-${i}`)
          last = fresh("a commit of the client's own connection")
        } else if (pick < 0.6) {
          put(other, `other-${i}`)
          last = fresh("a commit of another connection")
        } else if (pick < 0.65) {
          putElsewhere(filename, `process-${i}`)
          last = fresh("a commit of another process")
        } else if (pick < 0.7) {
          // Copies the WAL into the file and starts it over: the next commit writes frames from the start.
          other.pragma("wal_checkpoint(TRUNCATE)")
          put(other, `restart-${i}`)
          last = fresh("a restart of the WAL and a commit")
        } else {
          other.prepare("SELECT count(*) FROM settings").get()
          client.db.prepare("SELECT count(*) FROM settings").get()
          assert.strictEqual(client.changeStamp(), last, "a read moved the stamp")
        }
      }
    })))

  it("has none for a database in memory or not in WAL mode, where the statement answers", () => {
    const memory = new Database(":memory:")
    const rollback = fileNamed("rollback")
    const journal = new Database(rollback)
    try {
      assert.isUndefined(walIndexStamp(memory, ":memory:"))
      assert.isUndefined(walIndexStamp(journal, rollback))
    } finally {
      memory.close()
      journal.close()
    }
  })
})
