import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createMarket, type Market, MarketProblemError } from "@gpu-market/core"
import { createClient } from "@gpu-market/client"
import { sqlite } from "@gpu-market/storage-sqlite"
import { seedMarket, tempDb } from "./support/adapters"
import { startHost } from "./support/host"

describe("HTTP client (createClient) against the real app on a real port", () => {
  const db = tempDb("client")
  let direct: Market
  let host: Awaited<ReturnType<typeof startHost>>
  beforeAll(async () => {
    direct = await createMarket({ storage: sqlite(db) })
    await seedMarket(direct)
    host = await startHost(db)
  }, 120_000)
  afterAll(async () => {
    await host.close()
    await direct.close()
  })

  it("returns the envelopes the Promise API returns, and pages() follows meta.next.url", async () => {
    const client = createClient({ baseUrl: `${host.origin}/market`, token: "all" })
    const query = { gpu_canonical_name: ["h100-sxm", "l40s"], min_gpu_count: 8, page_size: 1000 }
    const page = await client.rental.prices.latest(query)
    assert.deepStrictEqual(page.data, (await direct.rental.prices.latest(query, { token: "all" })).data)
    const seen: Array<string> = []
    const fetchLog = createClient({
      baseUrl: `${host.origin}/market`, token: "all", fetch: (request) => (seen.push(request.url), fetch(request))
    })
    const rows = []
    for await (const row of fetchLog.rental.prices.latest.rows({ vendor: "v-alpha", page_size: 7 })) rows.push(row)
    assert.deepStrictEqual(rows, (await direct.rental.prices.latest({ vendor: "v-alpha", page_size: 1000 }, { token: "all" })).data)
    assert.isAbove(seen.length, 2)
    assert.isTrue(seen.slice(1).every((url) => url.startsWith(`${host.origin}/market/v2/gpu/rental/prices/latest?page_token=`)))
  })

  it("throws problems as MarketProblemError with the body the server sent", async () => {
    const client = createClient({ baseUrl: `${host.origin}/market` })
    for (const [call, status, code] of [
      [() => client.rental.prices.latest({ vendor: "v-alpha" }), 401, "unauthenticated"],
      [() => client.rental.prices.latest({ vendor: "Bad Slug" }, { token: "all" }), 422, "validation_failed"],
      [() => client.rental.prices.history({}, { token: "current" }), 403, "insufficient_entitlement"]
    ] as const) {
      try {
        await call()
        assert.fail("expected a problem")
      } catch (e) {
        assert.instanceOf(e, MarketProblemError)
        assert.strictEqual((e as MarketProblemError).status, status)
        assert.strictEqual((e as MarketProblemError).problem.code, code)
        assert.isString((e as MarketProblemError).problem.request_id)
      }
    }
  })

  it("waits Retry-After on 429 and retries, up to maxRetries", async () => {
    const slept: Array<number> = []
    const sleep = async (ms: number) => void slept.push(ms)
    // The limited token has 3 requests a minute: spend them, then the server answers 429.
    const spender = createClient({ baseUrl: `${host.origin}/market`, token: "limited", maxRetries: 0 })
    for (let i = 0; i < 3; i++) await spender.rental.prices.metadata()
    const limited = createClient({ baseUrl: `${host.origin}/market`, token: "limited", maxRetries: 2, sleep })
    try {
      await limited.rental.prices.metadata()
      assert.fail("expected 429")
    } catch (e) {
      assert.instanceOf(e, MarketProblemError)
      assert.strictEqual((e as MarketProblemError).status, 429)
    }
    assert.strictEqual(slept.length, 2)
    assert.isTrue(slept.every((ms) => ms >= 1000 && ms <= 60_000 && ms % 1000 === 0))

    // A 429 followed by success: the client answers with the success after one wait.
    let calls = 0
    const flaky = createClient({
      baseUrl: `${host.origin}/market`, token: "all", sleep,
      fetch: (request) => ++calls === 1
        ? Promise.resolve(new Response("{}", { status: 429, headers: { "retry-after": "7" } }))
        : fetch(request)
    })
    const meta = await flaky.rental.prices.metadata()
    assert.strictEqual(meta.data_type, "gpu_rental_prices")
    assert.strictEqual(slept.at(-1), 7000)

    // A 429 that names no wait is the caller's to handle: thrown at once, not retried.
    const waits = slept.length
    const noWait = createClient({
      baseUrl: `${host.origin}/market`, token: "all", sleep,
      fetch: () => Promise.resolve(new Response(JSON.stringify({ status: 429, code: "rate_limited", detail: "slow down" }), { status: 429 }))
    })
    const refused = await noWait.rental.prices.metadata().then(() => undefined, (e: unknown) => e)
    assert.strictEqual((refused as MarketProblemError).status, 429)
    assert.strictEqual(slept.length, waits)
  })
})

describe("HTTP client change feed", () => {
  it("resumes by itself after a 503 and after a cut, from the last id it saw, and ends on a resync", async () => {
    const sse = (messages: ReadonlyArray<object>) =>
      new Response(messages.map((m) => `data: ${JSON.stringify(m)}\n\n`).join(""), { headers: { "content-type": "text/event-stream" } })
    const asked: Array<string | null> = []
    const answers = [
      () => new Response(JSON.stringify({ status: 503, code: "storage_unavailable", detail: "away" }), { status: 503 }),
      // A slow consumer dropped: the client resumes from its id.
      () => sse([{ id: "7", type: "dropped", reason: "slow_consumer" }]),
      () => sse([{ id: "9", type: "dropped", reason: "resync" }])
    ]
    const client = createClient({
      baseUrl: "http://feed.test", token: "all", sleep: async () => {},
      fetch: async (request) => {
        asked.push(request.headers.get("last-event-id"))
        return answers[asked.length - 1]!()
      }
    })
    const got: Array<unknown> = []
    for await (const message of client.events({}, { lastEventId: "3" })) got.push(message)
    assert.deepStrictEqual(asked, ["3", "3", "7"])
    assert.deepStrictEqual(got, [{ id: "9", type: "dropped", reason: "resync" }])
  })
})

describe("HTTP client change feed waits", () => {
  it("waits what a Retry-After asks for instead of its own growing pause, and the growing pause without one", async () => {
    const refusal = (headers: Record<string, string>) =>
      new Response(JSON.stringify({ status: 503, code: "storage_unavailable", detail: "away" }), { status: 503, headers })
    const answers = [
      () => refusal({ "retry-after": "5" }),
      () => refusal({}),
      () => refusal({ "retry-after": "2" }),
      () => new Response(`data: ${JSON.stringify({ id: "9", type: "dropped", reason: "resync" })}\n\n`, { headers: { "content-type": "text/event-stream" } })
    ]
    const slept: Array<number> = []
    let asked = 0
    const client = createClient({
      baseUrl: "http://feed.test", token: "all", maxRetries: 5, sleep: async (ms) => void slept.push(ms),
      fetch: async () => answers[asked++]!()
    })
    for await (const _ of client.events()) { /* the resync ends it */ }
    // Failures 1, 2, 3 in a row: 5 s asked, then the pause of the 2nd failure (2 s), then 2 s asked.
    assert.deepStrictEqual(slept, [5000, 2000, 2000])
  })
})

describe("HTTP client and meta.next on another origin", () => {
  it("does not send the token to a meta.next.url outside the client's origin", async () => {
    const seen: Array<string> = []
    const next = { url: "https://elsewhere.example/v2/gpu/rental/prices/latest?page_token=t&page_size=1", path: "/v2/gpu/rental/prices/latest", query_params: { page_token: "t", page_size: "1" } }
    const client = createClient({
      baseUrl: "https://market.example", token: "secret",
      fetch: async (request) => {
        seen.push(request.url)
        return new Response(JSON.stringify({ data: [], meta: { next } }), { headers: { "content-type": "application/json" } })
      }
    })
    let pages = 0
    let error: unknown
    try {
      for await (const _ of client.rental.prices.latest.pages({ gpu_canonical_name: ["h100-sxm"] })) pages++
    } catch (e) {
      error = e
    }
    assert.strictEqual(pages, 1)
    assert.match(String(error), /not on https:\/\/market\.example/)
    assert.isTrue(seen.every((u) => u.startsWith("https://market.example/")), seen.join(", "))
  })
})
