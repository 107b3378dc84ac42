import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { StorageError } from "@gpu-market/core"
import { MAX_ROWS_PER_WRITE } from "@gpu-market/core/storage"
import { make, makeClient } from "../packages/storage-redis/src/internal"
import type { Started } from "./support/process"
import { uniquePrefix } from "./support/redis"
import { type Answer, assertFeedKept, get, issue, LATEST, principal, startFeed, startServer, until } from "./support/redis-serving"
import { type SentinelGroup, startSentinelGroup } from "./support/redis-topologies"

/**
 * The Redis backend through Sentinel, on a real primary with two replicas and three sentinels
 * (loopback, started once for the file): an `npm start` process reads the stale-tolerant data
 * from a replica, and when the primary is killed under a steady write and read load it answers
 * 503 only until the sentinels promote a replica, then serves again by itself; with writes
 * acknowledged by a replica (`GPU_MARKET_REDIS_REPLICAS_TO_ACK=1`), none acknowledged a second
 * before the kill is lost. One acknowledged in the last moments may be: the sentinels promote the
 * replica with the most data as of their last look, and the other may have been the one that
 * acknowledged it (seen once in CI: a batch's first write kept, its later three lost). Each
 * write is still atomic.
 */

const VENDOR = "v-failover"
const BATCH_SIZE = 40

let group: SentinelGroup
let server: Started & { readonly base: string }
const prefix = uniquePrefix("sentinel")
const env = () => ({
  GPU_MARKET_REDIS_SENTINELS: group.sentinels.join(","), GPU_MARKET_REDIS_SENTINEL_NAME: group.name, GPU_MARKET_REDIS_PREFIX: prefix,
  GPU_MARKET_REDIS_READ_FROM_REPLICAS: "1", GPU_MARKET_REDIS_REPLICAS_TO_ACK: "1"
})
const options = () => ({ sentinels: group.sentinels, sentinelName: group.name, prefix, replicasToAck: 1 })

/** The role (`master` / `slave`) and port of what the backend's connections reach. */
const roles = () => Effect.runPromise(Effect.scoped(Effect.gen(function* () {
  const client = yield* makeClient({ ...options(), readFromReplicas: true })
  const roleOf = (redis: typeof client.redis) => Effect.promise(async () => ({
    role: ((await redis.call("ROLE")) as Array<unknown>)[0] as string,
    port: Number(/tcp_port:(\d+)/.exec(await redis.info("server"))![1])
  }))
  return { primary: yield* roleOf(client.redis), replica: yield* roleOf(client.stale.redis) }
})))

describe("Sentinel: a primary, two replicas, three sentinels", () => {
  beforeAll(async () => {
    group = await startSentinelGroup(2, 3, "market")
    await issue(options(), [["reader", principal("t-reader", 1_000_000)]])
    server = await startServer(env())
  }, 240_000)
  afterAll(async () => {
    await server?.stop()
    await group?.stop()
  }, 60_000)

  it("writes go to the primary the sentinels name, stale-tolerant reads to a replica", async () => {
    const { primary, replica } = await roles()
    assert.deepStrictEqual(primary, { role: "master", port: group.primary.port })
    assert.strictEqual(replica.role, "slave")
    assert.include(group.replicas.map((r) => r.port), replica.port)
  })

  it("a write is acknowledged once the replicas asked for hold it, and fails (503) when fewer can", async () => {
    const set = (replicasToAck: number) => Effect.runPromise(Effect.scoped(Effect.flatMap(
      make({ ...options(), replicasToAck, replicaAckTimeoutMs: 300 }),
      (stores) => Effect.either(stores.settingsStore.set(`ack-${replicasToAck}`, "kept"))
    )))
    assert.strictEqual((await set(2))._tag, "Right", "both replicas hold it")
    const refused = await set(3)
    assert.strictEqual(refused._tag, "Left")
    if (refused._tag === "Left") {
      assert.instanceOf(refused.left, StorageError)
      assert.match(String((refused.left.cause as Error).message), /reached 2 of 3 replicas/)
    }
  })

  it("primary killed under load: 503 only until a replica is promoted, then served again; no acknowledged write lost", { timeout: 120_000 }, async () => {
    const feed = startFeed(env(), VENDOR, BATCH_SIZE)
    let settled: ReadonlyArray<number> = []
    try {
      await until("the writer's first batches", () => feed.acked().length >= 10, 60_000)
      const answers: Array<Answer & { readonly at: number }> = []
      let reading = true
      // A refused connection is an answer too (status 0): the server must never stop listening.
      const reader = (async () => {
        while (reading) {
          const answer = await get(server.base + LATEST, "reader").catch((e: unknown): Answer => ({ status: 0, code: String(e), remaining: null, ms: 0, body: undefined }))
          answers.push({ ...answer, at: Date.now() })
        }
      })()
      await until("reads served", () => answers.filter((a) => a.status === 200).length >= 10, 10_000)

      // Batches acknowledged a second before the kill: both replicas hold them by then.
      settled = feed.acked()
      await new Promise((resolve) => setTimeout(resolve, 1000))
      group.primary.kill()
      const killedAt = Date.now()
      await until("a replica promoted", async () => (await group.currentPrimary()) !== group.primary.address, 30_000)
      const promotedAt = Date.now()
      await until("served again", () => answers.some((a) => a.at > promotedAt && a.status === 200), 30_000)
      const ackedAfterFailover = feed.acked().length
      await until("the writer writes again", () => feed.acked().length >= ackedAfterFailover + 10, 30_000)
      // Served steadily again: the last 20 reads all answered.
      await until("served steadily", () => answers.length >= 20 && answers.slice(-20).every((a) => a.status === 200), 30_000)
      reading = false
      await reader

      const after = answers.filter((a) => a.at > killedAt)
      const failed = after.filter((a) => a.status !== 200)
      const serverLog = () => server.output().split("\n").filter((l) => !l.includes('"msg":"request"')).slice(-30).join("\n")
      assert.isTrue(failed.every((a) => a.status === 503 && a.code === "storage_unavailable"),
        `${JSON.stringify(failed.find((a) => a.status !== 503 || a.code !== "storage_unavailable"))}\n${serverLog()}`)
      assert.isAbove(failed.length, 0, "the outage was seen")
      // The gap: from the kill to the first page served after the outage began.
      const recovered = after.find((a) => a.at > failed[0]!.at && a.status === 200)!.at
      const gap = recovered - killedAt
      // Later outages: runs of 503s after the first recovery (a connection that breaks once more
      // while the sentinels reconfigure the replicas; each costs at most a breaker probe).
      const later: Array<number> = []
      let since: number | undefined
      for (const a of after.filter((a) => a.at > recovered)) {
        if (a.status !== 200) since ??= a.at
        else if (since !== undefined) {
          later.push(a.at - since)
          since = undefined
        }
      }
      console.log(`failover: promoted after ${promotedAt - killedAt} ms; 503s for ${gap} ms; ${failed.length} of ${after.length} reads failed; later outages ${JSON.stringify(later)} ms`)
      // Sentinel calls the primary down after 1 s and promotes within a few more.
      assert.isBelow(gap, 10_000, serverLog())
      for (const ms of later) assert.isBelow(ms, 3000, serverLog())
      // No hang while the primary was gone: every answer within the command timeout and a margin.
      assert.isBelow(Math.max(...failed.map((a) => a.ms)), 3000)
      assert.strictEqual(await feed.finish(), 0, feed.log())
    } finally {
      feed.kill()
    }
    // A write of new products holds as many as fit MAX_ROWS_PER_WRITE rows, counting a row for each and one per product.
    await assertFeedKept(server.base, "reader", VENDOR, BATCH_SIZE, settled, Math.floor(MAX_ROWS_PER_WRITE / 2))
    const { primary } = await roles()
    assert.strictEqual(primary.role, "master")
    assert.notStrictEqual(primary.port, group.primary.port, "the service follows the new primary")
  })
})
