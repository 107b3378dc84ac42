import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { suite } from "@gpu-market/storage-testkit"
import * as RedisStorage from "@gpu-market/storage-redis"
import { Effect, Layer, TestClock } from "effect"
import { execFile } from "node:child_process"
import { resolve } from "node:path"
import { promisify } from "node:util"
import { assertSameEverywhere, seeded, sqliteStorage } from "./support/backends"
import { NOW_MS, seed } from "./support/market"
import type { Started } from "./support/process"
import { uniquePrefix } from "./support/redis"
import {
  type Answer, assertExactRateLimit, assertFeedKept, burstTokens,
  get, issue, LATEST, principal, ROOT, startFeed, startServer, until
} from "./support/redis-serving"
import { type RedisCluster, redisCli, startCluster } from "./support/redis-topologies"

/**
 * The Redis backend on a real 3-master Redis Cluster (`redis-cli --cluster create` on loopback),
 * started once for the file: the core conformance suite passes on it; the foundation's rental
 * API answers on it exactly as on SQLite, page by page; two `npm start` processes on it hold a
 * client to exactly its rate limit; and while slots move between masters under a steady write
 * and read load (`redis-cli --cluster reshard`), every request succeeds and nothing is lost.
 */

let cluster: RedisCluster
beforeAll(async () => {
  cluster = await startCluster(3)
}, 60_000)
afterAll(() => cluster?.stop(), 30_000)

const onCluster = (label: string) => ({ cluster: cluster.seeds, prefix: uniquePrefix(label) })
const clusterStorage = (label: string) => Layer.unwrapEffect(Effect.sync(() => RedisStorage.layer(onCluster(label))))

suite("redis cluster", clusterStorage("conformance"))

describe("the foundation's HTTP API on a Cluster", () => {
  it.scoped("every rental endpoint answers as on SQLite, page by page, problems included", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(NOW_MS)
      const backends = yield* Effect.all({
        sqlite: Layer.build(seeded(sqliteStorage, seed)),
        cluster: Layer.build(seeded(clusterStorage("foundation"), seed))
      })
      const paths = [
        "/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm&page_size=7",
        "/v2/gpu/rental/prices/latest?vendor=v-alpha,v-beta&sort_by=price_usd_per_gpu_hour&sort_order=desc&page_size=9",
        "/v2/gpu/rental/prices/latest?gpu_search=tesla%20v100",
        "/v2/gpu/rental/prices/as-of?vendor=v-beta&at=2026-05-19T23:59:59Z&page_size=4",
        "/v2/gpu/rental/prices/as-of?gpu_canonical_name=v100&at=2026-06-01",
        "/v2/gpu/rental/prices/history?start=2026-05-01&page_size=250",
        "/v2/gpu/rental/prices/history?start=2026-05-01&sort_by=price_usd_per_gpu_hour&sort_order=asc&vendor=v-gamma&page_size=40",
        "/v2/gpu/rental/prices/metadata",
        // Problems: a missing anchor, an unknown parameter, a bad token.
        "/v2/gpu/rental/prices/as-of?at=2026-06-01",
        "/v2/gpu/rental/prices/latest?x=1",
        "/v2/gpu/rental/prices/latest?page_token=%00%01"
      ]
      let rows = 0
      for (const path of paths) rows += (yield* assertSameEverywhere(backends, path)).length
      assert.isAbove(rows, 200, "the pages held rows")
      const unauthorised = yield* assertSameEverywhere(backends, "/v2/gpu/rental/prices/latest?vendor=v-alpha", "no-such-token")
      assert.deepStrictEqual(unauthorised, [])
    }), { timeout: 120_000 })
})

describe("two processes on a Cluster", () => {
  const LIMIT = 25
  const VENDOR = "v-reshard"
  const BATCH_SIZE = 40
  let options: RedisStorage.RedisOptions
  let servers: Array<Started & { readonly base: string }> = []
  const env = () => ({ GPU_MARKET_REDIS_CLUSTER_NODES: cluster.seeds.join(","), GPU_MARKET_REDIS_PREFIX: options.prefix! })

  beforeAll(async () => {
    options = onCluster("processes")
    await issue(options, [["reader", principal("t-reader", 1_000_000)], ...burstTokens(LIMIT)])
    servers = await Promise.all([startServer(env()), startServer(env())])
  }, 240_000)
  afterAll(() => Promise.all(servers.map((s) => s.stop())), 60_000)

  it("rate limits hold exactly across both processes under a concurrent burst", { timeout: 120_000 }, () =>
    assertExactRateLimit(servers.map((s) => s.base), LIMIT))

  it("the CLI's --redis-cluster reads the same market, replacing the environment's Redis", { timeout: 60_000 }, async () => {
    const { stdout } = await promisify(execFile)(resolve(ROOT, "node_modules/.bin/gpu-market"), [
      "tokens", "list", "--redis-cluster", cluster.seeds.join(","), "--redis-prefix", options.prefix!
    ], { env: { ...process.env, GPU_MARKET_REDIS_URL: "redis://127.0.0.1:1" }, encoding: "utf8", timeout: 60_000 })
    assert.deepStrictEqual(stdout.split("\n").filter((l) => l !== "").map((l) => l.split(" ")[0]).sort(), ["t-burst", "t-burst-again", "t-reader"])
  })

  it("slots resharded under load: every request succeeds, every acknowledged batch is there once", { timeout: 120_000 }, async () => {
    const slot = Number(await redisCli(["-p", String(cluster.masters[0]!.port), "cluster", "keyslot", `${options.prefix}:{rental}:rows`]))
    const rangeOf = async () => (await cluster.ranges()).find((r) => r.from <= slot && slot <= r.to)!
    const before = await rangeOf()
    const source = cluster.masters.find((m) => m.port === before.port)!
    const target = cluster.masters.find((m) => m.port !== before.port)!
    const feed = startFeed(env(), VENDOR, BATCH_SIZE)
    try {
      await until("the writer's first batches", () => feed.acked().length >= 5, 60_000)
      const answers: Array<Answer> = []
      let reading = true
      const readers = servers.map(async (s) => {
        while (reading) answers.push(await get(s.base + LATEST, "reader"))
      })
      // redis-cli moves a source's slots lowest first: as many as reach the rental slot, whose
      // keys (every rental row and index) move while the feed writes and the servers read them.
      const ackedBefore = feed.acked().length, readBefore = answers.length
      const moving = Date.now()
      await cluster.reshard(source, target, slot - before.from + 1)
      const moved = Date.now()
      assert.strictEqual((await rangeOf()).port, target.port, "the rental slot moved")
      const ackedAfter = feed.acked().length
      console.log(`reshard: ${moved - moving} ms, ${ackedAfter - ackedBefore} batches and ${answers.length - readBefore} reads during it`)
      assert.isAbove(ackedAfter, ackedBefore, "batches were written while the slots moved")
      assert.isAbove(answers.length, readBefore, "pages were read while the slots moved")
      await until("more batches after the move", () => feed.acked().length >= ackedAfter + 5, 30_000)
      reading = false
      await Promise.all(readers)
      assert.strictEqual(await feed.finish(), 0, feed.log())
      assert.notMatch(feed.log(), /^retry /m, "no write failed")
      assert.isAbove(answers.length, 20)
      assert.isTrue(answers.every((a) => a.status === 200), JSON.stringify(answers.find((a) => a.status !== 200)?.body))
    } finally {
      feed.kill()
    }
    await assertFeedKept(servers[0]!.base, "reader", VENDOR, BATCH_SIZE, feed.acked())
  })
})
