import type { SqliteClient } from "./client.js"
import type { DataVersion } from "./data-version.js"

/**
 * Summaries behind metadata are read on many requests and change only when the type's rows are
 * written, so one is kept under the type's data version, which every such write changes in its
 * transaction, by any connection in any process. Writes of other types, token and rate-limit
 * writes included, leave it be. A read runs in one read transaction, so the version and every
 * table it reads come from one snapshot.
 */
export const summaryCache = <A>(client: SqliteClient, version: DataVersion, read: () => A): { readonly get: () => A } => {
  let cached: { readonly version: string; readonly value: A } | undefined
  const get = client.db.transaction((): A => {
    const now = version.current()
    if (cached !== undefined && cached.version === now) return cached.value
    const value = read()
    cached = { version: now, value }
    return value
  })
  return { get: () => get() }
}
