import * as Data from "effect/Data"

/**
 * What a backend could tell about why storage failed, where it is something an operator must fix
 * rather than wait out: the disk (or volume) is full, or the stored file is damaged.
 */
export type StorageFault = "disk_full" | "corrupt"

/** A fault in the words a message gives it. */
export const faultText: Record<StorageFault, string> = {
  disk_full: "the disk is full",
  corrupt: "the database file is corrupt"
}

/**
 * Storage trouble (I/O, a lost connection, a lock held past the busy timeout, a full disk):
 * worth retrying, so callers answer 503. Backends wrap theirs into this once, with its `fault`
 * where they can name it.
 */
export class StorageError extends Data.TaggedError("StorageError")<{
  readonly operation: string
  readonly cause: unknown
  readonly fault?: StorageFault
}> {
  /** The operation, and the fault where it is known: `rental_prices.checkpoint: the disk is full`. */
  get failed(): string {
    return this.fault === undefined ? this.operation : `${this.operation}: ${faultText[this.fault]}`
  }

  override get message(): string {
    const why = this.fault !== undefined ? faultText[this.fault] : this.cause instanceof Error ? this.cause.message : undefined
    return why === undefined ? `${this.operation} failed` : `${this.operation} failed: ${why}`
  }
}

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
