import { RpcServer, RpcWorker } from "@effect/rpc"
import { NodeRuntime, NodeWorkerRunner } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { layer as marketLayer } from "../market/layer"
import { requestOrigin } from "../query/collection"
import type { Storage, StorageError } from "../storage/contract"
import { catalogue } from "./catalogue"
import { makeOperations } from "./operations"
import { MarketRpcs, WorkerConfig, type WorkerStorage } from "./worker-contract"

/**
 * A worker thread's side of `createWorkerMarket`: opens the storage the main thread names in its
 * initial message, builds the market over it, and serves `MarketRpcs` until the pool shuts down.
 */

/** The backend module and options a storage config names; loaded here, so core depends on no backend. */
const storageLayer = (storage: WorkerStorage): Layer.Layer<Storage, StorageError> => {
  const [module, options] = "sqlite" in storage
    ? ["@gpu-market/storage-sqlite", { filename: storage.sqlite }]
    : "redis" in storage
    ? ["@gpu-market/storage-redis", storage.redis]
    : [storage.module, storage.options]
  return Layer.unwrapEffect(Effect.map(
    Effect.promise(() => import(module) as Promise<{ readonly layer: (options: unknown) => Layer.Layer<Storage, StorageError> }>),
    (backend) => backend.layer(options)
  ))
}

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
