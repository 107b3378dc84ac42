import type { StorageError } from "@gpu-market/core"
import type * as Effect from "effect/Effect"
import { randomBytes } from "node:crypto"
import type { SqliteClient } from "./client.js"

/** A data type's version (`…Store.version`), kept in the `settings` row `data_version.<type>`. */
export interface DataVersion {
  /** Writes a fresh version; call it inside the transaction that changes the type's rows. */
  readonly bump: () => void
  /** The current version: one read of the row by primary key (empty before the type's first write). */
  readonly version: Effect.Effect<string, StorageError>
  /** `version` read as it is, for code already inside one of the connection's transactions. */
  readonly current: () => string
}

/**
 * The version of `type` over one connection. Each write stores a fresh random value rather than
 * a counter, so a value never comes back (a file restored from a backup, say) while a process
 * caches pages under it; every connection on the file, in this process or another, reads the
 * committed row, so a write anywhere retires every process's cached pages of the type.
 */
export const dataVersion = (client: SqliteClient, type: string): DataVersion => {
  const name = `data_version.${type}`
  const current = () =>
    (client.prepare("SELECT value AS version FROM settings WHERE name = ?").get(name) as { version: string } | undefined)?.version ?? ""
  return {
    bump: () => {
      client.prepare("INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value")
        .run(name, randomBytes(8).toString("hex"))
    },
    version: client.readStamped(`${type}.version`, current),
    current
  }
}
