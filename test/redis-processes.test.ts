import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Auth, type Principal } from "@gpu-market/core"
import * as RedisStorage from "@gpu-market/storage-redis"
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { resolve } from "node:path"
import { TOKENS } from "./support/market"
import { freePort, type Started, startUntil } from "./support/process"
import { type RedisServer, startRedis, uniquePrefix } from "./support/redis"

/**
 * Two `npm start` processes serving from one redis-server (kept with an fsynced append-only
 * file, so a kill loses nothing acknowledged): together they hold a client to exactly its rate
 * limit, and when Redis is killed under load they answer 503 at once, recover by themselves
 * when it returns, and every acknowledged write of a third process is there exactly once.
 * Real time and real processes throughout.
 */

const ROOT = resolve(import.meta.dirname, "..")
const LIMIT = 25
const LATEST = "/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm&page_size=5"
const WRITER_VENDOR = "v-writer"
const BATCH_SIZE = 40

let redis: RedisServer
let prefix: string
let servers: Array<Started & { readonly base: string }> = []
const env = () => ({ ...process.env, GPU_MARKET_REDIS_URL: redis.url, GPU_MARKET_REDIS_PREFIX: prefix })

const principal = (id: string, rate_limit_per_minute: number): Principal =>
  ({ ...TOKENS.all, id: id as Principal["id"], name: id, rate_limit_per_minute })

/** Issues tokens through the Redis token store, as an operator's tool would. */
const issue = (tokens: ReadonlyArray<[secret: string, principal: Principal]>) =>
  Effect.runPromise(Effect.forEach(tokens, ([secret, p]) => Effect.flatMap(Auth, (auth) => auth.issue(p, secret))).pipe(
    Effect.provide(Auth.Default),
    Effect.provide(RedisStorage.layer({ url: redis.url, prefix }))
  ))

const startServer = async () => {
  const port = await freePort()
  const started = await startUntil("npm", ["start", "--silent"], {
    cwd: ROOT,
    env: { ...env(), PORT: String(port), GPU_MARKET_DEMO: "0" },
    ready: /listening on http:\/\/127\.0\.0\.1:\d+/,
    timeoutMs: 120_000
  })
  return { ...started, base: `http://127.0.0.1:${port}` }
}

interface Answer {
  readonly status: number
  readonly code: string | undefined
  readonly remaining: string | null
  readonly ms: number
  readonly body: any
}
/** One GET; a hang shows as a failed test, not a stuck one. */
const get = async (url: string, token: string): Promise<Answer> => {
  const start = Date.now()
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(10_000) })
  const body = await res.json() as any
  return { status: res.status, code: body?.code, remaining: res.headers.get("x-ratelimit-remaining"), ms: Date.now() - start, body }
}

const until = async (what: string, check: () => boolean | Promise<boolean>, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

describe("two processes on one Redis", () => {
  beforeAll(async () => {
    redis = await startRedis({ persistent: true })
    prefix = uniquePrefix("processes")
    await issue([["reader", principal("t-reader", 1_000_000)], ["burst", principal("t-burst", LIMIT)]])
    servers = await Promise.all([startServer(), startServer()])
  }, 240_000)

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()))
    await redis?.stop()
  }, 60_000)

  it("rate limits hold exactly across both processes under a concurrent burst", { timeout: 120_000 }, async () => {
    // A fixed one-minute window: start the burst where it cannot straddle two windows.
    if (Date.now() % 60_000 > 45_000) await new Promise((r) => setTimeout(r, 60_000 - (Date.now() % 60_000) + 50))
    const window = Math.floor(Date.now() / 60_000)
    const answers = await Promise.all(Array.from({ length: 4 * LIMIT }, (_, i) => get(servers[i % 2]!.base + LATEST, "burst")))
    assert.strictEqual(Math.floor(Date.now() / 60_000), window, "the burst stayed inside one window")
    const ok = answers.filter((a) => a.status === 200)
    const limited = answers.filter((a) => a.status === 429)
    assert.strictEqual(ok.length, LIMIT)
    assert.strictEqual(limited.length, 3 * LIMIT)
    assert.isTrue(limited.every((a) => a.code === "rate_limited"))
    // One shared counter: each remaining budget was handed out exactly once.
    assert.deepStrictEqual(ok.map((a) => Number(a.remaining)).sort((a, b) => a - b), Array.from({ length: LIMIT }, (_, i) => i))
  })

  it("Redis killed under load: quick 503s, recovery without restarts, every acknowledged batch exactly once", { timeout: 180_000 }, async () => {
    const writer: ChildProcess = spawn(resolve(ROOT, "node_modules/.bin/tsx"), ["test/support/redis-writer.ts"], {
      cwd: ROOT, env: { ...env(), WRITER_VENDOR, WRITER_BATCH_SIZE: String(BATCH_SIZE) }, stdio: ["pipe", "pipe", "pipe"]
    })
    let log = ""
    writer.stdout!.on("data", (c: Buffer) => (log += c.toString()))
    writer.stderr!.on("data", (c: Buffer) => (log += c.toString()))
    const exited = new Promise<number | null>((done) => writer.once("exit", (code) => done(code)))
    const acked = () => [...log.matchAll(/^ack (\d+)$/gm)].map((m) => Number(m[1]))
    try {
      await until("the writer's first batches", () => acked().length >= 10, 60_000)

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
      await until("503s from each server and a failed write", () => [0, 1].every(served(killedAt, 503, 10)) && /^retry /m.test(log), 10_000)
      const down = answers.filter((a) => a.at > killedAt + 100)
      assert.isTrue(down.every((a) => a.status === 503 && a.code === "storage_unavailable"), JSON.stringify(down.find((a) => a.status !== 503)?.body))
      assert.isBelow(Math.max(...down.map((a) => a.ms)), 3000, "fails fast, no hang")

      const ackedBeforeRestart = acked().length
      await redis.restart()
      const restartedAt = Date.now()
      await until("both servers serve again", () => [0, 1].every(served(restartedAt, 200, 2)), 20_000)
      await until("the writer writes again", () => acked().length >= ackedBeforeRestart + 10, 20_000)
      reading = false
      await Promise.all(readers)

      writer.stdin!.end()
      assert.strictEqual(await exited, 0, log)
      assert.match(log, /^done$/m)
    } finally {
      writer.kill("SIGKILL")
    }

    // Every row of the feed, through one server: a batch is all there or not at all; acknowledged ones are all there, once.
    const rows: Array<any> = []
    let url: string | null = `${servers[0]!.base}/v2/gpu/rental/prices/latest?vendor=${WRITER_VENDOR}&page_size=1000`
    while (url !== null) {
      const page: Answer = await get(url, "reader")
      assert.strictEqual(page.status, 200)
      rows.push(...page.body.data)
      url = page.body.meta.next?.url ?? null
    }
    const perBatch = new Map<number, number>()
    for (const r of rows) {
      const n = Number(/^b(\d+)-/.exec(r.vendor_sku)![1])
      perBatch.set(n, (perBatch.get(n) ?? 0) + 1)
    }
    assert.strictEqual(new Set(rows.map((r) => r.product_key)).size, rows.length, "no row twice")
    for (const [n, count] of perBatch) assert.strictEqual(count, BATCH_SIZE, `batch ${n} is whole`)
    for (const n of acked()) assert.strictEqual(perBatch.get(n), BATCH_SIZE, `acknowledged batch ${n} is there`)
    assert.isAtLeast(perBatch.size, acked().length)
  })
})
