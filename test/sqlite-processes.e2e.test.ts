import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createMarket, type Principal, type RateLimitMode } from "@gpu-market/core"
import { fetchHandler } from "@gpu-market/http-adapter"
import { sqlite } from "@gpu-market/storage-sqlite"
import { resolve } from "node:path"
import { tempDb } from "./support/adapters"
import { TOKENS } from "./support/market"
import { freePort, type Started, startUntil } from "./support/process"

/**
 * Several servers on one SQLite file: two `npm start` processes with
 * `GPU_MARKET_RATE_LIMITS=shared` together hold a client to exactly its limit, as two on one Redis
 * do (test/redis-processes.e2e.test.ts). Two servers in `process` mode would each give the whole
 * limit, which is why docs/guides/embedding.md tells whoever starts a second server on a file to
 * pass `shared`.
 */

const ROOT = resolve(import.meta.dirname, "..")
const LIMIT = 25
const METADATA = "/v2/gpu/rental/prices/metadata"
/** Bursts that may be tried, each with a principal of its own: one that straddles two windows is tried again. */
const ATTEMPTS = 3
/** The token of an attempt of the burst named `label`; every burst counts under principals of its own. */
const burstToken = (label: string, attempt: number) => `${label}-${attempt}`

const db = tempDb("sqlite-processes")

/** Issues one principal of `LIMIT` requests a minute per attempt of the burst `label`. */
const issueBurstTokens = async (label: string) => {
  const market = await createMarket({ storage: sqlite(db) })
  try {
    for (let i = 0; i < ATTEMPTS; i++) {
      const principal: Principal = { ...TOKENS.all, id: `t-${burstToken(label, i)}` as Principal["id"], name: burstToken(label, i), rate_limit_per_minute: LIMIT }
      await market.tokens.create(principal, burstToken(label, i))
    }
  } finally {
    await market.close()
  }
}

/** A burst of `4 × LIMIT` concurrent requests spread over `gets`, inside one window: how many were served. */
const burst = async (label: string, gets: ReadonlyArray<(token: string) => Promise<{ readonly status: number; readonly remaining: string | null }>>) => {
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const window = Math.floor(Date.now() / 60_000)
    const answers = await Promise.all(Array.from({ length: 4 * LIMIT }, (_, i) => gets[i % gets.length]!(burstToken(label, attempt))))
    if (Math.floor(Date.now() / 60_000) !== window) continue
    assert.isTrue(answers.every((a) => a.status === 200 || a.status === 429), JSON.stringify(answers.find((a) => a.status !== 200 && a.status !== 429)))
    return answers.filter((a) => a.status === 200)
  }
  return assert.fail(`every burst straddled two windows`)
}

describe("two processes on one SQLite file", () => {
  let servers: Array<Started & { readonly base: string }> = []

  beforeAll(async () => {
    await issueBurstTokens("processes")
    const start = async () => {
      const port = await freePort()
      const started = await startUntil("npm", ["start", "--silent"], {
        cwd: ROOT,
        env: { ...process.env, PORT: String(port), GPU_MARKET_DB: db, GPU_MARKET_DEMO: "0", GPU_MARKET_REDIS_URL: "", GPU_MARKET_RATE_LIMITS: "shared" },
        ready: /listening on http:\/\/127\.0\.0\.1:\d+/,
        timeoutMs: 120_000
      })
      return { ...started, base: `http://127.0.0.1:${port}` }
    }
    // Each started server is stopped by afterAll, even when the other failed to start.
    const started = await Promise.allSettled([start(), start()])
    servers = started.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []))
    for (const s of started) if (s.status === "rejected") throw s.reason
  }, 240_000)

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()))
  }, 60_000)

  it("with GPU_MARKET_RATE_LIMITS=shared, they hold a client to exactly its limit under a concurrent burst", { timeout: 120_000 }, async () => {
    for (const s of servers) assert.include(s.output(), "; rate limits: shared)")
    const gets = servers.map((s) => async (token: string) => {
      const res = await fetch(s.base + METADATA, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(10_000) })
      await res.arrayBuffer()
      return { status: res.status, remaining: res.headers.get("x-ratelimit-remaining") }
    })
    const ok = await burst("processes", gets)
    assert.strictEqual(ok.length, LIMIT)
    // One counter in the file: each remaining budget was handed out exactly once.
    assert.deepStrictEqual(ok.map((a) => Number(a.remaining)).sort((a, b) => a - b), Array.from({ length: LIMIT }, (_, i) => i))
  })
})

describe("two servers on one SQLite file, in process", () => {
  const servedBy = async (mode: RateLimitMode) => {
    const markets = await Promise.all([0, 1].map(() => createMarket({ storage: sqlite(db), rateLimits: mode })))
    try {
      const handlers = await Promise.all(markets.map((market) => fetchHandler(market, { baseUrl: "http://market.test" })))
      return await burst(mode, handlers.map((h) => async (token: string) => {
        const res = await h.fetch(new Request(`http://market.test${METADATA}`, { headers: { authorization: `Bearer ${token}` } }))
        await res.arrayBuffer()
        return { status: res.status, remaining: res.headers.get("x-ratelimit-remaining") }
      }))
    } finally {
      await Promise.all(markets.map((market) => market.close()))
    }
  }

  it("in process mode each gives the whole limit; in shared mode they give it once between them", { timeout: 120_000 }, async () => {
    await issueBurstTokens("process")
    await issueBurstTokens("shared")
    assert.strictEqual((await servedBy("process")).length, 2 * LIMIT)
    assert.strictEqual((await servedBy("shared")).length, LIMIT)
  })
})
