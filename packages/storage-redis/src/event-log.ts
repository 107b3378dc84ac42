import type { MarketEvent } from "@gpu-market/core"
import { EventLogTrimmed, type EventLogStore, type EventPositions, type LoggedEvent } from "@gpu-market/core/storage"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { Redis } from "ioredis"
import { randomBytes } from "node:crypto"
import { setTimeout as sleep } from "node:timers/promises"
import type { Batch } from "./batch.js"
import { type RedisClient, script } from "./client.js"
import { BATCH_ATTEMPTS } from "./batch.js"
import { replies } from "./reads.js"

/**
 * The change feed's log in Redis: one stream per data type, `<prefix>:{<tag>}:events`, under
 * the hash tag of the rows it records (`{rental}`, `{hardware}`, `{transactions}`, `{indexes}`,
 * `{llm}`), so the XADD runs in the same checked batch (one Lua script, one slot) as the write it
 * records: an event exists exactly when its write applied. Each XADD trims its stream to about
 * the retention (`MAXLEN ~`). A position is one stream id per type, in `STREAMS` order joined
 * by `_`, so resuming reads each stream after its own id; a follower blocks in XREAD on a
 * connection of its own.
 *
 * On a Redis Cluster the five streams live in five slots, which one command cannot span: each
 * stream is read by a command of its own, and a follower polls every `CLUSTER_POLL_MS` instead
 * of blocking (a blocked read would hold its node's only connection). Each type's events stay in
 * order; across types, ids come from different masters' clocks and say nothing of order.
 */

/** The streams, by hash tag, in the order of a position's parts. */
const STREAMS = ["rental", "hardware", "transactions", "indexes", "llm"] as const

/** The stream (its index in `STREAMS`) an event type is logged in. */
const STREAM_OF: { readonly [T in MarketEvent["type"]]: number } = {
  rental_price: 0,
  rental_price_withdrawal: 0,
  hardware_observation: 1,
  transaction_blend: 2,
  index_value: 3,
  llm_token_price: 4,
  llm_token_price_withdrawal: 4
}

/** The stream key of a hash tag: `<prefix>:{<tag>}:events`. */
const eventStreamKey = (client: RedisClient, tag: string): string => client.keys.key(tag, "events")

/** Adds the XADD of each of `events` to `batch`, on the stream of their type (which must share the batch's slot). */
export const logEvents = (client: RedisClient, batch: Batch, events: ReadonlyArray<MarketEvent>): void => {
  for (const e of events) {
    batch.op("XADD", eventStreamKey(client, STREAMS[STREAM_OF[e.type]]!), "MAXLEN", "~", String(client.eventRetention), "*", "e", JSON.stringify(e))
  }
}

/**
 * Puts the staged copy of a stream in its place, unless the stream gained an entry since it was
 * copied (its last id is no longer `ARGV[1]`): the copy takes the stream's counters first (last
 * id, entries added, greatest id trimmed; the last two are Redis 7's), so a position trimmed past
 * is still told apart. Returns 1 when swapped.
 */
const SWAP_STREAM = script("gmSwapStream", `
local info = redis.call('XINFO', 'STREAM', KEYS[1])
local f = {}
for i = 1, #info, 2 do f[info[i]] = info[i + 1] end
if f['last-generated-id'] ~= ARGV[1] then return 0 end
if f['entries-added'] then
  redis.call('XSETID', KEYS[2], f['last-generated-id'], 'ENTRIESADDED', f['entries-added'], 'MAXDELETEDID', f['max-deleted-entry-id'])
else
  redis.call('XSETID', KEYS[2], f['last-generated-id'])
end
redis.call('RENAME', KEYS[2], KEYS[1])
redis.call('PERSIST', KEYS[1])
return 1
`, { replicated: true })

/** Entries copied per step of `rewriteEvents`. */
const COPY_CHUNK = 1000
/**
 * How long a staging copy outlives the last step that wrote to it, ms: the copy of an upgrade
 * that stopped part-way (its process died) holds the text it was replacing, and goes with it.
 */
const STAGING_TTL_MS = 60_000

/**
 * Rewrites the events of stream `tag` that `rewrite` changes (it returns `undefined` for the
 * others), keeping every entry's id and the stream's counters: a stream entry cannot be edited,
 * so the stream is copied, rewritten, into a staging key of this call's own under its hash tag
 * (processes opening together each copy) and swapped in at once (`SWAP_STREAM`). A write that
 * logs an event meanwhile makes the copy start over, at most `BATCH_ATTEMPTS` times. Returns how
 * many events were rewritten. Use inside `RedisClient.run`.
 */
export const rewriteEvents = async (
  client: RedisClient,
  tag: (typeof STREAMS)[number],
  rewrite: (event: MarketEvent) => MarketEvent | undefined
): Promise<number> => {
  const key = eventStreamKey(client, tag)
  const staging = client.keys.key(tag, "events", "rewrite", randomBytes(8).toString("hex"))
  const { redis } = client
  for (let n = 0; n < BATCH_ATTEMPTS; n++) {
    await redis.del(staging)
    let after: string | undefined
    let rewritten = 0
    for (;;) {
      const entries = await redis.xrange(key, after === undefined ? "-" : `(${after}`, "+", "COUNT", COPY_CHUNK)
      if (entries.length === 0) break
      const pipeline = redis.pipeline()
      for (const [id, fields] of entries) {
        const text = fields[fields.indexOf("e") + 1]!
        const event = rewrite(JSON.parse(text) as MarketEvent)
        if (event !== undefined) rewritten++
        pipeline.xadd(staging, id, "e", event === undefined ? text : JSON.stringify(event))
      }
      await replies(pipeline.pexpire(staging, STAGING_TTL_MS))
      after = entries[entries.length - 1]![0]
    }
    if (rewritten === 0 || after === undefined) {
      await redis.del(staging)
      return 0
    }
    if (await client.evalScript(SWAP_STREAM, [key, staging], [after]) === 1) {
      await client.acknowledged(key)
      return rewritten
    }
  }
  throw new Error(`${key} kept gaining events while it was rewritten`)
}

const STREAM_ID = /^(0|[1-9]\d{0,19})-(0|[1-9]\d{0,19})$/

/** Orders two stream ids (`<ms>-<seq>`, no leading zeros). */
const compareIds = (a: string, b: string): number => {
  const [am, as] = a.split("-") as [string, string]
  const [bm, bs] = b.split("-") as [string, string]
  return am.length - bm.length || (am < bm ? -1 : am > bm ? 1 : 0) || as.length - bs.length || (as < bs ? -1 : as > bs ? 1 : 0)
}

const partsOf = (position: string): Array<string> => position.split("_")

/** Positions as one stream id per data type's stream. */
const streamPositions: EventPositions = {
  start: STREAMS.map(() => "0-0").join("_"),
  parse: (text) => {
    const parts = partsOf(text)
    return parts.length === STREAMS.length && parts.every((p) => STREAM_ID.test(p)) ? text : undefined
  },
  covers: (position, event) => compareIds(event.id, partsOf(position)[STREAM_OF[event.event.type]]!) <= 0,
  advance: (position, event) => {
    const parts = partsOf(position)
    const at = STREAM_OF[event.event.type]
    if (compareIds(event.id, parts[at]!) > 0) parts[at] = event.id
    return parts.join("_")
  }
}

type StreamReply = Array<[string, Array<[string, Array<string>]>]> | null

/** The entries of an XREAD reply, merged across streams in id order, at most `limit`. */
const merged = (keys: ReadonlyArray<string>, reply: StreamReply, limit: number): Array<LoggedEvent> => {
  const out: Array<LoggedEvent> = []
  for (const [key, entries] of reply ?? []) {
    if (!keys.includes(key)) continue
    for (const [id, fields] of entries) {
      const at = fields.indexOf("e")
      out.push({ id, event: JSON.parse(fields[at + 1]!) as MarketEvent })
    }
  }
  return out.sort((a, b) => compareIds(a.id, b.id) || STREAM_OF[a.event.type] - STREAM_OF[b.event.type]).slice(0, limit)
}

/** How long one blocking read of the follower waits for news before it asks again, in ms. */
const BLOCK_MS = 5000
/** On a Cluster: how long a follower that found nothing waits before it reads again, in ms. */
const CLUSTER_POLL_MS = 200

/**
 * The event log over `client`. A blocking read holds its connection, so `follow` reads on a
 * connection of its own, opened on first use and closed with the scope; the shared connection's
 * command timeout does not apply to it (its own is the block time and a margin).
 */
export const makeEventLogStore = (client: RedisClient): Effect.Effect<EventLogStore["Type"], never, Scope.Scope> =>
  Effect.gen(function* () {
    const keys = STREAMS.map((tag) => eventStreamKey(client, tag))
    const cluster = client.redis.isCluster
    let blocking: Redis | undefined
    yield* Effect.addFinalizer(() => Effect.sync(() => blocking?.disconnect()))
    const follower = async (): Promise<Redis> => {
      if (blocking !== undefined) return blocking
      const redis = (client.redis as Redis).duplicate({ commandTimeout: BLOCK_MS + 2000 })
      redis.on("error", () => {})
      try {
        await redis.connect()
      } catch (e) {
        redis.disconnect()
        throw e
      }
      return blocking = redis
    }

    /**
     * Per stream: its last id handed out, and the first id it still holds when it lost entries
     * to trimming (`undefined` when it lost none or has no stream; `null` when trimming emptied
     * it). Redis does not say which id was trimmed last, so a position before the first kept
     * entry counts as trimmed past, even the one exactly at the last entry trimmed.
     */
    const bounds = async (): Promise<Array<{ readonly last: string; readonly kept: string | null | undefined }>> => {
      // A command per stream: on a Cluster they live in different slots.
      const replies = await Promise.all(keys.map((key) =>
        client.redis.xinfo("STREAM", key).then((reply) => [null, reply] as const, (error: unknown) => [error, null] as const)))
      return replies.map(([error, reply]) => {
        // No such key: a stream nothing was logged in yet.
        if (error !== null || !Array.isArray(reply)) return { last: "0-0", kept: undefined }
        const field = (name: string): unknown => {
          const i = (reply as Array<unknown>).indexOf(name)
          return i < 0 ? undefined : (reply as Array<unknown>)[i + 1]
        }
        const last = String(field("last-generated-id"))
        // `entries-added` is Redis 7's; an older server does not say, and a trim goes unnoticed.
        const added = Number(field("entries-added") ?? 0), length = Number(field("length") ?? 0)
        if (added <= length) return { last, kept: undefined }
        const first = field("first-entry")
        return { last, kept: Array.isArray(first) ? String(first[0]) : null }
      })
    }

    const read = (position: string, limit: number) =>
      Effect.flatMap(client.run("events.read", async () => {
        const parts = partsOf(position)
        const known = await bounds()
        // Past the last id (another store's position), or before what trimming kept (emptied: before the last id).
        const lost = known.some((b, i) =>
          compareIds(parts[i]!, b.last) > 0 || (b.kept !== undefined && compareIds(parts[i]!, b.kept ?? b.last) < 0))
        if (lost) return new EventLogTrimmed({ position })
        return merged(keys, await readAfter(parts, limit), limit)
      }), (r) => (r instanceof EventLogTrimmed ? Effect.fail(r) : Effect.succeed(r)))

    /** Up to `limit` entries of each stream after its part of a position: one XREAD, or one per stream on a Cluster. */
    const readAfter = async (parts: ReadonlyArray<string>, limit: number): Promise<StreamReply> => {
      if (!cluster) return await client.redis.xread("COUNT", limit, "STREAMS", ...keys, ...parts)
      const replies = await Promise.all(keys.map((key, i) => client.redis.xread("COUNT", limit, "STREAMS", key, parts[i]!) as Promise<StreamReply>))
      return replies.flatMap((reply) => reply ?? [])
    }

    return {
      positions: streamPositions,
      head: client.run("events.head", async () => (await bounds()).map((b) => b.last).join("_")),
      read,
      // `read` (which tells a position trimmed past), and when it finds nothing, a wait for news:
      // the follower then reads again. The blocking XREAD only waits; what it answers is read again
      // by `read`, so a follower that fell behind the retention is never carried past a gap.
      follow: (position, limit) =>
        Effect.flatMap(read(position, limit), (found) => found.length > 0 ? Effect.succeed(found) : Effect.as(
          client.run("events.follow", async () => {
            if (cluster) await sleep(CLUSTER_POLL_MS)
            else await (await follower()).xread("COUNT", 1, "BLOCK", BLOCK_MS, "STREAMS", ...keys, ...partsOf(position))
          }),
          []
        ))
    }
  })
