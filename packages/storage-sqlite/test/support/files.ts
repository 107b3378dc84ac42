import { afterAll } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { makeClient, migrate, type SqliteClient } from "../../src/internal"

/**
 * Migrated SQLite files in a temporary folder of the test file's own, removed after its tests:
 * `withFile` gives each body a new file, a client on it, and a plain connection of its own (as
 * another process would write).
 */
export const migratedFiles = (label: string) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `gpu-market-${label}-`))
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))
  let files = 0
  const withFile = <A, E>(body: (client: SqliteClient, other: Database.Database, filename: string) => Effect.Effect<A, E>) =>
    Effect.scoped(Effect.gen(function* () {
      const filename = path.join(dir, `db-${files++}.db`)
      const client = yield* makeClient({ filename })
      yield* migrate(client)
      const other = new Database(filename, { timeout: 5000 })
      yield* Effect.addFinalizer(() => Effect.sync(() => other.close()))
      return yield* body(client, other, filename)
    }))
  /** A path for a file of the test's own in the folder. */
  const fileNamed = (name: string) => path.join(dir, `${name}-${files++}.db`)
  return { withFile, fileNamed }
}
