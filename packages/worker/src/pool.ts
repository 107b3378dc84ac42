import * as NodeWorker from "@effect/platform-node/NodeWorker"
import * as RpcClient from "@effect/rpc/RpcClient"
import * as RpcWorker from "@effect/rpc/RpcWorker"
import type { Market, PortableMarketStorage } from "@gpu-market/core"
import { buildMarket, runOperation } from "@gpu-market/core/adapters"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { Worker } from "node:worker_threads"
import { MarketRpcs, WorkerConfig } from "./contract.js"

/**
 * The market in `worker_threads`: the same calls as `createMarket`, answered by a pool of workers
 * over `@effect/rpc`. Each worker opens the storage itself, so the storage must be portable: the
 * backend's `sqlite(file)` or `redis(url)` says which module and options rebuild it in a thread.
 */

/** Options of `createWorkerMarket`. */
export interface WorkerMarketOptions {
  /** A portable storage: `sqlite("market.db")`, `redis(url)`, or any `portableStorage(layer, { module, options })`. */
  readonly storage: PortableMarketStorage
  /** Worker threads in the pool (default 1); calls are spread over them. */
  readonly poolSize?: number
  /** Base URL `meta.next.url` starts with (default `http://localhost`), as in `createMarket`. */
  readonly baseUrl?: string
}

/** A market answered by worker threads. */
export type WorkerMarket = Market & {
  /** The thread ids of the pool's workers. */
  readonly threadIds: () => ReadonlyArray<number>
}

// Compiled JavaScript beside this module: a worker needs no loader, wherever the app runs from.
const entry = new URL("./entry.js", import.meta.url)

const makeClient = RpcClient.make(MarketRpcs)
class Client extends Context.Tag("Market/WorkerClient")<Client, Effect.Effect.Success<typeof makeClient>>() {}

/**
 * Starts a pool of worker threads, each running the market over `storage`, and resolves once
 * every worker is up.
 *
 * @example
 * const market = await createWorkerMarket({ storage: sqlite("market.db"), poolSize: 2 })
 * const page = await market.rental.prices.latest({ gpu_canonical_name: ["h100-sxm"] }, { token })
 * await market.close()
 */
export const createWorkerMarket = async (options: WorkerMarketOptions): Promise<WorkerMarket> => {
  // JavaScript callers can still pass a storage that is not portable.
  const storage = (options.storage as Partial<PortableMarketStorage>).portable
  if (storage === undefined) {
    throw new TypeError("createWorkerMarket needs a portable storage (sqlite(file), redis(url), or portableStorage(layer, { module, options })): each worker opens it itself")
  }
  const size = options.poolSize ?? 1
  const workers: Array<Worker> = []
  const spawn = () => {
    const worker = new Worker(entry)
    workers.push(worker)
    return worker
  }
  const config: WorkerConfig = { storage, baseUrl: options.baseUrl ?? "http://localhost" }
  const runtime = ManagedRuntime.make(Layer.scoped(Client, makeClient).pipe(
    Layer.provide(RpcClient.layerProtocolWorker({ size })),
    Layer.provide(NodeWorker.layerPlatform(spawn)),
    Layer.provide(RpcWorker.layerInitialMessage(WorkerConfig, Effect.succeed(config)))
  ))
  const client = await runtime.runPromise(Client)
  const parse = (text: string): unknown => JSON.parse(text)
  const market = buildMarket({
    call: (entry, query, { token }) => runOperation(runtime, Effect.map(client.Read({ endpoint: entry.name, query, ...(token === undefined ? {} : { token }) }), parse)),
    next: (entry, next, { token }) =>
      runOperation(runtime, Effect.map(client.Read({ endpoint: entry.name, query: next.query_params, ...(token === undefined ? {} : { token }) }), parse)),
    write: (name, args) => runOperation(runtime, Effect.map(client.Write({ name, args }), parse)),
    close: () => runtime.dispose()
  })
  return Object.assign(market, { threadIds: () => workers.map((w) => w.threadId) })
}
