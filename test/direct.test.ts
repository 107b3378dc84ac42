import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createMarket, type Market, memory, type RentalPriceObservationInput } from "@gpu-market/core"
import { sqlite } from "@gpu-market/storage-sqlite"
import { writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { problemOf, seedMarket, tempDb } from "./support/adapters"
import { TOKENS } from "./support/market"

/** What a JavaScript caller might send: the types say it is incomplete, the write path must say so too. */
const untypedRecord = JSON.parse('{ "vendor": "v-alpha" }') as RentalPriceObservationInput

describe("Promise API (createMarket)", () => {
  let market: Market
  beforeAll(async () => {
    market = await createMarket({ storage: sqlite(tempDb("direct")), baseUrl: "https://example.com/market" })
    await seedMarket(market)
  }, 120_000)
  afterAll(() => market.close())

  it("answers a typed query (lists as arrays, numbers as numbers) like the HTTP query it stands for", async () => {
    const typed = await market.rental.prices.latest(
      { gpu_canonical_name: ["h100-sxm", "l40s"], min_gpu_count: 8, sort_by: "price_usd_per_gpu_hour", page_size: 1000 },
      { token: "all" }
    )
    const text = await market.rental.prices.latest(
      { gpu_canonical_name: "h100-sxm,l40s", min_gpu_count: "8", sort_by: "price_usd_per_gpu_hour", page_size: 1000 },
      { token: "all" }
    )
    assert.deepStrictEqual(typed, text)
    assert.isAbove(typed.data.length, 5)
    assert.isTrue(typed.data.every((r) => ["h100-sxm", "l40s"].includes(r.gpu_canonical_name) && r.gpu_count === 8))
  })

  it("pages() and rows() follow meta.next through every page, which points under baseUrl", async () => {
    const query = { vendor: "v-alpha", sort_by: "vendor", page_size: 1000 } as const
    const all = await market.rental.prices.latest(query, { token: "all" })
    const first = await market.rental.prices.latest({ ...query, page_size: 7 }, { token: "all" })
    assert.match(first.meta.next!.url, /^https:\/\/example\.com\/market\/v2\/gpu\/rental\/prices\/latest\?page_token=/)
    const pages = []
    for await (const page of market.rental.prices.latest.pages({ ...query, page_size: 7 }, { token: "all" })) pages.push(page)
    assert.strictEqual(pages.length, Math.ceil(all.data.length / 7))
    assert.deepStrictEqual(pages.flatMap((p) => p.data), all.data)
    const rows = []
    for await (const row of market.rental.prices.history.rows({ start: new Date("2026-05-01"), end: "2026-05-05", page_size: 50 }, { token: "all" })) rows.push(row)
    const history = await market.rental.prices.history({ start: "2026-05-01", end: "2026-05-05", page_size: 1000 }, { token: "all" })
    assert.deepStrictEqual(rows, history.data)
  })

  it("authenticates like HTTP: no token 401, unknown token 401, a type not granted 403", async () => {
    const none = await problemOf(market.rental.prices.latest({ vendor: "v-alpha" }))
    assert.strictEqual(none.status, 401)
    assert.strictEqual(none.problem.code, "unauthenticated")
    assert.strictEqual((await problemOf(market.rental.prices.latest({ vendor: "v-alpha" }, { token: "nope" }))).status, 401)
    const forbidden = await problemOf(market.rental.prices.latest({ vendor: "v-alpha" }, { token: "hardwareOnly" }))
    assert.strictEqual(forbidden.status, 403)
    assert.strictEqual(forbidden.code, "insufficient_entitlement")
  })

  it("rejects bad queries with the HTTP API's problems", async () => {
    const bad = await problemOf(market.rental.prices.latest({ vendor: "V Alpha", page_size: 0 }, { token: "all" }))
    assert.strictEqual(bad.status, 422)
    assert.deepStrictEqual(bad.problem.errors?.map((e) => e.parameter).sort(), ["page_size", "vendor"])
    assert.strictEqual(bad.problem.type, "/problems/validation_failed")
    const anchor = await problemOf(market.rental.prices.latest({}, { token: "all" }))
    assert.strictEqual(anchor.status, 400)
    assert.include(anchor.problem.anchors ?? [], "gpu_canonical_name")
    const unknown = await problemOf(market.rental.prices.latest({ vendor: "v-alpha", colour: "red" } as never, { token: "all" }))
    assert.strictEqual(unknown.problem.errors?.[0]?.parameter, "colour")
  })

  it("shares the HTTP rate limit: past the budget a call is 429 rate_limited", async () => {
    for (let i = 0; i < TOKENS.limited.rate_limit_per_minute; i++) await market.rental.prices.metadata({}, { token: "limited" })
    const limited = await problemOf(market.rental.prices.metadata({}, { token: "limited" }))
    assert.strictEqual(limited.status, 429)
    assert.strictEqual(limited.code, "rate_limited")
  })

  it("reads every data type's namespace", async () => {
    const meta = await market.rental.prices.metadata({}, { token: "all" })
    assert.strictEqual(meta.data_type, "gpu_rental_prices")
    assert.strictEqual((await problemOf(market.hardware.prices.latest({}, { token: "all" }))).status, 403)
    const hardware = await market.hardware.prices.latest({}, { token: "hardwareOnly" })
    assert.deepStrictEqual(hardware.data, [])
    assert.strictEqual((await problemOf(market.indices.latest({ id: "gpu-h100-sxm-na-daily" }, { token: "all" }))).status, 403)
  })

  it("write paths refuse a bad batch as a whole with 422 invalid_records", async () => {
    const refused = await problemOf(market.ingest.rental([untypedRecord]))
    assert.strictEqual(refused.status, 422)
    assert.strictEqual(refused.code, "invalid_records")
    assert.strictEqual(refused.problem.errors?.[0]?.parameter, "[0]")
  })
})

describe("Promise API token admin", () => {
  it("creates, lists and revokes tokens; a revoked token is 401", async () => {
    const market = await createMarket({ storage: memory() })
    try {
      const secret = await market.tokens.create(TOKENS.all)
      assert.isAbove(secret.length, 20)
      assert.deepStrictEqual((await market.tokens.list()).map((p) => p.id), [TOKENS.all.id])
      const page = await market.rental.prices.latest({ vendor: "v-alpha" }, { token: secret })
      assert.deepStrictEqual(page.data, [])
      assert.isTrue(await market.tokens.revoke(TOKENS.all.id))
      assert.strictEqual((await problemOf(market.rental.prices.latest({ vendor: "v-alpha" }, { token: secret }))).status, 401)
      const invalid = await problemOf(market.tokens.create({ ...TOKENS.all, rate_limit_per_minute: 0 }))
      assert.strictEqual(invalid.status, 422)
    } finally {
      await market.close()
    }
  })

  it("createMarket rejects with 503 storage_unavailable when storage cannot open", async () => {
    const notADir = join(dirname(tempDb("direct-bad")), "file")
    writeFileSync(notADir, "")
    const failed = await problemOf(createMarket({ storage: sqlite(join(notADir, "market.db")) }))
    assert.strictEqual(failed.status, 503)
    assert.strictEqual(failed.code, "storage_unavailable")
  })
})
