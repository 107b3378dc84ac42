import * as Context from "effect/Context"

/**
 * A reading of the storage, taken at once, that moves whenever anything stored may have changed:
 * a commit by any process on the store, or a change by this one. Two equal readings mean nothing
 * stored changed between them, so what was read before the first still holds at the second.
 * Absent where the backend cannot tell without a round trip (Redis, memory): then nothing is
 * skipped on the strength of it.
 */
export class StoreChangeStamp extends Context.Reference<StoreChangeStamp>()("Market/StoreChangeStamp", {
  defaultValue: (): (() => string) | undefined => undefined
}) {}
