import type { Market, MarketSettingsInput, PortableMarketStorage } from "@gpu-market/core"
import { decodeMarketSettings, MarketProblemError } from "@gpu-market/core"
import { buildMarket, OperationError, toProblemError, type WriteArgs, type WriteName, type WriteResult } from "@gpu-market/core/adapters"
import { makeMemoryRateLimitStore, type RateLimitStore } from "@gpu-market/core/storage"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Worker } from "node:worker_threads"
import type { WorkerConfig, WorkerReply, WorkerRequest } from "./contract.js"

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

const decodeError = Schema.decodeUnknownSync(OperationError)
const defect = (message: string) => toProblemError(Cause.die(new Error(message)))

type Call = Extract<WorkerRequest, { readonly id: number }>
type Settle = { readonly resolve: (value: unknown) => void; readonly reject: (error: unknown) => void }

/** One worker thread with the calls it has not answered yet. */
class PoolWorker {
  readonly pending = new Map<number, Settle>()
  readonly worker: Worker
  /** Resolves once the worker is up; rejects with why it could not start. */
  readonly ready: Promise<void>
  /** Resolves once the thread has ended, whenever that was. */
  readonly exited: Promise<void>
  closing = false

  constructor(config: WorkerConfig, limits: RateLimitStore["Type"], onLost: (lost: PoolWorker) => void) {
    this.worker = new Worker(entry, { workerData: config })
    this.exited = new Promise((resolve) => this.worker.once("exit", () => resolve()))
    this.ready = new Promise((resolve, reject) => {
      this.worker.on("message", (reply: WorkerReply) => {
        switch (reply._tag) {
          case "Ready":
            return resolve()
          case "StartFailed":
            return reject(new Error(`a market worker could not open its storage: ${reply.message}`))
          case "Hit": {
            const counted = Effect.runSync(limits.hit(reply.key, reply.windowMicros, reply.now))
            return this.worker.postMessage({ _tag: "Counted", hit: reply.hit, ...counted } satisfies WorkerRequest)
          }
          case "Success":
            return this.settle(reply.id)?.resolve(JSON.parse(reply.json))
          case "Failure":
            return this.settle(reply.id)?.reject(new MarketProblemError(reply.problem, {
              cause: "encoded" in reply.error ? decodeError(reply.error.encoded) : new Error(reply.error.defect)
            }))
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

  private settle(id: number): Settle | undefined {
    const settle = this.pending.get(id)
    this.pending.delete(id)
    return settle
  }

  call(id: number, request: Call): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject })
      try {
        this.worker.postMessage(request)
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
    this.worker.postMessage({ _tag: "Close" } satisfies WorkerRequest)
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
  const limits = makeMemoryRateLimitStore()
  const spawn = () => {
    const worker = new PoolWorker(config, limits, replace)
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
  const call = (request: (id: number) => Call): Promise<unknown> => {
    if (closed) return Promise.reject(defect("the worker market is closed"))
    // The least busy worker takes the call.
    const worker = workers.reduce((a, b) => (b.pending.size < a.pending.size ? b : a))
    const id = nextId++
    return worker.call(id, request(id))
  }
  const market = buildMarket({
    call: (entry, query, { token }) => call((id) => ({ _tag: "Read", id, endpoint: entry.name, query, token })),
    next: (entry, next, { token }) => call((id) => ({ _tag: "Read", id, endpoint: entry.name, query: next.query_params, token })),
    // The worker answers with the write's own result, as JSON (`Success`): what `createMarket` resolves with.
    write: <N extends WriteName>(name: N, args: WriteArgs<N>) => call((id) => ({ _tag: "Write", id, name, args })) as Promise<WriteResult<N>>,
    close: async () => {
      if (closed) return
      closed = true
      await Promise.all(workers.map((w) => w.close()))
    }
  })
  return Object.assign(market, { threadIds: () => workers.map((w) => w.worker.threadId) })
}
