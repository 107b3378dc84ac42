import { type RateLimitMode, withRateLimits } from "@gpu-market/core"
import { makeMemoryRateLimitStore, type RateLimitHit, RateLimitStore, type Storage } from "@gpu-market/core/storage"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import cluster, { type Worker } from "node:cluster"

/**
 * `process` rate limits across the workers of `serve --workers N`: the primary holds the
 * counters for every worker, as a worker pool's main thread does for its threads, so a caller
 * gets exactly its limit whichever worker each request reaches, and no request writes to the
 * storage. A hit is a message to the primary and its count a message back.
 */

/** A worker's rate-limit hit, sent to the primary, and the primary's count, sent back. */
interface Hit {
  readonly _tag: "gpu-market/hit"
  readonly hit: number
  readonly key: string
  readonly windowMicros: number
  readonly now: number
}
interface Counted extends RateLimitHit {
  readonly _tag: "gpu-market/counted"
  readonly hit: number
}

/** The counts of hits sent and not yet answered, by hit number. */
const counting = new Map<number, (counted: RateLimitHit) => void>()
let hits = 0

/** A worker's counters: the primary's, through the IPC channel. */
const primaryRateLimits: RateLimitStore["Type"] = {
  hit: (key, windowMicros, now) => Effect.async<RateLimitHit>((resume) => {
    const hit = hits++
    counting.set(hit, (counted) => resume(Effect.succeed(counted)))
    process.send!({ _tag: "gpu-market/hit", hit, key, windowMicros, now } satisfies Hit)
  })
}

let hearing = false

/** Where a worker hears the primary's counts: installed once, when its storage first counts there. */
const hearCounts = () => {
  if (hearing) return
  hearing = true
  process.on("message", (message: Counted) => {
    if (message?._tag !== "gpu-market/counted") return
    counting.get(message.hit)?.({ count: message.count, resetInMicros: message.resetInMicros })
    counting.delete(message.hit)
  })
}

/**
 * The settings and storage a server's market is built from (`marketRuntimeLayer`): as given,
 * except in a worker in `process` mode, where the storage arrives with its rate limits counted in
 * the primary (one window per key for every worker) and the runtime is told to keep the
 * storage's counters (`shared`) rather than put this process's own in their place.
 */
export const countedInCluster = <S extends { readonly rateLimits?: RateLimitMode | undefined }, E, R>(
  settings: S, storage: Layer.Layer<Storage, E, R>
): { readonly settings: S; readonly storage: Layer.Layer<Storage, E, R> } =>
  cluster.isWorker && settings.rateLimits === "process"
    ? {
      settings: { ...settings, rateLimits: "shared" },
      storage: Layer.merge(withRateLimits(storage, "process"), Layer.sync(RateLimitStore, () => {
        hearCounts()
        return primaryRateLimits
      }))
    }
    : { settings, storage }

/**
 * The primary's side: one set of windows (`makeMemoryRateLimitStore`) for every worker given to
 * the function this returns, each hit of theirs counted and answered.
 */
export const countForWorker = () => {
  const limits = makeMemoryRateLimitStore()
  return (worker: Worker) => worker.on("message", (message: Hit) => {
    if (message?._tag !== "gpu-market/hit") return
    const counted = Effect.runSync(limits.hit(message.key, message.windowMicros, message.now))
    worker.send({ _tag: "gpu-market/counted", hit: message.hit, ...counted } satisfies Counted)
  })
}
