import { counterHost, remoteCounters } from "@gpu-market/core/adapters"
import { RateLimitStore } from "@gpu-market/core/storage"
import * as Layer from "effect/Layer"
import cluster, { type Worker } from "node:cluster"

/**
 * `process` rate limits across the workers of `serve --workers N`: the primary holds the
 * counters for every worker, as a worker pool's main thread does for its threads (core's
 * counting messages over the IPC channel), so a caller gets exactly its limit whichever worker
 * each request reaches, and no request writes to the storage.
 */

let primary: RateLimitStore["Type"] | undefined

/** A worker's counters in the primary: one listener and one numbering of hits, however often its market is built. */
const primaryCounters = () => {
  if (primary === undefined) {
    const { counters, hear } = remoteCounters((message) => process.send!(message))
    process.on("message", hear)
    primary = counters
  }
  return primary
}

/**
 * Where a server's `process` rate limits are counted (`marketRuntimeLayer`'s `processCounters`):
 * in a worker of `serve --workers N`, in the primary, one window per key for every worker; in a
 * lone server, nowhere but its own memory (undefined: the default).
 */
export const clusterCounters = (): Layer.Layer<RateLimitStore> | undefined =>
  cluster.isWorker
    ? Layer.sync(RateLimitStore, primaryCounters)
    : undefined

/**
 * The primary's side: one set of windows for every worker given to the function this returns,
 * each hit of theirs counted and answered.
 */
export const countForWorker = () => {
  const host = counterHost()
  return (worker: Worker) => worker.on("message", (message: unknown) => host(message, (counted) => worker.send(counted)))
}
