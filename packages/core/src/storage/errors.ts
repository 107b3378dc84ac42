import * as Data from "effect/Data"

/**
 * Storage trouble (I/O, a lost connection, a lock held past the busy timeout, a full disk):
 * worth retrying, so callers answer 503. Backends wrap theirs into this once.
 */
export class StorageError extends Data.TaggedError("StorageError")<{
  readonly operation: string
  readonly cause: unknown
}> {}

/**
 * A backend's own failure, not storage's: a plan it will not run, a stored record it cannot
 * read back, a bug. Backends die with it rather than fail, beside where they make `StorageError`:
 * no retry mends it, so it reaches the caller as a 500, logged once where the request ends.
 */
export class StorageDefect extends Data.TaggedError("StorageDefect")<{
  readonly operation: string
  readonly cause: unknown
}> {
  override get message(): string {
    return `${this.operation} failed in the backend's own code or data`
  }
}
