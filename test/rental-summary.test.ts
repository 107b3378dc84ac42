import { assert, describe, layer } from "@effect/vitest"
import { Auth, baseProductKey, PageCache, type RentalPriceObservationInput, RentalPriceIngest } from "@gpu-market/core"
import { Effect, FastCheck as fc, TestClock } from "effect"
import { assertSameEverywhere, seededBackends } from "./support/backends"
import { atNow, fixtureLayer, GPUS, http, LAST_DAY, NOW_MS, observations, TOKENS, VENDORS } from "./support/market"
import { testRedisLayer } from "./support/redis"

/**
 * Rental price summaries (`/summary`, `/summary/history`): on random markets written into
 * memory, SQLite and Redis, every statistic equals one computed here from the `/latest` or
 * `/as-of` pages of the same query (identical on every backend), every point of a series equals
 * `/summary?as_of=` at its instant, and entitlements and floors bound what a token sees.
 */

const DAY_MS = 86_400_000
const HOUR_MS = 3_600_000
/** Day 0 of the generated markets: 40 days before the fixture's "now", so 1-, 7- and 30-day changes have a market to compare with. */
const DAY0_MS = NOW_MS - 40 * DAY_MS
const instant = (day: number, hour = 0) => new Date(DAY0_MS + day * DAY_MS + hour * HOUR_MS).toISOString()
const BASE = "/api/v2/gpu/rental/prices"
const REGIONS = ["us-east", "eu-west"]

interface Product {
  readonly vendor: string
  readonly gpu: number
  readonly region: string
  readonly contract: string
  readonly count: number
}
interface Batch {
  readonly at: readonly [day: number, hour: number]
  readonly prices: ReadonlyArray<readonly [product: number, step: number]>
  readonly withdraw: ReadonlyArray<number>
}
interface GeneratedMarket {
  readonly products: ReadonlyArray<Product>
  readonly batches: ReadonlyArray<Batch>
}

const observation = (p: Product, step: number, at: string): RentalPriceObservationInput => {
  const gpu = GPUS[p.gpu]!
  // Four prices per GPU, so groups tie on their min, median and cheapest offer often.
  const price = 1 + p.gpu * 0.5 + step * 0.25
  return {
    vendor: p.vendor, vendor_gpu_name: gpu.names[VENDORS.indexOf(p.vendor)]!, vendor_sku: `${gpu.slug}-${p.count}x`, region: p.region,
    gpu_canonical_name: gpu.slug, gpu_manufacturer: "nvidia", gpu_model: gpu.model, gpu_count: p.count, gpu_memory_gb: gpu.memory,
    contract_type: p.contract, availability: "available", price_usd_per_gpu_hour: price, raw_price: price * p.count,
    raw_price_unit: "usd_per_instance_hour", extracted_at: at
  }
}
const baseOf = (p: Product) => baseProductKey({
  vendor_region: null, instance_type: null, instance_variant: null, os: null, contract_term: null, ...observation(p, 0, instant(0))
})

/** Markets of 1 to 10 products (the last GPU never offered spot), priced and withdrawn in batches over 40 days. */
const generatedMarket: fc.Arbitrary<GeneratedMarket> = fc.uniqueArray(
  fc.record({
    vendor: fc.constantFrom(...VENDORS),
    gpu: fc.integer({ min: 0, max: GPUS.length - 1 }),
    region: fc.constantFrom(...REGIONS),
    contract: fc.constantFrom("ondemand", "spot", "reserved"),
    count: fc.constantFrom(1, 8)
  }).map((p) => (p.gpu === GPUS.length - 1 && p.contract === "spot" ? { ...p, contract: "ondemand" } : p)),
  { minLength: 1, maxLength: 10, selector: (p) => `${p.vendor}/${p.gpu}/${p.region}/${p.contract}/${p.count}` }
).chain((products) =>
  fc.uniqueArray(
    fc.record({
      at: fc.tuple(fc.integer({ min: 0, max: 39 }), fc.integer({ min: 0, max: 23 })),
      prices: fc.uniqueArray(fc.tuple(fc.nat(products.length - 1), fc.nat(3)), { minLength: 1, maxLength: products.length, selector: ([i]) => i }),
      withdraw: fc.uniqueArray(fc.nat(products.length - 1), { maxLength: 1 })
    }),
    { minLength: 1, maxLength: 8, selector: (b) => b.at[0] * 24 + b.at[1] }
  ).map((batches) => ({ products, batches: [...batches].sort((a, b) => a.at[0] * 24 + a.at[1] - (b.at[0] * 24 + b.at[1])) }))
)

const write = (market: GeneratedMarket) =>
  Effect.gen(function* () {
    const ingest = yield* RentalPriceIngest
    const auth = yield* Auth
    for (const name of ["all", "current"] as const) yield* auth.issue(TOKENS[name], name)
    for (const batch of market.batches) {
      const at = instant(...batch.at)
      yield* ingest.ingest(batch.prices.map(([i, step]) => observation(market.products[i]!, step, at)))
      if (batch.withdraw.length > 0) yield* ingest.withdraw(batch.withdraw.map((i) => baseOf(market.products[i]!)), instant(batch.at[0], batch.at[1] + 0.5))
    }
  })

type Group = "vendor" | "region" | "contract_type"
interface Query {
  readonly filters: Readonly<Record<string, string | number | undefined>>
  readonly groupBy: ReadonlyArray<Group>
  readonly asOf: string | undefined
  readonly pageSize: number
}
const someOf = <A>(values: ReadonlyArray<A>) => fc.uniqueArray(fc.constantFrom(...values), { minLength: 1, maxLength: values.length })
const maybe = <A>(arb: fc.Arbitrary<A>) => fc.option(arb, { nil: undefined })
const query: fc.Arbitrary<Query> = fc.record({
  filters: fc.record({
    vendor: maybe(someOf(VENDORS).map((v) => v.join(","))),
    region: maybe(fc.constantFrom(...REGIONS)),
    contract_type: maybe(someOf(["ondemand", "spot", "reserved"]).map((v) => v.join(","))),
    min_price_usd_per_gpu_hour: maybe(fc.constantFrom(1.5, 2))
  }),
  groupBy: fc.subarray(["contract_type", "region", "vendor"] as const),
  asOf: maybe(fc.tuple(fc.integer({ min: 0, max: 41 }), fc.integer({ min: 0, max: 23 })).map(([d, h]) => instant(d, h))),
  pageSize: fc.constantFrom(1, 2, 5, 100)
})

const text = (params: Readonly<Record<string, string | number | undefined>>) =>
  Object.entries(params).filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`).join("&")

/** The `q` quantile of `values`: numpy's default, the value at fractional rank `(n - 1) q` between its neighbours. */
const percentile = (values: ReadonlyArray<number>, q: number) => {
  const s = [...values].sort((a, b) => a - b)
  const h = (s.length - 1) * q
  const f = Math.floor(h)
  return s[f]! + (h - f) * (s[Math.min(f + 1, s.length - 1)]! - s[f]!)
}
const minOf = (values: ReadonlyArray<number>) => (values.length === 0 ? null : Math.min(...values))

/** The summary rows of `rows` (from `/latest` or `/as-of`), computed here, by group key. */
const expectedGroups = (rows: ReadonlyArray<any>, groupBy: ReadonlyArray<Group>) => {
  const groups = new Map<string, Array<any>>()
  for (const r of rows) {
    const key = JSON.stringify([r.gpu_canonical_name, ...(["vendor", "region", "contract_type"] as const).filter((g) => groupBy.includes(g)).map((g) => r[g])])
    groups.set(key, [...(groups.get(key) ?? []), r])
  }
  const out = new Map<string, any>()
  for (const [key, members] of groups) {
    const prices = members.map((r) => r.price_usd_per_gpu_hour as number)
    const cheapest = [...members].sort((a, b) => a.price_usd_per_gpu_hour - b.price_usd_per_gpu_hour || (a.product_key < b.product_key ? -1 : 1))[0]
    const spot = minOf(members.filter((r) => r.contract_type === "spot").map((r) => r.price_usd_per_gpu_hour))
    const ondemand = minOf(members.filter((r) => r.contract_type === "ondemand").map((r) => r.price_usd_per_gpu_hour))
    out.set(key, {
      offers: members.length,
      vendors: new Set(members.map((r) => r.vendor)).size,
      price_min: Math.min(...prices),
      price_p10: percentile(prices, 0.1),
      price_median: percentile(prices, 0.5),
      price_p90: percentile(prices, 0.9),
      price_max: Math.max(...prices),
      cheapest: { product_key: cheapest.product_key, base_product_key: cheapest.base_product_key, vendor: cheapest.vendor, price_usd_per_gpu_hour: cheapest.price_usd_per_gpu_hour },
      spot_min: spot,
      ondemand_min: ondemand,
      spot_discount_pct: spot === null || ondemand === null ? null : ((ondemand - spot) / ondemand) * 100
    })
  }
  return out
}

const keyOf = (row: any, groupBy: ReadonlyArray<Group>) =>
  JSON.stringify([row.gpu_canonical_name, ...(["vendor", "region", "contract_type"] as const).filter((g) => groupBy.includes(g)).map((g) => row[g])])

/** Floats compared to 9 places: the percentiles interpolate, and a change subtracts. */
const rounded = (value: unknown): unknown =>
  typeof value === "number" ? Math.round(value * 1e9) / 1e9
    : Array.isArray(value) ? value.map(rounded)
    : value !== null && typeof value === "object" ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, rounded(v)]))
    : value

describe("rental price summaries", () => {
  layer(testRedisLayer(), { timeout: "60 seconds" })((it) => {
    it.effect.prop(
      "every statistic equals one computed from /latest or /as-of pages, on memory, SQLite and Redis; each series point equals /summary?as_of=",
      { market: generatedMarket, queries: fc.array(query, { minLength: 1, maxLength: 3 }) },
      ({ market, queries }) =>
        Effect.gen(function* () {
          yield* TestClock.setTime(NOW_MS)
          const backends = yield* seededBackends("summary", write(market))
          const pages = (path: string) => assertSameEverywhere(backends, path)
          for (const q of queries) {
            const filters = { ...q.filters, group_by: q.groupBy.length === 0 ? undefined : q.groupBy.join(",") }
            const summary = yield* pages(`${BASE}/summary?${text({ ...filters, as_of: q.asOf, page_size: q.pageSize })}`)
            const asOfMs = q.asOf === undefined ? NOW_MS : Math.min(Date.parse(q.asOf), NOW_MS)
            const marketAt = (ms: number | undefined) => {
              const rows = { ...q.filters, vendor: q.filters.vendor ?? VENDORS.join(","), page_size: 1000 }
              return ms === undefined
                ? pages(`${BASE}/latest?${text(rows)}`)
                : pages(`${BASE}/as-of?${text({ ...rows, at: new Date(ms).toISOString() })}`)
            }
            const now = expectedGroups(yield* marketAt(q.asOf === undefined ? undefined : asOfMs), q.groupBy)
            const then = yield* Effect.forEach([1, 7, 30], (days) =>
              Effect.map(marketAt(asOfMs - days * DAY_MS), (rows) => expectedGroups(rows, q.groupBy)))
            assert.deepStrictEqual(summary.map((r) => keyOf(r, q.groupBy)), [...now.keys()].sort(), "one row per group, in key order")
            for (const row of summary as Array<any>) {
              const expected = now.get(keyOf(row, q.groupBy))
              const change = (earlier: any) => earlier === undefined ? null : {
                price_min: expected.price_min - earlier.price_min,
                price_median: expected.price_median - earlier.price_median,
                price_min_pct: ((expected.price_min - earlier.price_min) / earlier.price_min) * 100,
                price_median_pct: ((expected.price_median - earlier.price_median) / earlier.price_median) * 100
              }
              const { gpu_canonical_name, vendor, region, contract_type, as_of, ...statistics } = row
              assert.strictEqual(as_of, new Date(asOfMs).toISOString().replace("Z", "000Z"))
              for (const g of ["vendor", "region", "contract_type"] as const) assert.strictEqual(g in row, q.groupBy.includes(g))
              assert.deepStrictEqual(rounded(statistics), rounded({
                ...expected,
                change: { "1d": change(then[0]!.get(keyOf(row, q.groupBy))), "7d": change(then[1]!.get(keyOf(row, q.groupBy))), "30d": change(then[2]!.get(keyOf(row, q.groupBy))) }
              }), JSON.stringify({ gpu_canonical_name, vendor, region, contract_type }))
            }

            // The series of the last five days (midnights, UTC): each point is the summary as of its instant.
            const midnight = (daysBack: number) => new Date(Math.floor(NOW_MS / DAY_MS) * DAY_MS - daysBack * DAY_MS).toISOString()
            const series = yield* pages(`${BASE}/summary/history?${text({ ...filters, start: midnight(4).slice(0, 10), page_size: q.pageSize })}`)
            const expectedSeries: Array<unknown> = []
            for (let back = 4; back >= 0; back--) {
              const at = midnight(back).replace("Z", "000Z")
              const asOf = yield* pages(`${BASE}/summary?${text({ ...filters, as_of: at, page_size: 1000 })}`)
              for (const { as_of: _, cheapest: _c, spot_discount_pct: _d, change: _ch, ...point } of asOf as Array<any>) expectedSeries.push({ at, ...point })
            }
            const order = (a: any, b: any) => keyOf(a, q.groupBy) < keyOf(b, q.groupBy) ? -1 : keyOf(a, q.groupBy) > keyOf(b, q.groupBy) ? 1 : a.at < b.at ? -1 : 1
            assert.deepStrictEqual(series, expectedSeries.sort(order))
          }
        }).pipe(Effect.scoped),
      { timeout: 240_000, fastCheck: { numRuns: 8 } }
    )
  })
})

describe("rental price summaries: entitlements, floors and bad input", () => {
  layer(fixtureLayer("summary"), { timeout: "120 seconds" })((it) => {
    it.effect("a current-only token gets no change field, and no as_of or series", () =>
      Effect.gen(function* () {
        yield* atNow
        const current = yield* http(`${BASE}/summary?gpu_canonical_name=h100-sxm,l40s`, { token: "current" })
        assert.strictEqual(current.status, 200, current.text)
        assert.strictEqual(current.body.data.length, 2)
        for (const row of current.body.data) assert.isFalse("change" in row)
        const all = yield* http(`${BASE}/summary?gpu_canonical_name=h100-sxm,l40s`, { token: "all" })
        assert.isTrue(all.body.data.every((row: any) => "change" in row))
        for (const path of [`${BASE}/summary?as_of=2026-06-01`, `${BASE}/summary/history`]) {
          const refused = yield* http(path, { token: "current" })
          assert.strictEqual(refused.status, 403, refused.text)
          assert.strictEqual(refused.body.code, "insufficient_entitlement")
        }
        const other = yield* http(`${BASE}/summary`, { token: "hardwareOnly" })
        assert.strictEqual(other.status, 403)
      }))

    it.effect("a history floor bounds the series and the changes, and refuses an as_of below it", () =>
      Effect.gen(function* () {
        yield* atNow
        // Floor 2026-05-20: a window from May 1st is clamped to it.
        const series = yield* http(`${BASE}/summary/history?gpu_canonical_name=h100-sxm&start=2026-05-01&page_size=1000`, { token: "since" })
        assert.strictEqual(series.status, 200, series.text)
        assert.deepStrictEqual(series.body.meta.window, {
          start: "2026-05-20T00:00:00.000000Z", end: "2026-06-15T12:00:00.000000Z", clamped: true, history_starts_at: "2026-05-20"
        })
        assert.strictEqual(series.body.data[0].at, "2026-05-20T00:00:00.000000Z")
        assert.strictEqual(series.body.data.length, 27)
        // 30 days before now lies below the floor: that change is null, the 7-day one is not.
        const summary = yield* http(`${BASE}/summary?gpu_canonical_name=h100-sxm`, { token: "since" })
        assert.strictEqual(summary.body.data[0].change["30d"], null)
        assert.isNotNull(summary.body.data[0].change["7d"])
        const below = yield* http(`${BASE}/summary?as_of=2026-05-10`, { token: "since" })
        assert.strictEqual(below.status, 403, below.text)
      }))

    it.effect("a withdrawn GPU has a series until it left, and no summary row after", () =>
      Effect.gen(function* () {
        yield* atNow
        const series = yield* http(`${BASE}/summary/history?gpu_canonical_name=v100&start=2026-05-25&end=2026-06-05`, { token: "all" })
        assert.deepStrictEqual(series.body.data.map((p: any) => p.at.slice(0, 10)), ["2026-05-25", "2026-05-26", "2026-05-27", "2026-05-28", "2026-05-29", "2026-05-30"])
        const summary = yield* http(`${BASE}/summary?gpu_canonical_name=v100`, { token: "all" })
        assert.deepStrictEqual(summary.body.data, [])
        const weekly = yield* http(`${BASE}/summary/history?gpu_canonical_name=h100-sxm&interval=1w&start=2026-05-01`, { token: "all" })
        assert.deepStrictEqual(weekly.body.data.map((p: any) => p.at.slice(0, 10)), ["2026-05-04", "2026-05-11", "2026-05-18", "2026-05-25", "2026-06-01", "2026-06-08", "2026-06-15"])
      }))

    it.effect("a series or as_of summary of a fixed instant is kept in the page cache until a rental write, and answers the same from it", () =>
      Effect.gen(function* () {
        yield* atNow
        const cache = yield* PageCache
        const asOf = `${BASE}/summary?group_by=region&as_of=2026-05-25`
        // Its last point, tomorrow's midnight, is the market as it stands: a write now moves it.
        const series = `${BASE}/summary/history?gpu_canonical_name=l40s&start=2026-06-10&end=2026-06-16`
        const firsts = []
        for (const path of [asOf, series]) {
          const first = yield* http(path, { token: "all" })
          assert.strictEqual(first.status, 200, first.text)
          const before = cache.stats().entries
          // Kept from its second asking on; the third is answered from memory.
          for (let i = 0; i < 2; i++) assert.strictEqual((yield* http(path, { token: "all" })).text, first.text)
          assert.strictEqual(cache.stats().entries, before + 1)
          firsts.push(first.body)
        }
        const l40s = observations(LAST_DAY).find((o) => o.gpu_canonical_name === "l40s")!
        yield* (yield* RentalPriceIngest).ingest([{ ...l40s, price_usd_per_gpu_hour: 9.5, raw_price: 9.5 * l40s.gpu_count, extracted_at: new Date(NOW_MS).toISOString() }])
        assert.deepStrictEqual((yield* http(asOf, { token: "all" })).body, firsts[0])
        const after = (yield* http(series, { token: "all" })).body.data
        assert.strictEqual(after.at(-1).at, "2026-06-16T00:00:00.000000Z")
        assert.strictEqual(after.at(-1).price_max, 9.5)
        assert.deepStrictEqual(after.slice(0, -1), firsts[1].data.slice(0, -1))
        // The current market holds now: never kept.
        const before = cache.stats().entries
        for (let i = 0; i < 3; i++) yield* http(`${BASE}/summary?group_by=region`, { token: "all" })
        assert.strictEqual(cache.stats().entries, before)
      }))

    it.effect("bad parameters are 422 problems naming them", () =>
      Effect.gen(function* () {
        yield* atNow
        const cases: ReadonlyArray<readonly [string, string]> = [
          [`${BASE}/summary?group_by=gpu`, "group_by"],
          [`${BASE}/summary?as_of=yesterday`, "as_of"],
          [`${BASE}/summary?sort_by=vendor`, "sort_by"],
          [`${BASE}/summary/history?interval=2d`, "interval"],
          [`${BASE}/summary/history?interval=1h&start=2026-01-01`, "interval"],
          [`${BASE}/summary/history?as_of=2026-06-01`, "as_of"]
        ]
        for (const [path, parameter] of cases) {
          const reply = yield* http(path, { token: "all" })
          assert.strictEqual(reply.status, 422, `${path}: ${reply.text}`)
          assert.strictEqual(reply.headers.get("content-type"), "application/problem+json")
          assert.deepStrictEqual(reply.body.errors.map((e: any) => e.parameter), [parameter], path)
        }
        const first = yield* http(`${BASE}/summary?group_by=vendor&page_size=2`, { token: "all" })
        const beside = yield* http(`${first.body.meta.next.path}?page_token=${first.body.meta.next.query_params.page_token}&group_by=region`, { token: "all" })
        assert.strictEqual(beside.status, 422, beside.text)
        const stolen = yield* http(first.body.meta.next.url.slice("http://market.test".length), { token: "other" })
        assert.strictEqual(stolen.status, 422, stolen.text)
      }))
  })
})
