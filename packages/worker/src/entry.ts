import { marketRuntimeLayer, type Storage, type StorageError } from "@gpu-market/core"
import {
  bodyJson, catalogue, makeOperations, OperationError, type Operations, remoteCounters, requestOrigin, toProblemError, type WriteArgs, type WriteName, writeResults
} from "@gpu-market/core/adapters"
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
  Answer, type CallFailure, Defect, Ready, StartFailed, WorkerConfig, WorkerReply, WorkerRequest, type WorkerStorage
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
// The pool encodes the config with the same schema: one that does not decode ends the thread, which the pool reports.
const config = Schema.decodeUnknownSync(WorkerConfig)(workerData)
const decodeRequest = Schema.decodeUnknownEither(WorkerRequest)
const encodeReply = Schema.encodeSync(WorkerReply)
const send = (reply: WorkerReply) => port.postMessage(encodeReply(reply))
const entries: ReadonlyMap<string, (typeof catalogue)[number]> = new Map(catalogue.map((e) => [e.name, e]))
const isOperationError = Schema.is(OperationError)
// A page whose rows were cached crosses the thread with their text spliced in, not serialised again.
const json = (value: unknown) => (value === undefined ? "null" : bodyJson(value))

/** A call's exit as it crosses: its result as the call sends it, or its problem with the error behind it. */
const outcome = <A>(exit: Exit.Exit<A, unknown>): Exit.Exit<A, typeof CallFailure.Type> => {
  if (Exit.isSuccess(exit)) return Exit.succeed(exit.value)
  const failure = toProblemError(exit.cause)
  return Exit.fail({
    problem: failure.problem,
    cause: isOperationError(failure.cause) ? failure.cause : new Defect({ pretty: Cause.pretty(exit.cause) })
  })
}

/** Answers `request` (a `Read` or a `Write`) with its exit, encoded by its own schemas. */
const answer = <A, I>(request: { readonly id: number } & Schema.WithResult<A, I, typeof CallFailure.Type, typeof CallFailure.Encoded, never>) =>
  (exit: Exit.Exit<A, unknown>) => send(new Answer({ id: request.id, exit: Effect.runSync(Schema.serializeExit(request, outcome(exit))) }))

/** A write whose result is encoded by its write's schema to cross; one its schema refuses is a defect. */
const encodedWrite = <N extends WriteName>(operations: Operations, name: N, args: WriteArgs<N>) =>
  Effect.flatMap(operations.write(name, args), (result) => Effect.orDie(Schema.encode(writeResults[name])(result)))

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
          return void runtime.runPromiseExit(Effect.map(operations.read(entry, request.query, request.token, origin), json)).then(answer(request))
        }
        case "Write":
          return void runtime.runPromiseExit(encodedWrite(operations, request.name, request.args)).then(answer(request))
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
