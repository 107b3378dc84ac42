import { assert } from "@effect/vitest"
import { Auth, type Principal } from "@gpu-market/core"
import * as RedisStorage from "@gpu-market/storage-redis"
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { resolve } from "node:path"
import { TOKENS } from "./market"
import { freePort, type Started, startUntil } from "./process"

export { until } from "./process"

/**
 * Real `npm start` processes, a rental feed process, and HTTP clients, for the tests that serve
 * one market from Redis (one server, a Cluster, Sentinel) with several processes.
 */

export const ROOT = resolve(import.meta.dirname, "../..")
export const LATEST = "/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm&page_size=5"

/** A principal with every grant and `rate_limit_per_minute`. */
export const principal = (id: string, rate_limit_per_minute: number): Principal =>
  ({ ...TOKENS.all, id: id as Principal["id"], name: id, rate_limit_per_minute })

/** Issues tokens through the Redis token store, as an operator's tool would. */
export const issue = (options: RedisStorage.RedisOptions, tokens: ReadonlyArray<[secret: string, principal: Principal]>) =>
  Effect.runPromise(Effect.forEach(tokens, ([secret, p]) => Effect.flatMap(Auth, (auth) => auth.issue(p, secret))).pipe(
    Effect.provide(Auth.Default),
    Effect.provide(RedisStorage.layer(options))
  ))

/** An `npm start` on a free port with `env` (the Redis variables), without the demo market. */
export const startServer = async (env: NodeJS.ProcessEnv): Promise<Started & { readonly base: string }> => {
  const port = await freePort()
  const started = await startUntil("npm", ["start", "--silent"], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port), GPU_MARKET_DEMO: "0" },
    ready: /listening on http:\/\/127\.0\.0\.1:\d+/,
    timeoutMs: 120_000
  })
  return { ...started, base: `http://127.0.0.1:${port}` }
}

export interface Answer {
  readonly status: number
  readonly code: string | undefined
  readonly remaining: string | null
  readonly ms: number
  readonly body: any
}

/** One GET; a hang shows as a failed test, not a stuck one. */
export const get = async (url: string, token: string): Promise<Answer> => {
  const start = Date.now()
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(10_000) })
  const body = await res.json() as any
  return { status: res.status, code: body?.code, remaining: res.headers.get("x-ratelimit-remaining"), ms: Date.now() - start, body }
}

/** The two principals `assertExactRateLimit` bursts with, each limited to `limit` a minute, to issue beside the others. */
export const burstTokens = (limit: number): ReadonlyArray<[secret: string, principal: Principal]> =>
  [["burst", principal("t-burst", limit)], ["burst-again", principal("t-burst-again", limit)]]

/**
 * `4 × limit` concurrent GETs spread over `bases` with the token of a principal limited to `limit`
 * a minute (`burstTokens`): exactly `limit` pass, the rest are 429, and each remaining budget was
 * handed out once (one shared counter). A burst that straddled two of the fixed one-minute windows
 * proves nothing: it is run again at once with the other principal, in the window just begun,
 * rather than waiting for a window's start.
 */
export const assertExactRateLimit = async (bases: ReadonlyArray<string>, limit: number) => {
  for (const [secret] of burstTokens(limit)) {
    const window = Math.floor(Date.now() / 60_000)
    const answers = await Promise.all(Array.from({ length: 4 * limit }, (_, i) => get(bases[i % bases.length]! + LATEST, secret)))
    if (Math.floor(Date.now() / 60_000) !== window) continue
    const ok = answers.filter((a) => a.status === 200)
    const limited = answers.filter((a) => a.status === 429)
    assert.strictEqual(ok.length, limit)
    assert.strictEqual(limited.length, 3 * limit)
    assert.isTrue(limited.every((a) => a.code === "rate_limited"))
    assert.deepStrictEqual(ok.map((a) => Number(a.remaining)).sort((a, b) => a - b), Array.from({ length: limit }, (_, i) => i))
    return
  }
  assert.fail("both bursts straddled two windows")
}

/** A rental feed in its own process (`redis-writer.ts`): its log, acknowledged batches, and stop. */
export interface Feed {
  readonly log: () => string
  readonly acked: () => Array<number>
  /** Ends the feed after the batch in flight and resolves with its exit code. */
  readonly finish: () => Promise<number | null>
  readonly kill: () => void
}

/** Starts the feed of `vendor` in batches of `batchSize` rows with `env` (the Redis variables). */
export const startFeed = (env: NodeJS.ProcessEnv, vendor: string, batchSize: number): Feed => {
  const writer: ChildProcess = spawn(resolve(ROOT, "node_modules/.bin/tsx"), ["test/support/redis-writer.ts"], {
    cwd: ROOT, env: { ...process.env, ...env, WRITER_VENDOR: vendor, WRITER_BATCH_SIZE: String(batchSize) }, stdio: ["pipe", "pipe", "pipe"]
  })
  let log = ""
  writer.stdout!.on("data", (c: Buffer) => (log += c.toString()))
  writer.stderr!.on("data", (c: Buffer) => (log += c.toString()))
  const exited = new Promise<number | null>((done) => writer.once("exit", (code) => done(code)))
  return {
    log: () => log,
    acked: () => [...log.matchAll(/^ack (\d+)$/gm)].map((m) => Number(m[1])),
    finish: () => {
      writer.stdin!.end()
      return exited
    },
    kill: () => void writer.kill("SIGKILL")
  }
}

/**
 * Reads every row of the feed of `vendor` through `base` and asserts each batch of `batchSize`
 * is all there or not at all, no row twice, and every batch of `acked` there. With `writeSize`,
 * a batch may instead be whole writes of that many rows (a batch acknowledged just before a
 * failover whose later writes only the replica not promoted held).
 */
export const assertFeedKept = async (
  base: string, token: string, vendor: string, batchSize: number, acked: ReadonlyArray<number>, writeSize?: number
) => {
  const rows: Array<any> = []
  let url: string | null = `${base}/v2/gpu/rental/prices/latest?vendor=${vendor}&page_size=1000`
  while (url !== null) {
    const page: Answer = await get(url, token)
    assert.strictEqual(page.status, 200, JSON.stringify(page.body))
    rows.push(...page.body.data)
    url = page.body.meta.next?.url ?? null
  }
  const perBatch = new Map<number, number>()
  for (const r of rows) {
    const n = Number(/^b(\d+)-/.exec(r.vendor_sku)![1])
    perBatch.set(n, (perBatch.get(n) ?? 0) + 1)
  }
  assert.strictEqual(new Set(rows.map((r) => r.product_key)).size, rows.length, "no row twice")
  for (const [n, count] of perBatch) {
    if (writeSize === undefined || count === batchSize) assert.strictEqual(count, batchSize, `batch ${n} is whole`)
    else assert.strictEqual(count % writeSize, 0, `batch ${n} is whole writes of ${writeSize} rows: ${count}`)
  }
  for (const n of acked) assert.strictEqual(perBatch.get(n), batchSize, `acknowledged batch ${n} is there`)
  assert.isAtLeast(perBatch.size, acked.length)
}
