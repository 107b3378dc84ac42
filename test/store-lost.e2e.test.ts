import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Auth, createMarket, type Principal } from "@gpu-market/core"
import * as RedisStorage from "@gpu-market/storage-redis"
import { sqlite } from "@gpu-market/storage-sqlite"
import { Effect } from "effect"
import { copyFileSync, renameSync } from "node:fs"
import { join } from "node:path"
import { tempDb } from "./support/adapters"
import { TOKENS } from "./support/market"
import { freePort, type Started, startUntil, until } from "./support/process"
import { type RedisServer, startRedis, uniquePrefix } from "./support/redis"

/**
 * A store lost under a running server. A Redis that comes back empty (restarted without
 * persistence, as a cache-configured Redis does, or flushed) takes the tokens and the data with
 * it: every data call is then a 401, so `/readyz` must say the store is gone, and an orchestrator
 * stop routing to the server. A Redis that keeps its data through a restart is the same store,
 * and ready again. A SQLite file deleted or replaced under the server is still the file the
 * server reads, and no other process's: not ready either.
 */

const ROOT = join(import.meta.dirname, "..")
const BIN = join(ROOT, "node_modules/.bin/gpu-market")
const SECRET = "lost-token"
const PRINCIPAL: Principal = { ...TOKENS.all, id: "t-lost" as Principal["id"], name: "lost" }
const PAGE = "/v2/gpu/rental/prices/metadata"

interface Served {
  readonly redis: RedisServer
  readonly prefix: string
  readonly server: Started
  readonly get: (path: string) => Promise<{ readonly status: number; readonly contentType: string | null; readonly body: string }>
}

/** Issues the token into `prefix` (opening the store as any process does), the way an operator's tooling would. */
const issue = (redis: RedisServer, prefix: string) =>
  Effect.runPromise(Effect.flatMap(Auth, (auth) => auth.issue(PRINCIPAL, SECRET)).pipe(
    Effect.provide(Auth.Default),
    Effect.provide(RedisStorage.layer({ url: redis.url, prefix }))
  ))

/** `gpu-market serve` on the store `args` name. */
const serveOn = async (args: ReadonlyArray<string>) => {
  const port = await freePort()
  const server = await startUntil(BIN, ["serve", ...args, "--port", String(port)], {
    cwd: ROOT, env: { ...process.env, NO_COLOR: "1", GPU_MARKET_REDIS_URL: "" }, ready: /listening on/, timeoutMs: 60_000
  })
  const get = async (path: string) => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { authorization: `Bearer ${SECRET}` } })
    return { status: response.status, contentType: response.headers.get("content-type"), body: await response.text() }
  }
  return { server, get }
}

/** `gpu-market serve` on a Redis store set up with the token. */
const serve = async (redis: RedisServer): Promise<Omit<Served, "redis">> => {
  const prefix = uniquePrefix("lost")
  await issue(redis, prefix)
  return { prefix, ...await serveOn(["--redis", redis.url, "--redis-prefix", prefix]) }
}

/** A SQLite file set up with the token. */
const sqliteStore = async () => {
  const db = tempDb("lost")
  const market = await createMarket({ storage: sqlite(db) })
  try {
    await market.tokens.create(PRINCIPAL, SECRET)
  } finally {
    await market.close()
  }
  return db
}

/** The problem `/readyz` answers, which must be a 503 `storage_unavailable`. */
const notReady = (reply: { readonly status: number; readonly contentType: string | null; readonly body: string }) => {
  assert.strictEqual(reply.status, 503, reply.body)
  assert.strictEqual(reply.contentType, "application/problem+json")
  const problem = JSON.parse(reply.body) as { type: string; status: number; code: string; detail: string; request_id: string }
  assert.deepStrictEqual([problem.type, problem.status, problem.code], ["/problems/storage_unavailable", 503, "storage_unavailable"])
  assert.match(problem.request_id, /^[0-9a-f-]{36}$/)
  return problem.detail
}

describe("/readyz and a Redis that lost its data", () => {
  let lost: Served | undefined
  let kept: Served | undefined

  beforeAll(async () => {
    const [cache, persistent] = await Promise.all([startRedis(), startRedis({ persistent: true })])
    lost = { redis: cache, ...await serve(cache) }
    kept = { redis: persistent, ...await serve(persistent) }
  }, 120_000)

  afterAll(async () => {
    for (const served of [lost, kept]) {
      await served?.server.stop()
      await served?.redis.stop()
    }
  }, 60_000)

  it("restarted empty: /readyz is a 503 problem that says the store lost its data, and stays so when it is set up again", async () => {
    const { redis, prefix, get } = lost!
    assert.strictEqual((await get("/readyz")).status, 200)
    assert.strictEqual((await get(PAGE)).status, 200)
    await redis.restart()
    // Unavailable (503) while the connection comes back, then ready no more: the mark is missed.
    let ready = await get("/readyz")
    await until("/readyz to name the loss", async () => (ready = await get("/readyz")).body.includes("lost its data"), 15_000)
    assert.include(notReady(ready), "the Redis store has lost its data")
    // What the probe saves callers from: the token is gone with the rest. The server wrote nothing back.
    assert.strictEqual((await get(PAGE)).status, 401)
    assert.strictEqual((await get("/healthz")).status, 200, "the process itself is fine")

    // Set up again by another process (a token issued): a new store to the server, which still holds the old one's secrets.
    await issue(redis, prefix)
    assert.strictEqual((await get(PAGE)).status, 200)
    assert.include(notReady(await get("/readyz")), "set up again since this server opened it")
  }, 60_000)

  it("restarted with its data: the same store, ready again", async () => {
    const { redis, get } = kept!
    assert.strictEqual((await get("/readyz")).status, 200)
    await redis.restart()
    await until("/readyz 200 after the restart", async () => (await get("/readyz")).status === 200, 15_000)
    assert.strictEqual((await get(PAGE)).status, 200)
  }, 60_000)
})

describe("/readyz and a SQLite file deleted or replaced under the server", () => {
  let db: string
  let served: Awaited<ReturnType<typeof serveOn>> | undefined

  beforeAll(async () => {
    db = await sqliteStore()
    served = await serveOn(["--db", db])
  }, 120_000)

  afterAll(() => served?.server.stop(), 60_000)

  it("ready while the file is the one it opened; deleted: 503 naming it; another file put in its place: 503 naming that", async () => {
    const { get } = served!
    assert.strictEqual((await get("/readyz")).status, 200)
    // A copy is another file, however alike: what a restore from a backup puts in place.
    const backup = `${db}.backup`
    copyFileSync(db, backup)
    assert.strictEqual((await get("/readyz")).status, 200, "a copy elsewhere changes nothing")
    renameSync(db, `${db}.moved`)
    assert.include(notReady(await get("/readyz")), "the SQLite database file was deleted under the server")
    // The server still answers from the file it holds open, which is no longer anyone else's.
    assert.strictEqual((await get(PAGE)).status, 200)
    renameSync(backup, db)
    assert.include(notReady(await get("/readyz")), "the SQLite database file was replaced under the server")
  }, 60_000)
})
