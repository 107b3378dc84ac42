import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { RateLimited } from "../errors.js"
import { unavailable } from "../market/storage.js"
import { MICROS_PER_MS } from "../query/time.js"
import { RateLimitStore } from "../storage/contract.js"

/** The state of a caller's budget after one request, for the `X-RateLimit-*` headers. */
export interface RateLimitStatus {
  readonly limit: number
  readonly remaining: number
  /** Whole seconds until the window resets. */
  readonly resetSeconds: number
}

const MINUTE = 60_000_000

/** Fixed one-minute windows per key, counted in storage so every process shares them. */
export class RateLimits extends Effect.Service<RateLimits>()("Market/RateLimits", {
  effect: Effect.gen(function* () {
    const store = yield* RateLimitStore
    return {
      /**
       * Counts one request against `limit` per minute for `key`. Past the limit it fails with
       * `RateLimited`; either way the status for the response headers is returned or carried.
       */
      consume: Effect.fn("RateLimits.consume")(function* (key: string, limit: number) {
        const now = (yield* Clock.currentTimeMillis) * MICROS_PER_MS
        const hit = yield* Effect.mapError(store.hit(key, MINUTE, now), unavailable)
        const resetSeconds = Math.max(1, Math.ceil(hit.resetInMicros / 1_000_000))
        const status: RateLimitStatus = { limit, remaining: Math.max(0, limit - hit.count), resetSeconds }
        if (hit.count > limit) {
          return yield* Effect.fail(new RateLimited({
            detail: `rate limit of ${limit} requests per minute exceeded; retry in ${resetSeconds} s`,
            limit,
            retry_after_seconds: resetSeconds
          }))
        }
        return status
      })
    } as const
  })
}) {}
