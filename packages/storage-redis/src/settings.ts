import type { ReadMark, SettingsStore } from "@gpu-market/core/storage"
import * as Option from "effect/Option"
import { type RedisClient, script } from "./client.js"

/**
 * Reads the progress marks a store writes with its data, in its own hash `key` under the
 * store's hash tag (a batch writes one slot), not with the settings.
 */
export const readMark = (client: RedisClient, key: string, operation: string): ReadMark => (name) =>
  client.run(operation, async (redis) => Option.fromNullable(await redis.hget(key, name)))

/**
 * A lease, as core's `mayTakeLease` and `leaseValue` keep it (`<holder>|<expires ms>`), taken or
 * renewed in one step: KEYS[1] the settings hash; ARGV name, holder, now, ttl.
 */
const LEASE = script("settingsLease", `
local value = redis.call('HGET', KEYS[1], ARGV[1])
if value then
  local holder, expires = string.match(value, '^(.*)|(%d+)$')
  if holder ~= ARGV[2] and tonumber(expires) > tonumber(ARGV[3]) then return 0 end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. '|' .. string.format('%d', tonumber(ARGV[3]) + tonumber(ARGV[4])))
return 1
`, { replicated: true })

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
      }),
    lease: (name, holder, nowMs, ttlMs) =>
      client.run("settings.lease", async () => (await client.evalScript(LEASE, [key], [name, holder, nowMs, ttlMs])) === 1)
  }
}
