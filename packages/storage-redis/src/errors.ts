/**
 * Failures of this package's own, as opposed to the connection's or the server's. `client.run`
 * fails with a `StorageError` for the server's and dies with a `StorageDefect` for these.
 */

/** A plan the engine cannot answer (a sort field without indexes): a bug in whoever planned it. */
export class InvalidPlan extends Error {
  override readonly name = "InvalidPlan"
}

/** A stored value this build cannot read: bytes that do not decode, or keys that contradict each other. */
export class CorruptValue extends Error {
  override readonly name = "CorruptValue"
}

/**
 * Whether a failure is ours. ioredis reports connection trouble as plain `Error`s ("Connection is
 * closed.", "Command timed out"), beside its `RedisError`s and Node's system errors, so it is our
 * side that is named: the classes above and JavaScript's own errors (a `TypeError` is a bug).
 */
export const isOwnFailure = (e: unknown): boolean =>
  e instanceof InvalidPlan || e instanceof CorruptValue ||
  e instanceof TypeError || e instanceof RangeError || e instanceof ReferenceError || e instanceof SyntaxError
