import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeWorkerRunner from "@effect/platform-node/NodeWorkerRunner"
import * as RpcServer from "@effect/rpc/RpcServer"
import * as RpcWorker from "@effect/rpc/RpcWorker"
import { marketLayer, type Storage, type StorageError } from "@gpu-market/core"
import { catalogue, makeOperations, requestOrigin } from "@gpu-market/core/adapters"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { MarketRpcs, WorkerConfig, type WorkerStorage } from "./contract.js"

/**
 * A worker thread's side of `createWorkerMarket`: opens the storage the main thread names in its
 * initial message, builds the market over it, and serves `MarketRpcs` until the pool shuts down.
 */

/** The storage the app named: its backend module's `layer(options)`, imported in this thread. */
const storageLayer = (storage: WorkerStorage): Layer.Layer<Storage, StorageError> =>
  Layer.unwrapEffect(Effect.map(
    Effect.promise(() => import(storage.module) as Promise<{ readonly layer: (options: unknown) => Layer.Layer<Storage, StorageError> }>),
    (backend) => backend.layer(storage.options)
  ))

const entries = new Map(catalogue.map((e) => [e.name, e]))
const json = (value: unknown) => JSON.stringify(value) ?? "null"

const Handlers = MarketRpcs.toLayer(Effect.gen(function* () {
  const config = yield* Effect.orDie(RpcWorker.initialMessage(WorkerConfig))
  const context = yield* Layer.build(marketLayer.pipe(Layer.provideMerge(storageLayer(config.storage)))).pipe(Effect.orDie)
  const operations = yield* Effect.provide(makeOperations, context)
  const origin = requestOrigin(config.baseUrl)
  return {
    Read: ({ endpoint, query, token }) => Effect.map(operations.read(entries.get(endpoint)!, query, token, origin), json),
    Write: ({ name, args }) => Effect.map(operations.write(name, args), json)
  }
}))

RpcServer.layer(MarketRpcs).pipe(
  Layer.provide(Handlers),
  Layer.provide(RpcServer.layerProtocolWorkerRunner),
  Layer.provide(NodeWorkerRunner.layer),
  NodeWorkerRunner.launch,
  NodeRuntime.runMain
)
