import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { StorageUnavailable } from "../errors.js"
import { MICROS_PER_MS } from "../query/time.js"
import type { StorageError } from "../storage/contract.js"

/** A storage failure on the read path, as the caller sees it: worth retrying. */
export const unavailable = (e: StorageError): StorageUnavailable =>
  new StorageUnavailable({ detail: `storage is unavailable (${e.operation}); try again shortly` })

/** The clock's time in microseconds, the unit instants are stored in. */
export const nowMicros: Effect.Effect<number> = Effect.map(Clock.currentTimeMillis, (ms) => ms * MICROS_PER_MS)
