import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createMarket, type Market } from "@gpu-market/core"
import { fetchHandler, nodeHandler } from "@gpu-market/http-adapter"
import { sqlite } from "@gpu-market/storage-sqlite"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { seedMarket, tempDb } from "./support/adapters"
import { startHost } from "./support/host"
import { rawRequest } from "./support/raw-http"

const get = async (url: string, token = "all") => {
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } })
  return { status: res.status, text: await res.text(), headers: res.headers }
}

describe("mounted handlers", () => {
  const db = tempDb("handlers")
  let direct: Market
  beforeAll(async () => {
    direct = await createMarket({ storage: sqlite(db) })
    await seedMarket(direct)
  }, 120_000)
  afterAll(() => direct.close())

  for (const stripPrefix of [false, true]) {
    it(`Node handler under /market (${stripPrefix ? "host strips the prefix" : "full URL"}): host routes stay, meta.next.url leads back through the host to page 2`, async () => {
      const host = await startHost(db, { stripPrefix })
      try {
        assert.strictEqual((await get(`${host.origin}/health`)).text, "ok")
        const first = await get(`${host.origin}/market/v2/gpu/rental/prices/latest?vendor=v-alpha&page_size=5`)
        assert.strictEqual(first.status, 200, first.text)
        assert.isNotNull(first.headers.get("x-ratelimit-limit"))
        const page1 = JSON.parse(first.text)
        assert.isTrue(page1.meta.next.url.startsWith(`${host.origin}/market/v2/gpu/rental/prices/latest?page_token=`))
        assert.strictEqual(page1.meta.next.path, "/market/v2/gpu/rental/prices/latest")
        const second = await get(page1.meta.next.url)
        assert.strictEqual(second.status, 200, second.text)
        const all = await direct.rental.prices.latest({ vendor: "v-alpha", page_size: 10 }, { token: "all" })
        assert.deepStrictEqual([...page1.data, ...JSON.parse(second.text).data], all.data)
        const problem = await get(`${host.origin}/market/v2/gpu/rental/prices/latest`, "nope")
        assert.strictEqual(problem.status, 401)
        assert.strictEqual(problem.headers.get("content-type"), "application/problem+json")
      } finally {
        await host.close()
      }
    })
  }

  it("fetch handler: Request in, Response out, with the Promise API's bytes and links back through the prefix", async () => {
    const viaDirect = await createMarket({ storage: sqlite(db), baseUrl: "https://app.example/market" })
    const market = await fetchHandler(viaDirect, { baseUrl: "https://app.example/market" })
    try {
      const response = await market.fetch(new Request("https://app.example/market/v2/gpu/rental/prices/history?start=2026-05-01&end=2026-05-04&page_size=4", {
        headers: { authorization: "Bearer all" }
      }))
      assert.strictEqual(response.status, 200)
      const text = await response.text()
      const expected = await viaDirect.rental.prices.history({ start: "2026-05-01", end: "2026-05-04", page_size: 4 }, { token: "all" })
      assert.strictEqual(text, JSON.stringify(expected))
      const next = await market.fetch(new Request(JSON.parse(text).meta.next.url, { headers: { authorization: "Bearer all" } }))
      assert.strictEqual(next.status, 200)
      assert.strictEqual(await next.text(), JSON.stringify(await viaDirect.rental.prices.history({ page_token: expected.meta.next!.query_params.page_token!, page_size: 4 }, { token: "all" })))
      const missing = await market.fetch(new Request("https://app.example/market/v2/nothing"))
      assert.strictEqual(missing.status, 404)
    } finally {
      await viaDirect.close()
    }
  })

  /** Every answer of a mounted handler carries nosniff: a page, its replay, a 304, a problem, a document, the change feed. */
  const assertNosniff = async (fetchIt: (path: string, headers: Record<string, string>) => Promise<Response>) => {
    const page = "/v2/gpu/rental/prices/latest?vendor=v-alpha&page_size=5"
    const auth = { authorization: "Bearer all" }
    const first = await fetchIt(page, auth)
    const again = await fetchIt(page, auth)
    const notModified = await fetchIt(page, { ...auth, "if-none-match": first.headers.get("etag")! })
    const problem = await fetchIt(page, { authorization: "Bearer nope" })
    const document = await fetchIt("/openapi.json", {})
    const events = await fetchIt("/v2/events", auth)
    assert.deepStrictEqual([first, again, notModified, problem, document, events].map((r) => r.status), [200, 200, 304, 401, 200, 200])
    assert.strictEqual(problem.headers.get("content-type"), "application/problem+json")
    assert.strictEqual(events.headers.get("content-type"), "text/event-stream")
    for (const response of [first, again, notModified, problem, document, events]) {
      assert.strictEqual(response.headers.get("x-content-type-options"), "nosniff", `${response.url} ${response.status}`)
      // The change feed never ends by itself: reading stops here.
      await response.body?.cancel()
    }
  }

  it("every answer of the Node and fetch handlers says nosniff", async () => {
    const host = await startHost(db)
    try {
      await assertNosniff((path, headers) => fetch(`${host.origin}/market${path}`, { headers }))
    } finally {
      await host.close()
    }
    const market = await createMarket({ storage: sqlite(db) })
    try {
      const handler = await fetchHandler(market, { baseUrl: "https://app.example/market" })
      await assertNosniff((path, headers) => handler.fetch(new Request(`https://app.example/market${path}`, { headers })))
    } finally {
      await market.close()
    }
  })

  it("a Node handler mounted where the host lets it refuse: no Host is a 400 problem, Expect other than 100-continue a 417 problem", async () => {
    // The host opts out of Node's bare answers: no Host reaches the handler, and so do expectations.
    const server = createServer({ requireHostHeader: false })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const port = (server.address() as AddressInfo).port
    const market = await createMarket({ storage: sqlite(db) })
    const handler = await nodeHandler(market, { baseUrl: `http://127.0.0.1:${port}` })
    server.on("request", handler.handle)
    server.on("checkExpectation", handler.handle)
    try {
      const noHost = await rawRequest(port, "GET /openapi.json HTTP/1.1", { closeWithinMs: 100 })
      const bogus = await rawRequest(port, "GET /openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 999-bogus", { closeWithinMs: 100 })
      for (const [reply, status, code] of [[noHost, 400, "malformed_request"], [bogus, 417, "expectation_failed"]] as const) {
        assert.strictEqual(reply.status, status, reply.body)
        assert.strictEqual(reply.headers["content-type"], "application/problem+json")
        assert.strictEqual(reply.headers["x-content-type-options"], "nosniff")
        const problem = JSON.parse(reply.body) as { type: string; status: number; code: string; request_id: string }
        assert.deepStrictEqual([problem.type, problem.status, problem.code], [`/problems/${code}`, status, code])
        assert.strictEqual(problem.request_id, reply.headers["x-request-id"])
      }
      const met = await rawRequest(port, "GET /openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue", { closeWithinMs: 100 })
      assert.deepStrictEqual([met.interim, met.status], [[100], 200])
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await market.close()
    }
  })
})
