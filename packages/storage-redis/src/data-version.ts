import type { StorageError } from "@gpu-market/core"
import type * as Effect from "effect/Effect"
import { randomBytes } from "node:crypto"
import type { RedisClient } from "./client.js"

/**
 * A data type's version (`…Store.version`) is a string key under the type's hash tag, set to a
 * fresh random value by every batch that changes the type's rows, as one of its commands. Random
 * rather than counted, so a value never comes back (a flushed or restored Redis counting again
 * from 1) while a process caches pages under it.
 */
export const freshVersion = (): string => randomBytes(8).toString("hex")

/** The version at `key`: one GET (empty before the type's first write). */
export const readVersion = (client: RedisClient, key: string, operation: string): Effect.Effect<string, StorageError> =>
  client.run(operation, async (redis) => (await redis.get(key)) ?? "")
