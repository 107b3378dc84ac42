import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as Runtime from "effect/Runtime"
import { StorePipelines } from "../storage/pipelining.js"

/**
 * `effect` run in a fiber of its own as far as it goes without waiting: its exit when it ended
 * (a SQLite or in-memory store answers at once), else the fiber, which goes on by itself (a Redis
 * command was sent and its reply is awaited). The fiber starts at once (`runFork` runs it up to
 * its first wait before returning); `runSyncExit` would do the same but hand a waiting fiber back
 * inside an exception, built on every hot request over Redis.
 */
export const runAsFarAsItGoes = <A, E>(runtime: Runtime.Runtime<never>, effect: Effect.Effect<A, E>): Exit.Exit<A, E> | Fiber.RuntimeFiber<A, E> => {
  const fiber = Runtime.runFork(runtime)(effect)
  return fiber.unsafePoll() ?? fiber
}

/** The exit of what `runAsFarAsItGoes` started, at once or once its fiber ends. */
const exitOf = <A, E>(started: Exit.Exit<A, E> | Fiber.RuntimeFiber<A, E>): Effect.Effect<Exit.Exit<A, E>> =>
  Exit.isExit(started)
    ? Effect.succeed(started)
    : Effect.async<Exit.Exit<A, E>>((resume) => started.addObserver((exit) => resume(Effect.succeed(exit))))

/**
 * `a` and `b` both run and awaited. Over a store that pipelines (`StorePipelines`: Redis) each
 * starts at once in a fiber of its own, so their commands go in one round trip; `a` runs as far
 * as it goes without waiting before `b` starts. Over one that answers at once (SQLite, memory)
 * they run one after the other in the caller's fiber: a fiber of their own would cost more than
 * the calls. Both run store calls that end by themselves (bounded by the store's timeouts), so an
 * interrupted caller stops waiting without them.
 */
export const startedTogether = <A, E1, R1, B, E2, R2>(
  a: Effect.Effect<A, E1, R1>,
  b: Effect.Effect<B, E2, R2>
): Effect.Effect<[A, B], E1 | E2, R1 | R2> =>
  Effect.flatMap(StorePipelines, (pipelines) =>
    pipelines
      ? Effect.flatMap(Effect.runtime<R1 | R2>(), (runtime) => {
          const local = runtime as Runtime.Runtime<never>
          const first = runAsFarAsItGoes(local, a as Effect.Effect<A, E1>)
          const second = runAsFarAsItGoes(local, b as Effect.Effect<B, E2>)
          return Effect.flatMap(exitOf(first), (x) => Effect.flatMap(exitOf(second), (y) => Exit.zip(x, y)))
        })
      : Effect.zip(a, b))
