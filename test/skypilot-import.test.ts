import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createMarket, type FormatImportSummary, type Market, type PrincipalInput } from "@gpu-market/core"
import { redis } from "@gpu-market/storage-redis"
import { sqlite } from "@gpu-market/storage-sqlite"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { problemOf, tempDb } from "./support/adapters"
import { publicQuarantine, SKYPILOT_CLOUDS, SKYPILOT_EXPECTED } from "./support/formats"
import { type RedisServer, startRedis, uniquePrefix } from "./support/redis"

/**
 * SkyPilot catalogs imported through the Promise API: every real catalog
 * (test/fixtures/real/SOURCES.md) into Redis, with only the documented quirk refused, and
 * successive snapshots of one vendor building its price history in SQLite.
 */

const REAL = join(import.meta.dirname, "fixtures/real/skypilot")
const READER: PrincipalInput = {
  id: "reader", name: "reader", grants: { gpu_rental_prices: { history: { _tag: "unrestricted" } } }, indices: [],
  legacy_custom_index: false, procurement: false, rate_limit_per_minute: 100_000
}

describe("SkyPilot import of every real catalog (Promise API, Redis)", () => {
  let server: RedisServer
  let market: Market
  const summaries = new Map<string, FormatImportSummary>()
  beforeAll(async () => {
    server = await startRedis()
    market = await createMarket({ storage: redis(server.url, uniquePrefix("skypilot")) })
    await market.tokens.create(READER, "reader")
    for (const cloud of SKYPILOT_CLOUDS) {
      const csv = readFileSync(join(REAL, `${cloud}-vms.csv`), "utf8")
      summaries.set(cloud, await market.ingest.skypilot(csv, { vendor: cloud, observedAt: "2026-07-01T00:00:00Z" }))
    }
  }, 300_000)
  afterAll(async () => {
    await market.close()
    await server.stop()
  })

  it("stores every observation but the documented quirk, and accounts for every entry it read", () => {
    for (const cloud of SKYPILOT_CLOUDS) {
      const s = summaries.get(cloud)!
      const e = SKYPILOT_EXPECTED[cloud]
      assert.deepStrictEqual([s.counts, s.rejections.map((r) => r.line), s.written.opened, s.withdrawn], [e.counts, e.rejectedLines, e.counts.stored, null], cloud)
    }
    // primeintellect lists runpod__2xH100_80GB__48__502 at 5.9968 (line 102), then at 5.3968 (line 104): both refused, each naming the other.
    for (const r of summaries.get("primeintellect")!.rejections) {
      assert.strictEqual(r.reason, "conflicting_price")
      assert.include(r.message, "two prices for one product")
    }
    assert.include(summaries.get("primeintellect")!.rejections[0]!.message, "line 104")
  })

  it("quarantines primeintellect's listing at two prices by the shipped rule: recorded with its rule, not stored, not rejected", async () => {
    const csv = readFileSync(join(REAL, "primeintellect-vms.csv"), "utf8")
    const s = await market.ingest.skypilot(csv, { vendor: "primeintellect", observedAt: "2026-07-02T00:00:00Z", quarantine: publicQuarantine() })
    const e = SKYPILOT_EXPECTED.primeintellect.counts
    // A day later every other price is the one in force: unchanged.
    assert.deepStrictEqual(s.counts, { ...e, stored: 0, unchanged: e.stored, rejected: {}, quarantined: { conflicting_price: 2 } })
    assert.deepStrictEqual(s.rejections, [])
    assert.deepStrictEqual(s.quarantined.map((q) => [q.line, q.reason]), [[102, "conflicting_price"], [104, "conflicting_price"]])
    assert.match(s.quarantined[0]!.rule, /runpod__2xH100_80GB__48__502 twice at two prices/)
  })

  it("serves the real vendors' H100s at Price / GPU count per GPU-hour", async () => {
    const rows = []
    for await (const row of market.rental.prices.latest.rows({ gpu_search: ["h100"], page_size: 1000 }, { token: "reader" })) rows.push(row)
    assert.includeMembers([...new Set(rows.map((r) => r.vendor))], [...SKYPILOT_CLOUDS])
    for (const row of rows) {
      assert.approximately(row.price_usd_per_gpu_hour, row.raw_price / row.gpu_count, 5e-7, `${row.vendor} ${row.vendor_sku}`)
    }
    const lambda = rows.find((r) => r.vendor === "lambda" && r.vendor_sku === "gpu_8x_h100_sxm5" && r.vendor_region === "europe-central-1")!
    assert.deepStrictEqual(
      [lambda.gpu_canonical_name, lambda.vendor_gpu_name, lambda.gpu_count, lambda.raw_price, lambda.raw_price_unit, lambda.price_usd_per_gpu_hour],
      ["h100-sxm", "H100 SXM5", 8, 23.92, "usd_per_instance_hour", 2.99]
    )
    const runpod = rows.find((r) => r.vendor === "runpod" && r.vendor_sku === "1x_H100_SECURE" && r.vendor_region === "CA/CA-MTL-1")!
    assert.deepStrictEqual([runpod.gpu_canonical_name, runpod.vendor_gpu_name, runpod.region, runpod.price_usd_per_gpu_hour], ["h100-pcie", "NVIDIA H100 PCIe", "ca", 2.39])
  })
})

/** A SkyPilot catalog of vendor `acme` (read by SkyPilot's schema): 8 H100 per instance, instance type → on-demand price. */
const catalog = (prices: Record<string, number>) =>
  ["InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice",
    ...Object.entries(prices).map(([type, price]) => `${type},H100,8,208,1800,${price},us-east-1,,`)].join("\n")

describe("SkyPilot snapshots (Promise API, SQLite)", () => {
  let market: Market
  beforeAll(async () => {
    market = await createMarket({ storage: sqlite(tempDb("skypilot-snapshots")) })
    await market.tokens.create(READER, "reader")
  })
  afterAll(() => market.close())

  it("successive snapshots build history: a changed price opens a row, a dropped product is withdrawn at the later instant", async () => {
    const first = await market.ingest.skypilot(catalog({ kept: 24, dropped: 20 }), { vendor: "acme", observedAt: "2026-07-01T00:00:00Z", snapshot: true })
    // Each row's on-demand price is stored and its empty spot price skipped: four entries read.
    assert.deepStrictEqual([first.counts.read, first.counts.stored, first.counts.skipped, first.withdrawn], [4, 2, { no_spot: 2 }, 0])
    // Not a snapshot: what the file leaves out stays listed.
    const partial = await market.ingest.skypilot(catalog({ kept: 24 }), { vendor: "acme", observedAt: "2026-07-04T00:00:00Z" })
    assert.deepStrictEqual([partial.written.unchanged, partial.withdrawn], [1, null])
    const second = await market.ingest.skypilot(catalog({ kept: 28 }), { vendor: "acme", observedAt: "2026-07-08T00:00:00Z", snapshot: true })
    assert.deepStrictEqual([second.written.opened, second.written.closed, second.withdrawn], [1, 1, 1])

    const history = await market.rental.prices.history({ vendor: ["acme"], start: "2026-06-01", end: "2026-08-01", sort_by: "valid_from", sort_order: "asc", page_size: 100 }, { token: "reader" })
    assert.deepStrictEqual(history.data.map((r) => [r.vendor_sku, r.price_usd_per_gpu_hour, r.valid_from, r.valid_to]).sort(), [
      ["dropped", 2.5, "2026-07-01T00:00:00.000000Z", "2026-07-08T00:00:00.000000Z"],
      ["kept", 3, "2026-07-01T00:00:00.000000Z", "2026-07-08T00:00:00.000000Z"],
      ["kept", 3.5, "2026-07-08T00:00:00.000000Z", null]
    ])
    const latest = await market.rental.prices.latest({ vendor: ["acme"], page_size: 100 }, { token: "reader" })
    assert.deepStrictEqual(latest.data.map((r) => [r.vendor_sku, r.price_usd_per_gpu_hour]), [["kept", 3.5]])
    // The same snapshot again withdraws nothing more.
    const again = await market.ingest.skypilot(catalog({ kept: 28 }), { vendor: "acme", observedAt: "2026-07-08T00:00:00Z", snapshot: true })
    assert.deepStrictEqual([again.written.opened, again.withdrawn], [0, 0])
  })

  it("a snapshot that would withdraw more than maxWithdrawal of the vendor's current products is refused before anything is written", async () => {
    const vendor = "wide"
    const at = (day: number) => `2026-08-0${day}T00:00:00Z`
    await market.ingest.skypilot(catalog({ a: 10, b: 11, c: 12, d: 13 }), { vendor, observedAt: at(1), snapshot: true })
    const latest = async () => (await market.rental.prices.latest({ vendor: [vendor], page_size: 100 }, { token: "reader" })).data
      .map((r) => [r.vendor_sku, r.raw_price])
    const before = await latest()
    // Two of four (50%) against a limit of 25%: refused whole, the new price of a not written either.
    const problem = await problemOf(market.ingest.skypilot(catalog({ a: 14, b: 11 }), { vendor, observedAt: at(2), snapshot: true, maxWithdrawal: 0.25 }))
    assert.deepStrictEqual([problem.status, problem.code], [422, "validation_failed"])
    assert.match(problem.message, /max_withdrawal.*would withdraw 2 of 4 current products, more than 25%/)
    assert.deepStrictEqual(await latest(), before)
    // One of four is within the limit.
    const within = await market.ingest.skypilot(catalog({ a: 14, b: 11, c: 12 }), { vendor, observedAt: at(3), snapshot: true, maxWithdrawal: 0.25 })
    assert.deepStrictEqual([within.written.opened, within.withdrawn], [1, 1])
  })
})
