import * as Context from "effect/Context"
import type { DataType } from "../auth/principal.js"

/** One rate-limit hit counted, with the store's stamp for a data type read at the same instant. */
export interface StampedHit {
  /** Hits in the window, this one included (as `RateLimitStore.hit`). */
  readonly count: number
  readonly resetInMicros: number
  /** `StampedCounts.stamp` of the type, read atomically with the count. */
  readonly stamp: string
}

/**
 * What a store that cannot take a `StoreChangeStamp` at once (Redis) offers a replayed request
 * instead: its rate-limit hit and a stamp of the data type's rows and of the tokens, in one round
 * trip shared by every request started in the same turn of the event loop. Plain promises, no
 * fibers: this is the whole storage work of a hot request.
 *
 * A stamp moves whenever a token is put or revoked, or the type's rows change, and never comes
 * back to an earlier value; two equal stamps mean neither changed between the two readings. A
 * store that cannot promise that for a reading (a version key missing) gives a stamp no other
 * reading equals. The hits count into the same windows as the storage's `RateLimitStore`, so a
 * request counted here and one counted there share a budget. Failures of the storage reject with
 * a `StorageError`.
 */
export interface StampedCounts {
  /** Whether `type`'s stamp is kept (a type read from a lagging replica is not). */
  readonly covers: (type: DataType) => boolean
  /**
   * The stamp of `type` now. Sent on the connection before anything the caller starts after
   * it, so it was read before what they read.
   */
  readonly stamp: (type: DataType) => Promise<string>
  /** Counts one hit of `key` in the window of `windowMicros` around `now`, and reads the stamp of `type`. */
  readonly hit: (key: string, windowMicros: number, now: number, type: DataType) => Promise<StampedHit>
}

/** The storage's `StampedCounts`, where it has them; absent for stores that answer at once. */
export class StoreStampedCounts extends Context.Reference<StoreStampedCounts>()("Market/StoreStampedCounts", {
  defaultValue: (): StampedCounts | undefined => undefined
}) {}
