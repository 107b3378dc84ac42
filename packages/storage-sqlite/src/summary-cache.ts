import type { SqliteClient } from "./client.js"

/** A summary of a table kept on write, read through `read`, cached in the connection. */
export interface SummaryCache<A> {
  /** The summary, read again only when something was written since it was last read. */
  readonly get: () => A
  /** Tells the cache this connection wrote; call it inside the writing transaction. */
  readonly written: () => void
}

/**
 * Summaries behind metadata are read on many requests and change only when rows are written,
 * so they are cached until this connection writes or another connection commits
 * (`PRAGMA data_version` moves only for the latter). A read runs in one read transaction, so
 * the version and every table it reads come from one snapshot.
 */
export const summaryCache = <A>(client: SqliteClient, read: () => A): SummaryCache<A> => {
  let localWrites = 0
  let cached: { readonly dataVersion: number; readonly localWrites: number; readonly value: A } | undefined
  const get = client.db.transaction((): A => {
    const dataVersion = client.prepare("PRAGMA data_version").pluck().get() as number
    if (cached !== undefined && cached.dataVersion === dataVersion && cached.localWrites === localWrites) return cached.value
    const value = read()
    cached = { dataVersion, localWrites, value }
    return value
  })
  return {
    get: () => get(),
    written: () => {
      localWrites++
    }
  }
}
