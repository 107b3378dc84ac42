import type { MarketSettings, Problem } from "@gpu-market/core"
import type { WriteArgs, WriteName } from "@gpu-market/core/adapters"

/**
 * The messages between a main thread and the market's worker threads. Two calls cross: a read by
 * endpoint name and a write by operation name. Results travel as the JSON text the direct call
 * serialises to, so a worker's envelope is the direct call's, byte for byte; a failure travels as
 * its problem with its tagged error encoded, so it arrives as the same `MarketProblemError`.
 * With `process` rate limits a worker's rate-limit hits cross too: the main thread counts them.
 */

/**
 * Where a worker's market keeps its data: a module exporting `layer(options)` and those options
 * (a backend's `PortableStorage`), since each worker opens its own storage.
 */
export interface WorkerStorage {
  readonly module: string
  readonly options: unknown
}

/** What every worker is started with, as its `workerData`. */
export interface WorkerConfig {
  readonly storage: WorkerStorage
  /**
   * The market's settings, decoded in the main thread. With `rateLimits: "process"` the main
   * thread counts every worker's rate-limit hits; with `shared` each worker's storage does.
   */
  readonly settings: MarketSettings
}

/** A call from the main thread. `close` asks the worker to release its storage and exit. */
export type WorkerRequest =
  | {
    readonly _tag: "Read"
    readonly id: number
    readonly endpoint: string
    readonly query: Readonly<Record<string, string>>
    readonly token: string | undefined
  }
  | { readonly _tag: "Write"; readonly id: number; readonly name: WriteName; readonly args: WriteArgs<WriteName> }
  | { readonly _tag: "Close" }
  /** The main thread's count of a worker's rate-limit `Hit`. */
  | { readonly _tag: "Counted"; readonly hit: number; readonly count: number; readonly resetInMicros: number }

/** A worker's message: it is up (or could not start), a call's outcome, or a rate-limit hit to count. */
export type WorkerReply =
  | { readonly _tag: "Ready" }
  | { readonly _tag: "Hit"; readonly hit: number; readonly key: string; readonly windowMicros: number; readonly now: number }
  | { readonly _tag: "StartFailed"; readonly message: string }
  | { readonly _tag: "Success"; readonly id: number; readonly json: string }
  | {
    readonly _tag: "Failure"
    readonly id: number
    readonly problem: Problem
    /** The `OperationError` the problem stands for, Schema-encoded; a defect's message otherwise. */
    readonly error: { readonly encoded: unknown } | { readonly defect: string }
  }
