import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import type { Started } from "./support/process"
import { type RedisServer, startRedis, uniquePrefix } from "./support/redis"
import {
  type Answer, assertExactRateLimit, assertFeedKept, burstTokens,
  get, issue, LATEST, principal, startFeed, startServer, until
} from "./support/redis-serving"

/**
 * Two `npm start` processes serving from one redis-server (kept with an fsynced append-only
 * file, so a kill loses nothing acknowledged): together they hold a client to exactly its rate
 * limit, and when Redis is killed under load they answer 503 at once, recover by themselves
 * when it returns, and every acknowledged write of a third process is there exactly once.
 * Real time and real processes throughout.
 */

const LIMIT = 25
const WRITER_VENDOR = "v-writer"
const BATCH_SIZE = 40

let redis: RedisServer
let prefix: string
let servers: Array<Started & { readonly base: string }> = []
const env = () => ({ GPU_MARKET_REDIS_URL: redis.url, GPU_MARKET_REDIS_PREFIX: prefix })

describe("two processes on one Redis", () => {
  beforeAll(async () => {
    redis = await startRedis({ persistent: true })
    prefix = uniquePrefix("processes")
    await issue({ url: redis.url, prefix }, [["reader", principal("t-reader", 1_000_000)], ...burstTokens(LIMIT)])
    servers = await Promise.all([startServer(env()), startServer(env())])
  }, 240_000)

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()))
    await redis?.stop()
  }, 60_000)

  it("rate limits hold exactly across both processes under a concurrent burst", { timeout: 120_000 }, () =>
    assertExactRateLimit(servers.map((s) => s.base), LIMIT))

  it("Redis killed under load: quick 503s, recovery without restarts, every acknowledged batch exactly once", { timeout: 180_000 }, async () => {
    const feed = startFeed(env(), WRITER_VENDOR, BATCH_SIZE)
    try {
      await until("the writer's first batches", () => feed.acked().length >= 10, 60_000)

      // Readers on both servers for the whole outage.
      const answers: Array<Answer & { readonly at: number; readonly server: number }> = []
      let reading = true
      const readers = servers.map(async (s, server) => {
        while (reading) answers.push({ ...(await get(s.base + LATEST, "reader")), at: Date.now(), server })
      })
      await until("readers served", () => answers.filter((a) => a.status === 200).length >= 4, 10_000)

      await redis.kill()
      const killedAt = Date.now()
      const served = (since: number, status: number, count: number) => (server: number) =>
        answers.filter((a) => a.server === server && a.at > since && a.status === status).length >= count
      await until("503s from each server and a failed write", () => [0, 1].every(served(killedAt, 503, 10)) && /^retry /m.test(feed.log()), 10_000)
      const down = answers.filter((a) => a.at > killedAt + 100)
      assert.isTrue(down.every((a) => a.status === 503 && a.code === "storage_unavailable"), JSON.stringify(down.find((a) => a.status !== 503)?.body))
      assert.isBelow(Math.max(...down.map((a) => a.ms)), 3000, "fails fast, no hang")

      const ackedBeforeRestart = feed.acked().length
      await redis.restart()
      const restartedAt = Date.now()
      await until("both servers serve again", () => [0, 1].every(served(restartedAt, 200, 2)), 20_000)
      await until("the writer writes again", () => feed.acked().length >= ackedBeforeRestart + 10, 20_000)
      reading = false
      await Promise.all(readers)

      assert.strictEqual(await feed.finish(), 0, feed.log())
      assert.match(feed.log(), /^done$/m)
    } finally {
      feed.kill()
    }

    // Every row of the feed, through one server: a batch is all there or not at all; acknowledged ones are all there, once.
    await assertFeedKept(servers[0]!.base, "reader", WRITER_VENDOR, BATCH_SIZE, feed.acked())
  })
})
