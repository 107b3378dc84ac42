import { marketRuntimeLayer, type Storage, type StorageError } from "@gpu-market/core"
import { bodyJson, catalogue, makeOperations, OperationError, requestOrigin, toProblemError } from "@gpu-market/core/adapters"
import { type RateLimitHit, RateLimitStore } from "@gpu-market/core/storage"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Schema from "effect/Schema"
import { parentPort, workerData } from "node:worker_threads"
import type { WorkerConfig, WorkerReply, WorkerRequest, WorkerStorage } from "./contract.js"

/**
 * A worker thread's side of `createWorkerMarket`: opens the storage its `workerData` names, builds
 * the market over it, says `Ready`, and answers calls until the pool sends `Close`.
 */

/** The storage the app named: its backend module's `layer(options)`, imported in this thread. */
const storageLayer = (storage: WorkerStorage): Layer.Layer<Storage, StorageError> =>
  Layer.unwrapEffect(Effect.map(
    Effect.promise(() => import(storage.module) as Promise<{ readonly layer: (options: unknown) => Layer.Layer<Storage, StorageError> }>),
    (backend) => backend.layer(storage.options)
  ))

const port = parentPort!
const config = workerData as WorkerConfig
const send = (reply: WorkerReply) => port.postMessage(reply)
const entries: ReadonlyMap<string, (typeof catalogue)[number]> = new Map(catalogue.map((e) => [e.name, e]))
const isOperationError = Schema.is(OperationError)
const encodeError = Schema.encodeSync(OperationError)
// A page whose rows were cached crosses the thread with their text spliced in, not serialised again.
const json = (value: unknown) => (value === undefined ? "null" : bodyJson(value))

const reply = (id: number, exit: Exit.Exit<unknown, unknown>): WorkerReply => {
  if (Exit.isSuccess(exit)) return { _tag: "Success", id, json: json(exit.value) }
  const failure = toProblemError(exit.cause)
  return {
    _tag: "Failure",
    id,
    problem: failure.problem,
    error: isOperationError(failure.cause) ? { encoded: encodeError(failure.cause) } : { defect: Cause.pretty(exit.cause) }
  }
}

/**
 * With `process` rate limits the pool's main thread holds the counters, so every worker counts
 * into one window per key and none writes to the storage: a hit is a message there and back.
 */
const counting = new Map<number, (hit: RateLimitHit) => void>()
let hits = 0
const mainThreadRateLimits: RateLimitStore["Type"] = {
  hit: (key, windowMicros, now) => Effect.async<RateLimitHit>((resume) => {
    const hit = hits++
    counting.set(hit, (counted) => resume(Effect.succeed(counted)))
    send({ _tag: "Hit", hit, key, windowMicros, now })
  })
}

// The market as `createMarket` builds it; with `process` rate limits the storage's counters are
// the main thread's, so the market counts into them as it would into a storage's own.
const { settings } = config
const runtime = ManagedRuntime.make(settings.rateLimits === "process"
  ? marketRuntimeLayer({ ...settings, rateLimits: "shared" }, { storage: Layer.merge(storageLayer(config.storage), Layer.succeed(RateLimitStore, mainThreadRateLimits)) })
  : marketRuntimeLayer(settings, { storage: storageLayer(config.storage) }))
const origin = requestOrigin(settings.baseUrl ?? "http://localhost")

runtime.runPromise(makeOperations).then(
  (operations) => {
    port.on("message", (request: WorkerRequest) => {
      switch (request._tag) {
        case "Read": {
          const entry = entries.get(request.endpoint)
          if (entry === undefined) return send(reply(request.id, Exit.die(new Error(`unknown endpoint ${request.endpoint}`))))
          return void runtime.runPromiseExit(operations.read(entry, request.query, request.token, origin))
            .then((exit) => send(reply(request.id, exit)))
        }
        case "Write":
          return void runtime.runPromiseExit(operations.write(request.name, request.args))
            .then((exit) => send(reply(request.id, exit)))
        case "Counted":
          counting.get(request.hit)?.({ count: request.count, resetInMicros: request.resetInMicros })
          return void counting.delete(request.hit)
        case "Close":
          // Release the storage (a SQLite checkpoint, a Redis QUIT) before the thread ends.
          return void runtime.dispose().finally(() => port.close())
      }
    })
    send({ _tag: "Ready" })
  },
  (error: unknown) => {
    send({ _tag: "StartFailed", message: error instanceof Error ? error.message : String(error) })
    return runtime.dispose().finally(() => port.close())
  }
)
