import type { DataType } from "@gpu-market/core"
import type { StampedCounts, StampedHit } from "@gpu-market/core/storage"
import { randomUUID } from "node:crypto"
import { failureOf, type RedisClient, script } from "./client.js"
import { rateWindow } from "./rate-limits.js"

/**
 * The hits of one turn, counted with the stamps they carry read in the same script. KEYS: the
 * tokens' version, then `ARGV[1]` data versions, then one rate-limit counter per hit; ARGV: that
 * number, then each hit's expiry in ms. Returns the versions (empty string for none), then the
 * counts. One script, so the stamps and the counts are of one instant.
 */
const STAMPED_HITS = script("gmStampedHits", `
local versions = tonumber(ARGV[1])
local out = {}
for i = 1, versions + 1 do out[i] = redis.call('GET', KEYS[i]) or '' end
for j = versions + 2, #KEYS do
  local n = redis.call('INCR', KEYS[j])
  if n == 1 then redis.call('PEXPIRE', KEYS[j], ARGV[j - versions]) end
  out[j] = n
end
return out
`)

/**
 * The stamp of a tokens' version and a data version. A missing version (a key evicted or deleted:
 * a stamp could then come back) gives a stamp no reading equals, so nothing is skipped on it.
 */
const stampOf = (tokens: string, data: string): string =>
  tokens === "" || data === "" ? `unstamped:${randomUUID()}` : `${tokens}\n${data}`

/** A hit waiting for the end of its turn. */
interface Waiting {
  readonly counter: string
  readonly expiryMs: number
  readonly resetInMicros: number
  /** Its type's data version key. */
  readonly versionKey: string
  readonly resolve: (hit: StampedHit) => void
  readonly reject: (error: unknown) => void
}

/**
 * `StampedCounts` on a single connection (a Cluster spreads the keys over nodes, and has none):
 * the hits of one event-loop turn go out as one script at the turn's end, in the same write as
 * the turn's other commands. `versionKeys` names the data types it stamps and where their
 * versions are; the stamp is the tokens' version and the type's, which every write bumps to a
 * fresh random value.
 */
export const makeStampedCounts = (
  client: RedisClient,
  tokensVersionKey: string,
  versionKeys: Partial<Record<DataType, string>>
): StampedCounts | undefined => {
  const turn = client.turn
  if (turn === undefined) return undefined
  let waiting: Array<Waiting> = []

  const flush = () => {
    const hits = waiting
    waiting = []
    const versions = [...new Set(hits.map((h) => h.versionKey))]
    const position = new Map(versions.map((key, i) => [key, i + 1]))
    client.evalScript(
      STAMPED_HITS,
      [tokensVersionKey, ...versions, ...hits.map((h) => h.counter)],
      [versions.length, ...hits.map((h) => h.expiryMs)]
    ).then((reply) => {
      const out = reply as ReadonlyArray<string | number>
      const tokens = String(out[0])
      hits.forEach((hit, i) => hit.resolve({
        count: Number(out[versions.length + 1 + i]),
        resetInMicros: hit.resetInMicros,
        stamp: stampOf(tokens, String(out[position.get(hit.versionKey)!]))
      }))
    }, (cause: unknown) => {
      const failure = failureOf("rate_limits.hit", cause)
      for (const hit of hits) hit.reject(failure)
    })
  }

  const keyOf = (type: DataType): string => {
    const key = versionKeys[type]
    if (key === undefined) throw new RangeError(`no stamp is kept for ${type}`)
    return key
  }

  return {
    covers: (type) => versionKeys[type] !== undefined,
    stamp: (type) => {
      turn.hold()
      return client.redis.mget(tokensVersionKey, keyOf(type)).then(
        ([tokens, data]) => stampOf(tokens ?? "", data ?? ""),
        (cause: unknown) => Promise.reject(failureOf("stamped_counts.stamp", cause))
      )
    },
    hit: (key, windowMicros, now, type) =>
      new Promise<StampedHit>((resolve, reject) => {
        const versionKey = keyOf(type)
        if (waiting.length === 0) turn.atEnd(flush)
        waiting.push({ ...rateWindow(client.keys, key, windowMicros, now), versionKey, resolve, reject })
      })
  }
}
