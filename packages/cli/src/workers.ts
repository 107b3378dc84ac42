import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import cluster, { type Worker } from "node:cluster"
import { availableParallelism } from "node:os"
import { countForWorker } from "./cluster-rate-limits.js"
import { UsageError } from "./output.js"
import { holdSignals } from "./serve.js"

/**
 * `serve --workers N` (`$GPU_MARKET_WORKERS` for `npm start`): N server processes on one port,
 * through node:cluster. The primary serves nothing: it starts the workers (the first alone, so
 * that one process migrates the store and seeds the demo market, then the rest), replaces a
 * worker that dies, gives up when workers keep dying as they start, and on SIGTERM or SIGINT has
 * every worker drain as a single server does, then exits. Each worker runs the command line the
 * primary was given, so it serves exactly what one process would. With `process` rate limits the
 * primary holds the counters for every worker, as a worker pool's main thread does for its
 * threads: a hit is a message there and back, and no request writes to the storage.
 */

/** Workers that die within this long of their start count as failing to start. */
const QUICK_EXIT_MS = 10_000

/** This many quick deaths in a row and the primary gives up, rather than start workers forever. */
const QUICK_EXITS_TO_GIVE_UP = 3

/** The wait before starting the replacement of a worker that died quickly: 250 ms, then twice as long each time. */
const backoff = (quickExits: number) => Duration.millis(quickExits === 0 ? 0 : 250 * 2 ** (quickExits - 1))

/** The server's shutdown timeout when none is given (`--shutdown-timeout`'s documented default). */
const SERVER_SHUTDOWN_TIMEOUT_MS = 10_000

/** How long the primary waits, past the workers' own shutdown timeout, for them to close their storage and exit. */
const EXIT_GRACE_MS = 5_000

/**
 * The number of workers `text` asks for (`auto`: the machine's cores), or a usage error naming
 * `source` (`--workers`, `GPU_MARKET_WORKERS`).
 */
export const workersFrom = (text: string, source: string): Effect.Effect<number, UsageError> => {
  const trimmed = text.trim().toLowerCase()
  if (trimmed === "auto") return Effect.succeed(availableParallelism())
  return /^\d+$/.test(trimmed) && Number(trimmed) >= 1 && Number(trimmed) <= 1024
    ? Effect.succeed(Number(trimmed))
    : Effect.fail(new UsageError({ message: `${source} is ${JSON.stringify(text)}; expected a number of server processes from 1 to 1024, or auto (this machine's ${availableParallelism()} cores)` }))
}

/** `--workers` if given, else `$GPU_MARKET_WORKERS`, else 1. */
export const workersOf = (given: Option.Option<string>): Effect.Effect<number, UsageError> =>
  Option.match(given, {
    onSome: (text) => workersFrom(text, "--workers"),
    onNone: () => {
      const text = process.env.GPU_MARKET_WORKERS ?? ""
      return text.trim() === "" ? Effect.succeed(1) : workersFrom(text, "GPU_MARKET_WORKERS")
    }
  })

/** Whether this process prints the banner: a single server, or the first worker (not its replacements). */
export const printsBanner = (): boolean => cluster.isPrimary || cluster.worker?.id === 1

/** What the primary hears of its workers. */
type Event =
  | { readonly _tag: "listening"; readonly worker: Worker }
  | { readonly _tag: "exit"; readonly worker: Worker; readonly code: number | null; readonly signal: string | null; readonly livedMs: number }

/** How a worker ended, in words. */
const ending = (event: Event & { readonly _tag: "exit" }) => event.signal === null ? `exit code ${event.code}` : `signal ${event.signal}`

/** What names a worker in the primary's log lines. */
const named = (worker: Worker) => ({ worker: worker.id, worker_pid: worker.process.pid })

/**
 * The primary: `count` workers kept running until interrupted, then drained. Fails when workers
 * die `QUICK_EXITS_TO_GIVE_UP` times in a row within `QUICK_EXIT_MS` of starting.
 */
const supervise = (count: number, shutdownTimeoutMs: number) => Effect.gen(function* () {
  const events = yield* Queue.unbounded<Event>()
  /** Each running worker, and a promise of its exit. */
  const live = new Map<Worker, Promise<void>>()
  const countHits = countForWorker()
  const fork = Effect.sync(() => {
    const born = Date.now()
    const worker = cluster.fork()
    countHits(worker)
    live.set(worker, new Promise<void>((resolve) => worker.once("exit", (code, signal) => {
      live.delete(worker)
      Queue.unsafeOffer(events, { _tag: "exit", worker, code, signal, livedMs: Date.now() - born })
      resolve()
    })))
    worker.once("listening", () => Queue.unsafeOffer(events, { _tag: "listening", worker }))
  })
  // Each worker drains as a single server does; one that outlives its timeout by the grace is killed.
  yield* Effect.addFinalizer(() => Effect.gen(function* () {
    yield* Effect.logInfo("stopping the workers").pipe(Effect.annotateLogs({ workers: live.size }))
    const exited = Promise.all(live.values())
    for (const worker of live.keys()) worker.process.kill("SIGTERM")
    const all = yield* Effect.promise(() => Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), shutdownTimeoutMs + EXIT_GRACE_MS).unref())]))
    if (!all) {
      yield* Effect.logWarning("workers still running past the shutdown timeout: killed").pipe(Effect.annotateLogs({ workers: live.size }))
      for (const worker of live.keys()) worker.process.kill("SIGKILL")
      yield* Effect.promise(() => exited)
    }
    yield* Effect.logInfo("workers stopped")
  }))
  yield* Effect.logInfo("starting the workers").pipe(Effect.annotateLogs({ workers: count }))
  // The first worker alone, until it listens: it runs the migrations and seeds the demo market once.
  let waiting = count - 1
  let quickExits = 0
  yield* fork
  while (true) {
    const event = yield* Queue.take(events)
    if (event._tag === "listening") {
      yield* Effect.logInfo("worker listening").pipe(Effect.annotateLogs(named(event.worker)))
      for (; waiting > 0; waiting--) yield* fork
      continue
    }
    quickExits = event.livedMs < QUICK_EXIT_MS ? quickExits + 1 : 0
    if (quickExits >= QUICK_EXITS_TO_GIVE_UP) {
      return yield* Effect.fail(new Error(
        `workers died ${quickExits} times in a row within ${QUICK_EXIT_MS / 1000} s of starting (the last: worker ${event.worker.id}, ${ending(event)}); giving up: their errors are above`
      ))
    }
    yield* Effect.logWarning(`worker died: replacing it`).pipe(Effect.annotateLogs({ ...named(event.worker), ended: ending(event), lived_ms: event.livedMs }))
    yield* Effect.sleep(backoff(quickExits))
    yield* fork
  }
}).pipe(Effect.annotateLogs({ role: "primary", pid: process.pid }), Effect.scoped)

/**
 * `served` on `workers` processes: in one process it is `served` itself; otherwise this process
 * becomes the primary and each worker (which runs the same command line) runs `served`, its log
 * lines naming the worker (`worker`, `pid`).
 */
export const serveOnWorkers = <A, E, R>(workers: number, shutdownTimeoutMs: number | undefined, served: Effect.Effect<A, E, R>): Effect.Effect<A | void, E | Error, R> => {
  if (cluster.isWorker) {
    // The channel to the primary would keep a worker whose server failed to start alive, and the primary waiting on it.
    return Effect.annotateLogs(served, { worker: cluster.worker!.id, pid: process.pid }).pipe(Effect.ensuring(Effect.sync(() => cluster.worker!.disconnect())))
  }
  if (workers === 1) return served
  return Effect.zipRight(holdSignals, supervise(workers, shutdownTimeoutMs ?? SERVER_SHUTDOWN_TIMEOUT_MS)).pipe(Effect.scoped)
}
