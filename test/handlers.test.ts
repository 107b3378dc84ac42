import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createMarket, type Market } from "@gpu-market/core"
import { fetchHandler } from "@gpu-market/http-adapter"
import { sqlite } from "@gpu-market/storage-sqlite"
import { seedMarket, tempDb } from "./support/adapters"
import { startHost } from "./support/host"

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
    const market = await fetchHandler({ storage: sqlite(db), baseUrl: "https://app.example/market" })
    const viaDirect = await createMarket({ storage: sqlite(db), baseUrl: "https://app.example/market" })
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
      await market.close()
    }
  })
})
