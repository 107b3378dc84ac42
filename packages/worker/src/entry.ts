import { marketRuntimeLayer, type Storage, type StorageError } from "@gpu-market/core"
import { bodyJson, catalogue, makeOperations, OperationError, remoteCounters, requestOrigin, toProblemError } from "@gpu-market/core/adapters"
import { RateLimitStore } from "@gpu-market/core/storage"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Schema from "effect/Schema"
import { parentPort, workerData } from "node:worker_threads"
import {
  Answer, type CallFailure, Defect, type Read, Ready, StartFailed, type WorkerConfig, WorkerReply, WorkerRequest, type WorkerStorage, type Write
} from "./contract.js"

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
const decodeRequest = Schema.decodeUnknownEither(WorkerRequest)
const encodeReply = Schema.encodeSync(WorkerReply)
const send = (reply: WorkerReply) => port.postMessage(encodeReply(reply))
const entries: ReadonlyMap<string, (typeof catalogue)[number]> = new Map(catalogue.map((e) => [e.name, e]))
const isOperationError = Schema.is(OperationError)
// A page whose rows were cached crosses the thread with their text spliced in, not serialised again.
const json = (value: unknown) => (value === undefined ? "null" : bodyJson(value))

/** A call's exit as it crosses: its result's JSON text, or its problem with the error behind it. */
const outcome = (exit: Exit.Exit<unknown, unknown>): Exit.Exit<string, typeof CallFailure.Type> => {
  if (Exit.isSuccess(exit)) return Exit.succeed(json(exit.value))
  const failure = toProblemError(exit.cause)
  return Exit.fail({
    problem: failure.problem,
    cause: isOperationError(failure.cause) ? failure.cause : new Defect({ pretty: Cause.pretty(exit.cause) })
  })
}

/** Answers `request` with its exit, encoded by its own schemas. */
const answer = (request: Read | Write) => (exit: Exit.Exit<unknown, unknown>) =>
  send(new Answer({ id: request.id, exit: Effect.runSync(Schema.serializeExit(request, outcome(exit))) }))

/**
 * With `process` rate limits the pool's main thread holds the counters, so every worker counts
 * into one window per key and none writes to the storage: a hit is a message there and back.
 */
const mainThread = remoteCounters((message) => port.postMessage(message))

// The market as `createMarket` builds it; `process` rate limits are the main thread's, for the pool.
const { settings } = config
const runtime = ManagedRuntime.make(marketRuntimeLayer(settings, {
  storage: storageLayer(config.storage), processCounters: Layer.succeed(RateLimitStore, mainThread.counters)
}))
const origin = requestOrigin(settings.baseUrl ?? "http://localhost")

runtime.runPromise(makeOperations).then(
  (operations) => {
    port.on("message", (message: unknown) => {
      if (mainThread.hear(message)) return
      // The pool encodes every call with the same schemas, so a message that does not decode is a bug: it ends the thread, loudly.
      const request = Either.getOrThrowWith(decodeRequest(message), (error) => new Error(`a worker got a message it cannot read: ${error.message}`))
      switch (request._tag) {
        case "Read": {
          const entry = entries.get(request.endpoint)
          if (entry === undefined) return answer(request)(Exit.die(new Error(`unknown endpoint ${request.endpoint}`)))
          return void runtime.runPromiseExit(operations.read(entry, request.query, request.token, origin)).then(answer(request))
        }
        case "Write":
          return void runtime.runPromiseExit(operations.write(request.name, request.args)).then(answer(request))
        case "Close":
          // Release the storage (a SQLite checkpoint, a Redis QUIT) before the thread ends.
          return void runtime.dispose().finally(() => port.close())
      }
    })
    send(new Ready())
  },
  (error: unknown) => {
    send(new StartFailed({ message: error instanceof Error ? error.message : String(error) }))
    return runtime.dispose().finally(() => port.close())
  }
)
