import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { StorageUnavailable } from "../errors.js"
import { MICROS_PER_MS } from "../query/time.js"
import { MAX_ROWS_PER_WRITE, type StorageError } from "../storage/contract.js"

/**
 * Storage trouble as the caller sees it: `StorageUnavailable`, naming the operation that failed
 * and the fault where the backend named one (`the disk is full`), and ending with what the failure
 * means for the request, which differs by path.
 */
const unavailableBecause = (consequence: string) => (failure: StorageError): StorageUnavailable =>
  new StorageUnavailable({ detail: `storage is unavailable (${failure.failed}); ${consequence}`, ...failure.fault === undefined ? {} : { fault: failure.fault } })

/** On the read path: nothing changed, so the same request later is all there is to do. */
export const unavailable = unavailableBecause("try again shortly")

/**
 * On the write path. Every backend applies a batch whole or not at all, but a reply lost to a
 * dropped connection or a timeout leaves which one unknown; every write path is idempotent, so
 * the answer is to send the same batch again.
 */
export const unavailableWrite = unavailableBecause(`part of the batch may be stored, each chunk of up to ${MAX_ROWS_PER_WRITE} rows whole or not at all, and sending it again is safe`)

/** On an index computation: it did not finish; the next one resumes from each index's cursor. */
export const unavailableComputation = unavailableBecause("indexes were not computed")

/** The clock's time in microseconds, the unit instants are stored in. */
export const nowMicros: Effect.Effect<number> = Effect.map(Clock.currentTimeMillis, (ms) => ms * MICROS_PER_MS)
