import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import {
  createMarket, type LocalMarket, type Market, MarketProblemError, marketSettingsConfig, marketSettingsProblem, memory, type PrincipalInput, simulatedProviderLayer
} from "@gpu-market/core"
import { fetchHandler, nodeHandler } from "@gpu-market/http-adapter"
import { createClient } from "@gpu-market/client"
import { redis } from "@gpu-market/storage-redis"
import { sqlite } from "@gpu-market/storage-sqlite"
import { createWorkerMarket } from "@gpu-market/worker"
import { ConfigProvider, Effect, Either } from "effect"
import { execFile } from "node:child_process"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { join, resolve } from "node:path"
import { seedMarket, tempDb } from "./support/adapters"
import { rawRequest } from "./support/raw-http"
import { type RedisServer, startRedis, uniquePrefix } from "./support/redis"

/**
 * One market, assembled one way (`marketRuntimeLayer`) and mounted as it is: the handlers serve
 * the market the app opened, with its tokens, its routes and links that lead back to it, and the
 * storage breaker answers the same whichever way the market runs.
 */

const PAGE = "/v2/gpu/rental/prices/latest?vendor=v-alpha&page_size=2"

/** `handle` on node:http on a free port of 127.0.0.1, and its origin; `close` cuts what is open. */
const listen = async (handle: (req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse) => void) => {
  const server: Server = createServer(handle)
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  return {
    port: (server.address() as AddressInfo).port,
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => {
      server.closeAllConnections()
      server.close(() => r())
    })
  }
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

describe("handlers mount the market the app opened", () => {
  it("a token made through createMarket on memory() works through nodeHandler(market) and fetchHandler(market)", async () => {
    const market = await createMarket({ storage: memory() })
    try {
      await seedMarket(market)
      const analyst: PrincipalInput = {
        id: "app-analyst", name: "made by the app", grants: { gpu_rental_prices: { history: { _tag: "unrestricted" } } },
        indices: "all", legacy_custom_index: false, procurement: false, rate_limit_per_minute: 600
      }
      const secret = await market.tokens.create(analyst)
      const expected = (await market.rental.prices.latest({ vendor: "v-alpha", page_size: 2 }, { token: secret })).data
      const rowsOf = async (response: Response) => ((await response.json()) as { data: unknown }).data

      const node = await listen((await nodeHandler(market, { baseUrl: "http://127.0.0.1" })).handle)
      try {
        const response = await fetch(`${node.origin}${PAGE}`, { headers: bearer(secret) })
        assert.strictEqual(response.status, 200)
        assert.deepStrictEqual(await rowsOf(response), expected)
      } finally {
        await node.close()
      }
      const web = await fetchHandler(market, { baseUrl: "http://127.0.0.1" })
      const response = await web.fetch(new Request(`http://127.0.0.1${PAGE}`, { headers: bearer(secret) }))
      assert.strictEqual(response.status, 200)
      assert.deepStrictEqual(await rowsOf(response), expected)
      // A token revoked through the app is refused by the handler at once: one token store.
      await market.tokens.revoke("app-analyst")
      assert.strictEqual((await web.fetch(new Request(`http://127.0.0.1${PAGE}`, { headers: bearer(secret) }))).status, 401)
    } finally {
      await market.close()
    }
  })

  it("serve /supply when the market has a supply provider and /metrics when asked, as the standalone server does; neither otherwise", async () => {
    const db = tempDb("runtime-supply")
    const buyer: PrincipalInput = {
      id: "buyer", name: "buyer", grants: { gpu_rental_prices: { history: { _tag: "none" } } }, indices: "all",
      legacy_custom_index: false, procurement: true, rate_limit_per_minute: 600
    }
    const market = await createMarket({ storage: sqlite(db), supply: simulatedProviderLayer() })
    try {
      await seedMarket(market)
      await market.tokens.create(buyer, "buyer")
      const api = await fetchHandler(market, { baseUrl: "https://app.example/market", metrics: true })
      const get = (path: string, token?: string) => api.fetch(new Request(`https://app.example/market${path}`, { headers: token === undefined ? {} : bearer(token) }))
      const gpus = await get("/supply/gpus", "buyer")
      assert.strictEqual(gpus.status, 200, await gpus.clone().text())
      const listed = (await gpus.json()) as { data: ReadonlyArray<{ gpu_canonical_name: string }> }
      assert.isAbove(listed.data.length, 0)
      const refused = await get("/supply/gpus", "all")
      assert.strictEqual(refused.status, 403)
      assert.include(((await refused.json()) as { detail: string }).detail, "not granted the procurement service")
      const metrics = await get("/metrics")
      assert.strictEqual(metrics.status, 200)
      // The market's own metrics: its storage calls, timed by the breaker every market has now.
      const scraped = await metrics.text()
      assert.include(scraped, `gpu_market_storage_call_duration_seconds_count{operation="TokenStore.version"}`)
      const document = (await (await get("/openapi.json")).json()) as { paths: Record<string, unknown> }
      assert.property(document.paths, "/supply/gpus")
      assert.property(document.paths, "/metrics")
    } finally {
      await market.close()
    }

    const plain = await createMarket({ storage: sqlite(db) })
    try {
      const api = await fetchHandler(plain, { baseUrl: "https://app.example/market" })
      for (const path of ["/supply/gpus", "/metrics"]) {
        const answer = await api.fetch(new Request(`https://app.example/market${path}`, { headers: bearer("buyer") }))
        assert.strictEqual(answer.status, 404, path)
      }
    } finally {
      await plain.close()
    }
  })
})

describe("links without a configured base URL", () => {
  let market: LocalMarket
  let everyRow: ReadonlyArray<unknown>
  beforeAll(async () => {
    market = await createMarket({ storage: memory() })
    await seedMarket(market)
    const rows: Array<unknown> = []
    for await (const row of market.rental.prices.latest.rows({ vendor: "v-alpha", page_size: 2 }, { token: "all" })) rows.push(row)
    everyRow = rows
  }, 60_000)
  afterAll(() => market.close())

  it("an app listening on port 0 hands out meta.next.url on the port it really listens on, and the client follows it to the last row", async () => {
    const app = await listen((await nodeHandler(market)).handle)
    try {
      const first = (await (await fetch(`${app.origin}${PAGE}`, { headers: bearer("all") })).json()) as { meta: { next: { url: string } } }
      assert.isTrue(first.meta.next.url.startsWith(`${app.origin}/v2/gpu/rental/prices/latest?`), first.meta.next.url)
      const client = createClient({ baseUrl: app.origin, token: "all" })
      const rows: Array<unknown> = []
      for await (const row of client.rental.prices.latest.rows({ vendor: "v-alpha", page_size: 2 })) rows.push(row)
      assert.isAbove(rows.length, 2)
      assert.deepStrictEqual(rows, everyRow)

      // Reached by another name, the links use it; a request without Host (HTTP/1.0) gets the address it reached.
      const named = (await (await fetch(`http://localhost:${app.port}${PAGE}`, { headers: bearer("all") })).json()) as { meta: { next: { url: string } } }
      assert.isTrue(named.meta.next.url.startsWith(`http://localhost:${app.port}/`), named.meta.next.url)
      const noHost = await rawRequest(app.port, `GET ${PAGE} HTTP/1.0\r\nAuthorization: Bearer all`, { closeWithinMs: 1000 })
      assert.strictEqual(noHost.status, 200, noHost.body)
      assert.isTrue((JSON.parse(noHost.body) as { meta: { next: { url: string } } }).meta.next.url.startsWith(`${app.origin}/`))
      // A Host that is no host (a path, credentials) is not written into links.
      const odd = await rawRequest(app.port, `GET ${PAGE} HTTP/1.1\r\nHost: evil.example/x?\r\nAuthorization: Bearer all\r\nConnection: close`, { closeWithinMs: 1000 })
      assert.strictEqual(odd.status, 200, odd.body)
      assert.isTrue((JSON.parse(odd.body) as { meta: { next: { url: string } } }).meta.next.url.startsWith(`${app.origin}/`))
    } finally {
      await app.close()
    }
  })

  it("a fetch handler without baseUrl takes the origin of the request's URL", async () => {
    const api = await fetchHandler(market)
    const client = createClient({ baseUrl: "https://edge.example:8443", token: "all", fetch: api.fetch })
    const page = await client.rental.prices.latest({ vendor: "v-alpha", page_size: 2 })
    assert.isTrue(page.meta.next!.url.startsWith("https://edge.example:8443/v2/gpu/rental/prices/latest?"), page.meta.next!.url)
    const rows: Array<unknown> = []
    for await (const row of client.rental.prices.latest.rows({ vendor: "v-alpha", page_size: 2 })) rows.push(row)
    assert.deepStrictEqual(rows, everyRow)
  })

  it("the client's rows() rejects with a MarketProblemError when a next link cannot be followed", async () => {
    // A base URL naming port 0, as an app listening on port 0 used to get by default: links lead nowhere the client was pointed.
    const misconfigured = await listen((await nodeHandler(market, { baseUrl: "http://127.0.0.1:0" })).handle)
    try {
      const client = createClient({ baseUrl: misconfigured.origin, token: "all" })
      const failed = await (async () => {
        for await (const _ of client.rental.prices.latest.rows({ vendor: "v-alpha", page_size: 2 })) { /* the first page's rows */ }
      })().then(() => undefined, (e: unknown) => e)
      assert.instanceOf(failed, MarketProblemError)
      assert.strictEqual((failed as MarketProblemError).code, "foreign_next_url")
    } finally {
      await misconfigured.close()
    }

    // The server goes away between two pages.
    const app = await listen((await nodeHandler(market)).handle)
    const client = createClient({ baseUrl: app.origin, token: "all" })
    let closed = false
    const failed = await (async () => {
      for await (const _ of client.rental.prices.latest.pages({ vendor: "v-alpha", page_size: 2 })) {
        if (!closed) {
          closed = true
          await app.close()
        }
      }
    })().then(() => undefined, (e: unknown) => e)
    assert.instanceOf(failed, MarketProblemError)
    assert.strictEqual((failed as MarketProblemError).code, "unreachable")
    assert.strictEqual((failed as MarketProblemError).status, 503)
  })
})

describe("one storage breaker, whichever way the market runs (Redis frozen)", () => {
  let server: RedisServer
  beforeAll(async () => {
    server = await startRedis()
  }, 60_000)
  afterAll(() => server.stop())

  // Short timeouts, so a frozen Redis fails each call in 300 ms; the breaker opens after 2 in a row.
  const storage = (prefix: string) => redis({ url: server.url, prefix, commandTimeoutMs: 300 })
  const breaker = { failureThreshold: 2, probeIntervalMs: 200 }

  /**
   * Three calls while Redis is frozen: the first reaches it and fails twice (the token's version
   * and its count are sent together), which opens a breaker of 2 (the default of 3 would let the
   * second through); the rest are refused without a call. Thawed, calls go through again without
   * a restart.
   */
  const opensAfterTwo = async (call: () => Promise<{ readonly status: number; readonly detail: string }>) => {
    assert.strictEqual((await call()).status, 200)
    server.pause()
    try {
      const answers = [await call(), await call(), await call()]
      assert.deepStrictEqual(answers.map((a) => a.status), [503, 503, 503])
      assert.deepStrictEqual(answers.map((a) => a.detail.includes("not tried")), [false, true, true], JSON.stringify(answers))
    } finally {
      server.resume()
    }
    const deadline = Date.now() + 20_000
    while ((await call()).status !== 200) {
      assert.isBelow(Date.now(), deadline, "calls go through again once Redis answers")
      await new Promise((r) => setTimeout(r, 100))
    }
  }

  const viaPromise = (market: Market) => () =>
    market.rental.prices.latest({ vendor: "v-alpha", page_size: 2 }, { token: "all" }).then(
      () => ({ status: 200, detail: "" }),
      (e: unknown) => e instanceof MarketProblemError ? { status: e.status, detail: e.problem.detail } : Promise.reject(e)
    )

  const viaResponse = async (response: Response) =>
    response.status === 200
      ? { status: 200, detail: (await response.arrayBuffer(), "") }
      : { status: response.status, detail: ((await response.json()) as { detail: string }).detail }

  it("createMarket", { timeout: 120_000 }, async () => {
    const market = await createMarket({ storage: storage(uniquePrefix("breaker-direct")), breaker })
    try {
      await seedMarket(market)
      await opensAfterTwo(viaPromise(market))
    } finally {
      await market.close()
    }
  })

  it("nodeHandler and fetchHandler, over the market they mount", { timeout: 120_000 }, async () => {
    const market = await createMarket({ storage: storage(uniquePrefix("breaker-handlers")), breaker })
    try {
      await seedMarket(market)
      const app = await listen((await nodeHandler(market)).handle)
      try {
        await opensAfterTwo(async () => viaResponse(await fetch(`${app.origin}${PAGE}`, { headers: bearer("all") })))
      } finally {
        await app.close()
      }
      const api = await fetchHandler(market)
      await opensAfterTwo(async () => viaResponse(await api.fetch(new Request(`http://market.test${PAGE}`, { headers: bearer("all") }))))
    } finally {
      await market.close()
    }
  })

  it("createWorkerMarket, in each worker thread", { timeout: 120_000 }, async () => {
    const prefix = uniquePrefix("breaker-worker")
    const seeder = await createMarket({ storage: storage(prefix) })
    try {
      await seedMarket(seeder)
    } finally {
      await seeder.close()
    }
    const market = await createWorkerMarket({ storage: storage(prefix), breaker })
    try {
      await opensAfterTwo(viaPromise(market))
    } finally {
      await market.close()
    }
  })
})

describe("market settings from the environment", () => {
  const load = (variables: Record<string, string>) =>
    Effect.runSync(Effect.either(Effect.withConfigProvider(marketSettingsConfig, ConfigProvider.fromMap(new Map(Object.entries(variables))))))

  it("decodes every variable into the settings createMarket takes, and leaves unset or blank ones to the defaults", async () => {
    const settings = load({
      GPU_MARKET_BASE_URL: "https://api.example/market", GPU_MARKET_HARDWARE_VOCABULARY: '{"channel":["lease_return"]}', GPU_MARKET_RATE_LIMITS: "process",
      GPU_MARKET_PAGE_CACHE_MB: "8", GPU_MARKET_BREAKER_FAILURES: "5", GPU_MARKET_BREAKER_PROBE_MS: "250"
    })
    assert.deepStrictEqual(settings, Either.right({
      baseUrl: "https://api.example/market", hardwareVocabulary: { channel: ["lease_return"] }, rateLimits: "process", pageCacheMb: 8,
      breaker: { failureThreshold: 5, probeIntervalMs: 250 }
    }))
    assert.deepStrictEqual(load({ GPU_MARKET_PAGE_CACHE_MB: " ", GPU_MARKET_RATE_LIMITS: "" }), Either.right({}))
    // What the environment gives opens a market as the same options passed by hand would.
    const market = await createMarket({ storage: memory(), ...Either.getOrThrow(settings) })
    try {
      await seedMarket(market)
      const metadata = await market.hardware.prices.metadata({}, { token: "hardwareOnly" })
      assert.include(metadata.data.vocabulary.channel, "lease_return")
    } finally {
      await market.close()
    }
  })

  it("a value that cannot work fails naming its variable, each problem once", () => {
    const problem = (variables: Record<string, string>) => {
      const loaded = load(variables)
      if (Either.isRight(loaded)) return assert.fail(`${JSON.stringify(variables)} was taken`)
      return marketSettingsProblem(loaded.left)
    }
    assert.strictEqual(problem({ GPU_MARKET_RATE_LIMITS: "cluster" }), 'GPU_MARKET_RATE_LIMITS is "cluster"; expected process or shared')
    assert.match(problem({ GPU_MARKET_PAGE_CACHE_MB: "lots" }), /^GPU_MARKET_PAGE_CACHE_MB is "lots"; expected a whole number of MB/)
    assert.match(problem({ GPU_MARKET_HARDWARE_VOCABULARY: "{channel" }), /^GPU_MARKET_HARDWARE_VOCABULARY is "\{channel"; expected JSON/)
    assert.include(problem({ GPU_MARKET_HARDWARE_VOCABULARY: '{"channel":["Lease Return"]}' }), "channel")
    assert.include(problem({ GPU_MARKET_BASE_URL: "ftp://files.example" }), "expected an absolute http(s) URL")
    assert.include(problem({ GPU_MARKET_BREAKER_FAILURES: "0" }), "failureThreshold")
    const both = problem({ GPU_MARKET_RATE_LIMITS: "cluster", GPU_MARKET_PAGE_CACHE_MB: "lots" })
    assert.include(both, "GPU_MARKET_RATE_LIMITS")
    assert.include(both, "GPU_MARKET_PAGE_CACHE_MB")
  })

  it("every CLI command that opens a market reads them: a breaker setting that cannot work stops `tokens list` before it opens anything", { timeout: 60_000 }, async () => {
    const bin = join(resolve(import.meta.dirname, ".."), "packages/cli/bin/gpu-market.js")
    const db = tempDb("runtime-cli")
    const run = (env: Record<string, string>) => new Promise<{ code: number; stderr: string }>((done) =>
      execFile("node", [bin, "tokens", "list", "--db", db], { env: { ...process.env, NO_COLOR: "1", GPU_MARKET_REDIS_URL: "", ...env }, timeout: 60_000 },
        (error, _stdout, stderr) => done({ code: error === null ? 0 : Number(error.code ?? 1), stderr })))
    const bad = await run({ GPU_MARKET_BREAKER_FAILURES: "often" })
    assert.strictEqual(bad.code, 1)
    assert.include(bad.stderr, 'GPU_MARKET_BREAKER_FAILURES is "often"; expected a whole number of calls')
    assert.strictEqual((await run({ GPU_MARKET_BREAKER_FAILURES: "5" })).code, 0)
  })
})
