import * as Data from "effect/Data"

/** A backend failure (I/O, connection, corrupt data). Backends wrap theirs into this once. */
export class StorageError extends Data.TaggedError("StorageError")<{
  readonly operation: string
  readonly cause: unknown
}> {}

/** An optimistic write found the state it expected changed; the caller re-reads and retries. */
export class StorageConflict extends Data.TaggedError("StorageConflict")<{
  readonly detail: string
}> {}
