import type { Market, MarketSettingsInput, PortableMarketStorage } from "@gpu-market/core"
import { decodeMarketSettings, MarketProblemError } from "@gpu-market/core"
import { buildMarket, counterHost, toProblemError, type WriteArgs, type WriteName, type WriteResult, writeResults } from "@gpu-market/core/adapters"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type { ParseError } from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { Worker } from "node:worker_threads"
import { type CallFailure, Close, Read, WorkerConfig, WorkerReply, WorkerRequest, Write } from "./contract.js"

/**
 * The market in `worker_threads`: the same calls as `createMarket`, answered by a pool of workers.
 * Each worker opens the storage itself, so the storage must be portable: the backend's
 * `sqlite(file)` or `redis(url)` says which module and options rebuild it in a thread.
 */

/**
 * Options of `createWorkerMarket`: `createMarket`'s settings (`MarketSettings`, decoded before any
 * thread starts: one that cannot work rejects with the `ParseError` naming it), with these
 * differences: `rateLimits: "process"` counts in this thread for the whole pool (exact for this
 * process, with no storage write per call), and every thread keeps its own page cache of
 * `pageCacheMb` and its own storage breaker.
 */
export interface WorkerMarketOptions extends MarketSettingsInput {
  /** A portable storage: `sqlite("market.db")`, `redis(url)`, or any `portableStorage(layer, { module, options })`. */
  readonly storage: PortableMarketStorage
  /** Worker threads in the pool (default 1); calls are spread over them. */
  readonly poolSize?: number
}

/** A market answered by worker threads. */
export type WorkerMarket = Market & {
  /** The thread ids of the pool's workers. */
  readonly threadIds: () => ReadonlyArray<number>
}

// Compiled JavaScript beside this module: a worker needs no loader, wherever the app runs from.
const entry = new URL("./entry.js", import.meta.url)
// How long a worker may take to release its storage on close() before it is terminated.
const CLOSE_GRACE_MILLIS = 5_000

const encodeRequest = Schema.encodeSync(WorkerRequest)
const encodeConfig = Schema.encodeSync(WorkerConfig)
const decodeReply = Schema.decodeUnknownEither(WorkerReply)
const defect = (message: string) => toProblemError(Cause.die(new Error(message)))

/** A call waiting for its answer: the request, whose schemas decode the answer, and its promise. */
type Pending = { readonly request: Read | Write; readonly resolve: (value: unknown) => void; readonly reject: (error: unknown) => void }

/** A call's exit as its worker sent it, decoded by its request's schemas: a read's result parsed from its JSON text. */
const decodeExit = (request: Read | Write, exit: unknown): Effect.Effect<Exit.Exit<unknown, typeof CallFailure.Type>, ParseError> =>
  request._tag === "Read"
    ? Effect.map(Schema.deserializeExit(request, exit), Exit.map((json) => JSON.parse(json)))
    : Schema.deserializeExit(request, exit)

/** A write's result as its worker encoded it, decoded by its write's schema: what `createMarket` resolves with. */
const decodeResult = <N extends WriteName>(name: N) => (encoded: unknown): WriteResult<N> =>
  Either.getOrThrowWith(Schema.decodeUnknownEither(writeResults[name])(encoded), (error) =>
    defect(`a market worker's ${name} result did not decode: ${error.message}`))

/** What a call settles with: its result, or the problem it failed with. */
const settleWith = (pending: Pending, exit: Exit.Exit<unknown, typeof CallFailure.Type>) =>
  Exit.match(exit, {
    onSuccess: (result) => pending.resolve(result),
    onFailure: (cause) => Option.match(Cause.failureOption(cause), {
      onNone: () => pending.reject(defect(Cause.pretty(cause))),
      onSome: ({ problem, cause }) => pending.reject(new MarketProblemError(problem, {
        cause: cause._tag === "Defect" ? new Error(cause.pretty) : cause
      }))
    })
  })

/** One worker thread with the calls it has not answered yet. */
class PoolWorker {
  readonly pending = new Map<number, Pending>()
  readonly worker: Worker
  /** Resolves once the worker is up; rejects with why it could not start. */
  readonly ready: Promise<void>
  /** Resolves once the thread has ended, whenever that was. */
  readonly exited: Promise<void>
  closing = false

  constructor(config: WorkerConfig, counts: ReturnType<typeof counterHost>, onLost: (lost: PoolWorker) => void) {
    this.worker = new Worker(entry, { workerData: encodeConfig(config) })
    this.exited = new Promise((resolve) => this.worker.once("exit", () => resolve()))
    this.ready = new Promise((resolve, reject) => {
      this.worker.on("message", (message: unknown) => {
        if (counts(message, (counted) => this.worker.postMessage(counted))) return
        const decoded = decodeReply(message)
        if (Either.isLeft(decoded)) {
          // The worker encodes every message with the same schemas: one that does not decode is a bug of
          // that thread, which is ended (and replaced, its calls refused) rather than trusted further.
          reject(new Error(`a market worker sent a message the pool cannot read: ${decoded.left.message}`))
          return void this.worker.terminate()
        }
        const reply = decoded.right
        switch (reply._tag) {
          case "Ready":
            return resolve()
          case "StartFailed":
            return reject(new Error(`a market worker could not open its storage: ${reply.message}`))
          case "Answer": {
            const pending = this.settle(reply.id)
            if (pending === undefined) return
            return Either.match(Effect.runSync(Effect.either(decodeExit(pending.request, reply.exit))), {
              onLeft: (error) => pending.reject(defect(`a market worker's answer did not decode: ${error.message}`)),
              onRight: (exit) => settleWith(pending, exit)
            })
          }
        }
      })
      this.worker.on("error", (error) => reject(error))
      this.worker.on("exit", (code) => {
        reject(new Error(`a market worker exited with code ${code} before it was up`))
        for (const settle of this.pending.values()) settle.reject(defect(`the market worker answering this call exited (code ${code})`))
        this.pending.clear()
        if (!this.closing) onLost(this)
      })
    })
  }

  private settle(id: number): Pending | undefined {
    const settle = this.pending.get(id)
    this.pending.delete(id)
    return settle
  }

  call(request: Read | Write): Promise<unknown> {
    const { id } = request
    return new Promise((resolve, reject) => {
      this.pending.set(id, { request, resolve, reject })
      try {
        this.worker.postMessage(encodeRequest(request))
      } catch (error) {
        // Arguments a thread cannot receive (a function, a symbol) are the caller's bug, said plainly.
        this.pending.delete(id)
        reject(defect(`the call's arguments cannot be sent to a worker thread: ${error instanceof Error ? error.message : String(error)}`))
      }
    })
  }

  /** Asks the worker to release its storage and end; terminates it if it takes too long. */
  async close(): Promise<void> {
    this.closing = true
    // A thread that already ended (it could not start) has nothing to release.
    this.worker.postMessage(encodeRequest(new Close()))
    const timer = setTimeout(() => void this.worker.terminate(), CLOSE_GRACE_MILLIS)
    await this.exited
    clearTimeout(timer)
  }
}

/**
 * Starts a pool of worker threads, each running the market over `storage`, and resolves once
 * every worker is up (or rejects, with no thread left running, if one cannot open the storage).
 *
 * @example
 * const market = await createWorkerMarket({ storage: sqlite("market.db"), poolSize: 2 })
 * const page = await market.rental.prices.latest({ gpu_canonical_name: ["h100-sxm"] }, { token })
 * await market.close()
 */
export const createWorkerMarket = async ({ storage: given, poolSize, ...input }: WorkerMarketOptions): Promise<WorkerMarket> => {
  // JavaScript callers can still pass a storage that is not portable.
  const storage = (given as Partial<PortableMarketStorage>).portable
  if (storage === undefined) {
    throw new TypeError("createWorkerMarket needs a portable storage (sqlite(file), redis(url), or portableStorage(layer, { module, options })): each worker opens it itself")
  }
  // Decoded here, so settings that cannot work reject before any thread starts.
  const config: WorkerConfig = { storage, settings: decodeMarketSettings(input) }
  let closed = false
  // A worker that dies after it was up is replaced; its unanswered calls were rejected.
  const replace = (lost: PoolWorker) => {
    const at = workers.indexOf(lost)
    if (at >= 0 && !closed) workers[at] = spawn()
  }
  // The pool's counters when they are kept in the process: every worker's hits, replacements' too.
  const counts = counterHost()
  const spawn = () => {
    const worker = new PoolWorker(config, counts, replace)
    worker.ready.catch(() => {}) // a replacement's failed start shows in its calls
    return worker
  }
  const workers = Array.from({ length: Math.max(1, poolSize ?? 1) }, spawn)
  try {
    await Promise.all(workers.map((w) => w.ready))
  } catch (error) {
    closed = true
    await Promise.all(workers.map((w) => w.close()))
    throw error
  }

  let nextId = 0
  const call = (request: (id: number) => Read | Write): Promise<unknown> => {
    if (closed) return Promise.reject(defect("the worker market is closed"))
    // The least busy worker takes the call.
    const worker = workers.reduce((a, b) => (b.pending.size < a.pending.size ? b : a))
    const id = nextId++
    return worker.call(request(id))
  }
  const market = buildMarket({
    call: (entry, query, { token }) => call((id) => new Read({ id, endpoint: entry.name, query, ...(token === undefined ? {} : { token }) })),
    next: (entry, next, { token }) => call((id) => new Read({ id, endpoint: entry.name, query: next.query_params, ...(token === undefined ? {} : { token }) })),
    write: <N extends WriteName>(name: N, args: WriteArgs<N>) => call((id) => new Write({ id, name, args })).then(decodeResult(name)),
    close: async () => {
      if (closed) return
      closed = true
      await Promise.all(workers.map((w) => w.close()))
    }
  })
  return Object.assign(market, { threadIds: () => workers.map((w) => w.worker.threadId) })
}
