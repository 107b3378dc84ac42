import { StorageError } from "@gpu-market/core"
import type * as Effect from "effect/Effect"
import type { ChainableCommander } from "ioredis"
import { untilApplied } from "./batch.js"
import type { RedisClient } from "./client.js"

/** Runs a pipeline or MULTI and returns its replies in order; the first failed command rejects. */
export const replies = async (commands: ChainableCommander): Promise<Array<unknown>> => {
  const out: Array<unknown> = []
  for (const [error, reply] of (await commands.exec()) ?? []) {
    if (error !== null) throw error
    out.push(reply)
  }
  return out
}

/** A value read from structures kept on write, and the `version` they were read at. */
export interface Versioned<A> {
  readonly version: string | null
  readonly value: A
}

/**
 * An aggregate (a summary behind metadata) read by `read` and cached in the process until the
 * counter at `versionKey`, which every write of the aggregate bumps, moves. `read` returns
 * `"retry"` when a write landed between its reads (their versions differ); it is read again.
 */
export const cachedByVersion = <A>(
  client: RedisClient,
  operation: string,
  versionKey: string,
  read: () => Promise<Versioned<A> | "retry">
): Effect.Effect<A, StorageError> => {
  let cached: Versioned<A> | undefined
  return untilApplied(client, operation, async () => {
    const version = await client.redis.get(versionKey)
    if (cached !== undefined && cached.version === version) return cached.value
    const fresh = await read()
    if (fresh === "retry") return fresh
    cached = fresh
    return fresh.value
  }, () => new StorageError({ operation, cause: "the data kept changing under this read" }))
}
