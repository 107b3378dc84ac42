import { StorageUnavailable } from "@gpu-market/core"
import type { Stores } from "@gpu-market/core/storage"
import * as Effect from "effect/Effect"
import { statSync } from "node:fs"

/** The file at `filename` as device and inode, or undefined when none can be found there. */
const fileAt = (filename: string): string | undefined => {
  try {
    const stat = statSync(filename, { throwIfNoEntry: false })
    return stat === undefined ? undefined : `${stat.dev}:${stat.ino}`
  } catch {
    return undefined
  }
}

/**
 * The part of a database file's `StoreReadiness` that it is still the file opened: the file at its path is still the one the connection
 * opened. A connection keeps the file it opened, so a file deleted or replaced under the server
 * (a restore copied over it, a cleanup that removed it) is still what the server reads and
 * writes, while every process opening the path from then on (an import, `gpu-market tokens
 * create`, another server) gets the new file or an empty one: two stores under one name.
 * None for a database in memory, which no other process can open.
 */
export const fileIdentity = (filename: string): Pick<Stores, "readiness"> => {
  const opened = filename === "" || filename === ":memory:" ? undefined : fileAt(filename)
  if (opened === undefined) return {}
  return {
    readiness: Effect.suspend(() => {
      const now = fileAt(filename)
      if (now === opened) return Effect.void
      return new StorageUnavailable({
        detail: `the SQLite database file was ${now === undefined ? "deleted" : "replaced"} under the server, which still reads the one it opened; not ready`
      })
    })
  }
}
