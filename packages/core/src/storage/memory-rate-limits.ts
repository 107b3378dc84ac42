import * as Effect from "effect/Effect"
import type { RateLimitStore } from "./contract.js"

/** The map size below which ended windows are left alone: sweeping a small map buys nothing. */
const SWEEP_FLOOR = 1024

/**
 * Fixed-window counters in this process's memory: the windows and counts a backend's store gives
 * (the conformance suite holds both to one case), with no storage I/O, and exact for this process
 * alone. A key's window is replaced when its next one starts; windows that ended are swept once the
 * map has doubled since the last sweep, so memory follows the keys of the last window, and the
 * sweep's cost spreads over the hits that grew the map.
 */
export const makeMemoryRateLimitStore = (): RateLimitStore["Type"] => {
  const windows = new Map<string, { readonly end: number; count: number }>()
  let sweepAt = SWEEP_FLOOR
  return {
    hit: (key, windowMicros, now) => Effect.sync(() => {
      const start = Math.floor(now / windowMicros) * windowMicros
      const end = start + windowMicros
      let w = windows.get(key)
      if (w === undefined || w.end !== end) windows.set(key, w = { end, count: 0 })
      w.count++
      if (windows.size >= sweepAt) {
        for (const [k, v] of windows) if (v.end <= now) windows.delete(k)
        sweepAt = Math.max(SWEEP_FLOOR, 2 * windows.size)
      }
      return { count: w.count, resetInMicros: end - now }
    })
  }
}
