import { RpcClient, RpcWorker } from "@effect/rpc"
import { NodeWorker } from "@effect/platform-node"
import { Context, Effect, Layer, ManagedRuntime } from "effect"
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { pathToFileURL } from "node:url"
import { Worker } from "node:worker_threads"
import { buildMarket, type Market, runOperation } from "./direct"
import { MarketRpcs, WorkerConfig, type WorkerStorage } from "./worker-contract"

/**
 * The market in `worker_threads`: the same calls as `createMarket`, answered by a pool of workers
 * over `@effect/rpc`, for apps whose event loop must not do query work. Each worker opens the
 * storage itself, so storage is named by a serialisable config rather than a Layer.
 */

/** Options of `createWorkerMarket`. */
export interface WorkerMarketOptions {
  /** `{ sqlite: "market.db" }`, `{ redis: { url, prefix } }`, or `{ module, options }` for another backend. */
  readonly storage: WorkerStorage
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

/**
 * The worker's first script. The entry is TypeScript, so the worker registers tsx's ESM loader
 * before importing it: `execArgv: ["--import", "tsx"]` does not reach a worker's entry on Node 20.
 * Both are absolute URLs, so the worker finds them wherever the app runs from.
 */
const bootstrap = (() => {
  const manifest = createRequire(import.meta.url).resolve("tsx/package.json")
  const api = (JSON.parse(readFileSync(manifest, "utf8")) as { exports: { "./esm/api": { import: { default: string } } } }).exports["./esm/api"].import.default
  const loader = pathToFileURL(join(dirname(manifest), api)).href
  const entry = new URL("./worker-entry.ts", import.meta.url).href
  return `import(${JSON.stringify(loader)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}) })`
})()

const makeClient = RpcClient.make(MarketRpcs)
class Client extends Context.Tag("Market/WorkerClient")<Client, Effect.Effect.Success<typeof makeClient>>() {}

/**
 * Starts a pool of worker threads, each running the market over `storage`, and resolves once
 * every worker is up.
 *
 * @example
 * const market = await createWorkerMarket({ storage: { sqlite: "market.db" }, poolSize: 2 })
 * const page = await market.rental.prices.latest({ gpu_canonical_name: ["h100-sxm"] }, { token })
 * await market.close()
 */
export const createWorkerMarket = async (options: WorkerMarketOptions): Promise<WorkerMarket> => {
  const size = options.poolSize ?? 1
  const workers: Array<Worker> = []
  const spawn = () => {
    const worker = new Worker(bootstrap, { eval: true })
    workers.push(worker)
    return worker
  }
  const config: WorkerConfig = { storage: options.storage, baseUrl: options.baseUrl ?? "http://localhost" }
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
