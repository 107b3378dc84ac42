import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { RateLimitHit, RateLimitStore } from "../storage/contract.js"
import { makeMemoryRateLimitStore } from "../storage/memory-rate-limits.js"

/**
 * `process` rate limits counted in another thread or process: a worker pool's main thread counts
 * for its worker threads, a `serve --workers N` primary for its workers, so a caller gets exactly
 * its limit whichever of them answers it. A hit is one message to where the counters are
 * (`CountHit`) and its count one message back (`HitCounted`), both Schema-encoded plain data, so
 * they cross `postMessage` and the cluster's JSON channel alike and are decoded on arrival.
 */

/** One hit's count, as `RateLimitStore.hit` answers it. */
const Count = Schema.Struct({ count: Schema.Number, resetInMicros: Schema.Number })

/** A rate-limit hit to count: `RateLimitStore.hit(key, windowMicros, now)`, numbered by its sender. */
export class CountHit extends Schema.TaggedRequest<CountHit>()("gpu-market/CountHit", {
  failure: Schema.Never,
  success: Count,
  payload: { hit: Schema.Number, key: Schema.String, windowMicros: Schema.Number, now: Schema.Number }
}) {}

/** The count of the sender's hit numbered `hit`. */
export class HitCounted extends Schema.TaggedClass<HitCounted>()("gpu-market/HitCounted", {
  hit: Schema.Number,
  ...Count.fields
}) {}

const encodeHit = Schema.encodeSync(CountHit)
const decodeHit = Schema.decodeUnknownOption(CountHit)
const encodeCounted = Schema.encodeSync(HitCounted)
const decodeCounted = Schema.decodeUnknownOption(HitCounted)

/** Counters whose counting happens where `send` delivers, and how their answers come back. */
export interface RemoteCounters {
  /** The counters: each hit sent, and resumed when its count is heard. */
  readonly counters: RateLimitStore["Type"]
  /** Hands over a message from where the counters are: true when it was a count (and is settled), false otherwise. */
  readonly hear: (message: unknown) => boolean
}

/**
 * Counters that count by asking: each hit is sent as a `CountHit` with `send`, and answered when
 * `hear` is given the `HitCounted` with its number (from the channel's message listener).
 */
export const remoteCounters = (send: (message: typeof CountHit.Encoded) => void): RemoteCounters => {
  const waiting = new Map<number, (count: RateLimitHit) => void>()
  let hits = 0
  return {
    counters: {
      hit: (key, windowMicros, now) => Effect.async<RateLimitHit>((resume) => {
        const hit = hits++
        waiting.set(hit, (count) => resume(Effect.succeed(count)))
        send(encodeHit(new CountHit({ hit, key, windowMicros, now })))
      })
    },
    hear: (message) => Option.match(decodeCounted(message), {
      onNone: () => false,
      onSome: ({ hit, count, resetInMicros }) => {
        waiting.get(hit)?.({ count, resetInMicros })
        waiting.delete(hit)
        return true
      }
    })
  }
}

/**
 * Where the counters are: one set of windows (`makeMemoryRateLimitStore`) for every sender. The
 * function it returns counts a `CountHit` and answers its `HitCounted` with `answer` (true), or
 * leaves any other message alone (false).
 */
export const counterHost = () => {
  const counters = makeMemoryRateLimitStore()
  return (message: unknown, answer: (message: typeof HitCounted.Encoded) => void): boolean =>
    Option.match(decodeHit(message), {
      onNone: () => false,
      onSome: ({ hit, key, windowMicros, now }) => {
        // Memory counters never fail and count at once.
        const count = Effect.runSync(counters.hit(key, windowMicros, now))
        answer(encodeCounted(new HitCounted({ hit, ...count })))
        return true
      }
    })
}
