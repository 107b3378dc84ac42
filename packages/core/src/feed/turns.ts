import * as Effect from "effect/Effect"

/**
 * Turns of the event loop for the change feed's fan-out: every subscriber of the process waits
 * for a turn before each slice it delivers, and a turn runs slices for `TURN_BUDGET_MS` at most
 * before the event loop goes on to its I/O (requests) and timers. Effect's own yields run as
 * microtasks, which let no request in: a burst to a thousand subscribers would otherwise hold
 * the loop until every one had taken its slice. Those a turn had no time for go first in the
 * next, so every subscriber moves on.
 */

/** How long one turn of the event loop runs subscribers' slices. */
export const TURN_BUDGET_MS = 10

let waiting: Array<() => void> = []
let passedOver: Array<() => void> = []
let scheduled = false
let turnStarted = 0

const startTurn = () => {
  scheduled = false
  turnStarted = performance.now()
  const next = passedOver.concat(waiting)
  passedOver = []
  waiting = []
  for (const resume of next) resume()
}

/** Waits in `queue` for the next turn. */
const enqueue = (queue: () => Array<() => void>): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    const go = () => resume(Effect.void)
    queue().push(go)
    if (!scheduled) {
      scheduled = true
      setImmediate(startTurn)
    }
    return Effect.sync(() => {
      for (const q of [waiting, passedOver]) {
        const at = q.indexOf(go)
        if (at >= 0) q.splice(at, 1)
      }
    })
  })

/** Waits until the event loop has turned and this turn still has time for a slice. */
export const turn: Effect.Effect<void> = Effect.gen(function* () {
  yield* enqueue(() => waiting)
  while (performance.now() - turnStarted >= TURN_BUDGET_MS) yield* enqueue(() => passedOver)
})
