import * as Effect from "effect/Effect"

/**
 * Turns of the event loop for the change feed's fan-out. Each slice a subscriber delivers runs
 * in a turn (`inTurn`), one slice at a time, first come first served; a turn runs slices for
 * `TURN_BUDGET_MS` at most, then the event loop goes on to its I/O (requests) and timers before
 * the next turn begins. Effect's own yields run as microtasks, which let no request in: a burst
 * to a thousand subscribers would otherwise hold the loop until every one had taken its slice.
 */

/** How long one turn of the event loop runs subscribers' slices. */
export const TURN_BUDGET_MS = 10

/** Slices waiting for a turn, first come first served. */
const waiting: Array<() => void> = []
let running = false
let turnEnds = 0
let scheduled = false

/** Starts the next waiting slice if none runs and the turn has time left; else a turn once the event loop has turned. */
const next = () => {
  if (running || waiting.length === 0) return
  if (performance.now() < turnEnds) {
    running = true
    waiting.shift()!()
  } else if (!scheduled) {
    scheduled = true
    setImmediate(() => {
      scheduled = false
      turnEnds = performance.now() + TURN_BUDGET_MS
      next()
    })
  }
}

const begin = Effect.async<void>((resume) => {
  waiting.push(() => resume(Effect.void))
  next()
})

const end = Effect.sync(() => {
  running = false
  next()
})

/**
 * Runs `slice` in a turn of the fan-out: after the slices before it, in a turn with time left.
 * Waiting for the turn is not interrupted (it comes within a few turns), so every slice that
 * began also ends and hands the turn on.
 */
export const inTurn = <A, E, R>(slice: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.uninterruptibleMask((restore) => Effect.zipRight(begin, Effect.ensuring(restore(slice), end)))
