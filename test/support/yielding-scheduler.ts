import * as Scheduler from "effect/Scheduler"

/**
 * Setup file of every test file (vitest.config.ts): Effect yields to the event loop each time a
 * fiber yields, rather than after 2048 yields run as microtasks.
 *
 * Why: a test worker answers vitest's main process over an RPC whose calls time out after 60 s
 * (`Timeout calling "onTaskUpdate"`, a fixed timeout of vitest 3.2 no option changes). The worker
 * reads the reply only when its event loop turns, and an Effect computation on better-sqlite3 never
 * waits for I/O: seeding the whole demo market in a test kept one worker's loop from turning for
 * 32 s on an idle machine, and past 60 s when two workers and the servers they start share two
 * cores. Node runs expired timers before it reads pending messages, so the reply that had arrived
 * lost to the timeout, and vitest exited 1 though every test passed. With this setting the longest
 * stretch without a turn is one call that does not return (the demo's hardware prices, one SQLite
 * transaction: 8 s on an idle machine), not a whole seed.
 */
const scheduler = Scheduler.defaultScheduler
if (!(scheduler instanceof Scheduler.MixedScheduler)) throw new Error("Effect's default scheduler is no MixedScheduler any more: revisit test/support/yielding-scheduler.ts")
;(scheduler as { maxNextTickBeforeTimer: number }).maxNextTickBeforeTimer = 1
