import { RateLimitStore } from "@gpu-market/core/storage"
import { script } from "./client.js"
import type { RedisClient } from "./client.js"
import type { Keys } from "./keys.js"

/**
 * INCR and, on the first hit of a window, PEXPIRE, as one script: a counter never lives on
 * without its expiry, and every process sharing the server counts into the same key.
 */
const HIT = script("gmRateLimitHit", `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n
`)

/** Where one hit of `key` at `now` is counted: the window's counter, its expiry, and the time left in it. */
export interface RateWindow {
  readonly counter: string
  readonly expiryMs: number
  readonly resetInMicros: number
}

/**
 * Fixed-window counters, one key per client key and window: `<prefix>:{rl:<key>}:<window start>`.
 * The window comes from the caller's clock (`now`), never Redis TIME, so tests can move time.
 * The expiry only collects old windows (it runs on Redis time), so it is two windows long: a
 * caller clock a little off Redis time never loses a live count.
 */
export const rateWindow = (keys: Keys, key: string, windowMicros: number, now: number): RateWindow => {
  const start = Math.floor(now / windowMicros) * windowMicros
  return {
    counter: keys.key(`rl:${key}`, String(start)),
    expiryMs: Math.max(1000, Math.ceil((2 * windowMicros) / 1000)),
    resetInMicros: start + windowMicros - now
  }
}

/** Rate limits in `rateWindow`'s counters, one script per hit. */
export const makeRateLimitStore = (client: RedisClient): RateLimitStore["Type"] => ({
  hit: (key, windowMicros, now) =>
    client.run("rate_limits.hit", async () => {
      const window = rateWindow(client.keys, key, windowMicros, now)
      const count = Number(await client.evalScript(HIT, [window.counter], [String(window.expiryMs)]))
      return { count, resetInMicros: window.resetInMicros }
    })
})
