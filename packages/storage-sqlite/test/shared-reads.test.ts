import { assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { PrincipalId } from "@gpu-market/core"
import { Effect } from "effect"
import * as fs from "node:fs"
import { makeClient, makeStores, type SqliteClient } from "../src/internal"
import { migratedFiles } from "./support/files"

/**
 * The reads of one task of the event loop share one read transaction on their connection: one
 * snapshot, one lock of the WAL index. It ends before the next task, so a read that starts later
 * sees every commit made before it; and a write through any connection of the process to the
 * file ends it first, so a read after the write sees the write.
 */

const { withFile } = migratedFiles("shared-reads")

const VALUE = "SELECT value FROM settings WHERE name = 'probe'"
const readValue = (client: SqliteClient) => client.read("probe.read", () => client.prepare(VALUE).pluck().get() as string | undefined)
const put = (db: Database.Database, value: string) =>
  db.prepare("INSERT INTO settings (name, value) VALUES ('probe', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value").run(value)

/** The next task of the event loop. */
const nextTask = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

describe("SQLite reads of one task", () => {
  it.effect("share one read transaction, so they see one snapshot; it has ended by the next task, which sees the commits made meanwhile", () =>
    withFile((client, other) => Effect.gen(function* () {
      put(other, "a")
      assert.strictEqual(yield* readValue(client), "a")
      assert.isTrue(client.db.inTransaction, "the read left the task's transaction open for the next")
      put(other, "b")
      assert.strictEqual(yield* readValue(client), "a", "the second read of the task is in the first one's snapshot")
      yield* nextTask
      assert.isFalse(client.db.inTransaction)
      assert.strictEqual(yield* readValue(client), "b")
    })))

  it.effect("a write on the same connection, or on another of this process to the file, ends them first: a read after it sees it", () =>
    withFile((client, _other, filename) => Effect.scoped(Effect.gen(function* () {
      // The same file through a link: still the same file's connections.
      const link = `${filename}.link`
      fs.symlinkSync(filename, link)
      const second = yield* makeClient({ filename: link })
      assert.strictEqual(yield* readValue(client), undefined)
      yield* second.run("probe.write", () => put(second.db, "from-second"))
      assert.strictEqual(yield* readValue(client), "from-second")
      yield* client.transaction("probe.write", () => put(client.db, "from-first"))
      assert.strictEqual(yield* readValue(client), "from-first")
      assert.strictEqual(yield* readValue(second), "from-first")
      // Through the stores, as a server reads and writes: a token put through the second
      // connection moves the version the first reads in the same task.
      const tokens = makeStores(client).tokenStore
      const before = yield* tokens.version
      yield* makeStores(second).tokenStore.put("f".repeat(64), {
        id: PrincipalId.make("p-shared-reads"), name: "p", grants: {}, indices: "all", legacy_custom_index: false, procurement: false, rate_limit_per_minute: 60
      })
      assert.notStrictEqual(yield* tokens.version, before)
    }))))

  it.effect("a connection closed with its reads' transaction open closes cleanly, and the task's end finds nothing to do", () =>
    withFile((_client, other, filename) => Effect.gen(function* () {
      put(other, "x")
      const client = yield* Effect.scoped(Effect.gen(function* () {
        const c = yield* makeClient({ filename })
        assert.strictEqual(yield* readValue(c), "x")
        return c
      }))
      assert.isFalse(client.db.open)
      yield* nextTask
      put(other, "y")
    })))
})
