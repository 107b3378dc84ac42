import { afterAll, assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { makeClient } from "../src/internal"

/**
 * Storage trouble a SQLite connection meets is named: a damaged file is a `StorageError` with the
 * `corrupt` fault, and the connection remembers the first corruption its statements met (what a
 * server's `/readyz` reports after its start-up check).
 */

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gpu-market-faults-"))
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

describe("SQLite faults", () => {
  it.effect("a read that meets a zeroed page fails with the corrupt fault, and the connection remembers it", () =>
    Effect.scoped(Effect.gen(function* () {
      const filename = path.join(dir, "damaged.db")
      const setup = new Database(filename)
      setup.exec("CREATE TABLE ballast (b BLOB)")
      setup.exec("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) INSERT INTO ballast SELECT randomblob(3000) FROM n")
      setup.close()
      const fd = fs.openSync(filename, "r+")
      fs.writeSync(fd, Buffer.alloc(64 * 4096), 0, 64 * 4096, Math.floor(fs.statSync(filename).size / 2 / 4096) * 4096)
      fs.closeSync(fd)

      const client = yield* makeClient({ filename })
      assert.isUndefined(client.corruption())
      const failed = yield* Effect.flip(client.read("ballast.sum", () => client.prepare("SELECT sum(length(b)) FROM ballast").pluck().get()))
      assert.strictEqual(failed.fault, "corrupt")
      assert.strictEqual(failed.message, "ballast.sum failed: the database file is corrupt")
      assert.match(client.corruption() ?? "", /^ballast\.sum: database disk image is malformed/)
    })))
})
