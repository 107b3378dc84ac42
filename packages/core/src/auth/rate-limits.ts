import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import { RateLimited, type StorageUnavailable } from "../errors.js"
import { unavailable } from "../market/storage.js"
import { countNow, rateLimitRejections } from "../metrics.js"
import { MICROS_PER_MS } from "../query/time.js"
import { RateLimitStore, type Storage } from "../storage/contract.js"
import { makeMemoryRateLimitStore } from "../storage/memory-rate-limits.js"

/** The state of a caller's budget after one request, for the `X-RateLimit-*` headers. */
export interface RateLimitStatus {
  readonly limit: number
  readonly remaining: number
  /** Whole seconds until the window resets. */
  readonly resetSeconds: number
}

const MINUTE = 60_000_000

/**
 * Where rate limits are counted. `shared`: in the storage, so every process on it counts into one
 * window (a storage write, or one Redis round trip, per request). `process`: in this process's
 * memory, exact for this process alone and with no storage I/O: for a store that one process serves.
 */
export const RATE_LIMIT_MODES = ["process", "shared"] as const
export type RateLimitMode = (typeof RATE_LIMIT_MODES)[number]

/**
 * `storage` with its rate-limit counters kept as `mode` says: the storage's own for `shared`,
 * replaced for `process` by `counters` (default this process's, `makeMemoryRateLimitStore`, the
 * same windows). `counters` is where one counter serves several processes or threads: a worker
 * pool's main thread, a `serve --workers` primary.
 */
export const withRateLimits = <E, R>(
  storage: Layer.Layer<Storage, E, R>,
  mode: RateLimitMode,
  counters: Layer.Layer<RateLimitStore> = Layer.sync(RateLimitStore, makeMemoryRateLimitStore)
): Layer.Layer<Storage, E, R> =>
  mode === "shared" ? storage : Layer.merge(storage, counters)

/** One request counted in its window, before it is judged against a limit. */
export interface RateLimitCount {
  /** Requests counted in the window, this one included. */
  readonly count: number
  /** Whole seconds until the window resets. */
  readonly resetSeconds: number
}

const countOf = (hit: { readonly count: number; readonly resetInMicros: number }): RateLimitCount => ({
  count: hit.count,
  resetSeconds: Math.max(1, Math.ceil(hit.resetInMicros / 1_000_000))
})

/** Fixed one-minute windows per key, counted in the `RateLimitStore` (see `withRateLimits`). */
export class RateLimits extends Effect.Service<RateLimits>()("Market/RateLimits", {
  effect: Effect.gen(function* () {
    const store = yield* RateLimitStore

    // Every request counts, so this is not a span: a span costs more than a count in memory.
    const count = (key: string): Effect.Effect<RateLimitCount, StorageUnavailable> =>
      Effect.flatMap(Clock.currentTimeMillis, (millis) =>
        Effect.map(Effect.mapError(store.hit(key, MINUTE, millis * MICROS_PER_MS), unavailable), countOf))

    // An Either, which is also an Effect: `admit` judges a count it made beside the authentication.
    const judge = ({ count, resetSeconds }: RateLimitCount, limit: number): Either.Either<RateLimitStatus, RateLimited> => {
      if (count <= limit) return Either.right({ limit, remaining: limit - count, resetSeconds })
      countNow(rateLimitRejections, {})
      return Either.left(new RateLimited({
        detail: `rate limit of ${limit} requests per minute exceeded; retry in ${resetSeconds} s`,
        limit,
        retry_after_seconds: resetSeconds
      }))
    }

    return {
      /** Counts one request for `key`, past any limit too; `judge` then says what it is under a limit. */
      count,
      /** The status of a counted request under `limit` per minute, or `RateLimited` past it. */
      judge,
      /**
       * Counts one request against `limit` per minute for `key`. Past the limit it fails with
       * `RateLimited`; either way the status for the response headers is returned or carried.
       */
      consume: (key: string, limit: number) => Effect.flatMap(count(key), (counted) => judge(counted, limit))
    } as const
  })
}) {}
