import type { ReadMark, SettingsStore } from "@gpu-market/core/storage"
import * as Option from "effect/Option"
import type { RedisClient } from "./client.js"

/**
 * Reads the progress marks a store writes with its data, in its own hash `key` under the
 * store's hash tag (a batch writes one slot), not with the settings.
 */
export const readMark = (client: RedisClient, key: string, operation: string): ReadMark => (name) =>
  client.run(operation, async (redis) => Option.fromNullable(await redis.hget(key, name)))

/**
 * Settings in one hash, `<prefix>:{settings}:values`. `getOrSet` is HSETNX then HGET in one
 * MULTI, so processes starting together all end up with the first value written.
 */
export const makeSettingsStore = (client: RedisClient): SettingsStore["Type"] => {
  const key = client.keys.key("settings", "values")
  return {
    get: (name) => client.run("settings.get", async (redis) => Option.fromNullable(await redis.hget(key, name))),
    set: (name, value) =>
      client.run("settings.set", async (redis) => {
        await redis.hset(key, name, value)
        await client.acknowledged(key)
      }),
    getOrSet: (name, value) =>
      client.run("settings.getOrSet", async (redis) => {
        const replies = (await redis.multi().hsetnx(key, name, value).hget(key, name).exec()) ?? []
        for (const [error] of replies) if (error !== null) throw error
        await client.acknowledged(key)
        return replies[1]![1] as string
      })
  }
}
