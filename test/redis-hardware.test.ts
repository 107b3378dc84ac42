import { assert, describe, layer } from "@effect/vitest"
import type { HardwarePrice } from "@gpu-market/core"
import { makeMemoryHardwarePriceStore, type PagePlan, type Scope, sortValue } from "@gpu-market/core/storage"
import { hardwareRow, hardwareDay, testListingKey } from "@gpu-market/storage-testkit"
import * as RedisStorage from "@gpu-market/storage-redis"
import { Effect, TestClock } from "effect"
import fc from "fast-check"
import { assertSameEverywhere, seededBackends } from "./support/backends"
import { HW, seed } from "./support/hardware"
import { atNow } from "./support/market"
import { TestRedis, testRedisLayer, uniquePrefix } from "./support/redis"

/**
 * Differential tests of the hardware price store on Redis: the fixture market written through
 * the ingest path into memory, SQLite and Redis reads back identically through the HTTP app,
 * page by page to the last; and random put sequences (days out of order, replaced rows, rows
 * moving GPU) leave Redis answering every plan and the summary as the reference store does.
 */

const SORTS = ["condition", "gpu_canonical_name", "observed_date", "price_usd"]
const SCOPES = [
  "latest?",
  "as-of?at=2026-02-01&",
  "as-of?at=2026-03-20T12:00:00Z&",
  "as-of?at=2026-05-31&",
  "history?start=2026-02-01&",
  "history?start=2026-04-02T06:00:00Z&end=2026-05-10&"
]
const FILTERS = [
  "gpu_canonical_name=h100-sxm",
  "gpu_canonical_name=l40s,mi300x",
  "condition=used,refurbished",
  "market=primary",
  "channel=broker,retailer",
  "transaction_level=server",
  "stock_status=in_stock",
  "country=US,JP",
  "country_group=europe&gpu_canonical_name=a100-sxm-80gb",
  "min_price_usd=20000&max_price_usd=200000",
  "condition=for_parts"
]

describe("hardware prices on Redis equal memory and SQLite", () => {
  layer(testRedisLayer(), { timeout: "240 seconds" })((it) => {
    it.effect("every sort, filter, scope and listing reads the same on every backend", () =>
      Effect.gen(function* () {
        yield* atNow
        const backends = yield* seededBackends("hardware-differential", seed)
        let rows = 0
        for (const scope of SCOPES) {
          // A fresh rate-limit window per scope: Redis expires a window's counter in real time,
          // while the test clock stands still, so one window must not outlast a real minute.
          yield* TestClock.adjust("1 minute")
          for (const by of SORTS) for (const order of ["asc", "desc"]) {
            rows += (yield* assertSameEverywhere(backends, `${HW}/${scope}sort_by=${by}&sort_order=${order}&page_size=499`, "hw-all")).length
          }
          for (const filter of FILTERS) rows += (yield* assertSameEverywhere(backends, `${HW}/${scope}${filter}&page_size=61`, "hw-all")).length
        }
        // Pinned by a listing: its days, in every scope.
        const latest = (yield* assertSameEverywhere(backends, `${HW}/latest?page_size=1000`, "hw-all")) as Array<HardwarePrice>
        for (const scope of SCOPES) {
          for (const listing of [latest[0]!.listing_key, latest[latest.length - 1]!.listing_key]) {
            rows += (yield* assertSameEverywhere(backends, `${HW}/${scope}listing_key=${listing}&sort_by=price_usd&page_size=3`, "hw-all")).length
          }
        }
        yield* assertSameEverywhere(backends, `${HW}/metadata`, "hw-all")
        // Refusals read the same too.
        yield* assertSameEverywhere(backends, `${HW}/latest?condition=NOT%20A%20VALUE`, "hw-all")
        yield* assertSameEverywhere(backends, `${HW}/history?start=2026-03-01`, "hw-current")
        assert.isAbove(rows, 20_000, "the plans compared real rows")
      }).pipe(Effect.scoped), 300_000)

    it.effect("random put sequences read back as the reference store reads them", () =>
      Effect.gen(function* () {
        const server = yield* TestRedis
        const gpus = ["g-a", "g-b", "g-c"]
        const row = fc.record({
          listing: fc.integer({ min: 0, max: 4 }),
          day: fc.integer({ min: 0, max: 12 }),
          gpu: fc.constantFrom(...gpus),
          price: fc.integer({ min: 1, max: 6 }),
          condition: fc.constantFrom(null, "new_sealed", "used"),
          country: fc.constantFrom(null, "US", "DE")
        }).map((r): HardwarePrice => hardwareRow({
          listing_key: testListingKey(`fc/${r.listing}`), gpu_canonical_name: r.gpu, observed_date: hardwareDay(r.day),
          price_usd: r.price * 1000, condition: r.condition, country: r.country
        }))
        const scope: fc.Arbitrary<Scope> = fc.oneof(
          fc.constant({ _tag: "latest" } as const),
          fc.integer({ min: -1, max: 13 }).map((d) => ({ _tag: "asOf", at: `${hardwareDay(d)}T12:00:00.000000Z` } as const)),
          fc.tuple(fc.integer({ min: 0, max: 13 }), fc.integer({ min: 0, max: 13 }), fc.boolean()).map(([a, b, odd]) => ({
            _tag: "window", start: `${hardwareDay(Math.min(a, b))}T${odd ? "00:00:00.000001" : "00:00:00.000000"}Z`, end: `${hardwareDay(Math.max(a, b))}T00:00:00.000000Z`
          } as const))
        )
        const plan = fc.record({
          scope,
          predicates: fc.subarray([
            { op: "in", field: "gpu_canonical_name", values: ["g-a", "g-c"] },
            { op: "eq", field: "listing_key", value: testListingKey("fc/1") },
            { op: "in", field: "condition", values: ["used"] },
            { op: "gte", field: "price_usd", value: 3000 }
          ] as const),
          by: fc.constantFrom(...SORTS),
          order: fc.constantFrom("asc" as const, "desc" as const),
          limit: fc.integer({ min: 1, max: 5 })
        })
        const batches = fc.array(fc.array(row, { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 6 })

        const walk = (page: (plan: PagePlan) => Effect.Effect<ReadonlyArray<HardwarePrice>, unknown>, plan: PagePlan) =>
          Effect.gen(function* () {
            const pages: Array<ReadonlyArray<HardwarePrice>> = []
            let after: PagePlan["after"] = undefined
            for (;;) {
              const rows: ReadonlyArray<HardwarePrice> = yield* page({ ...plan, after })
              pages.push(rows)
              if (rows.length < plan.limit) return pages
              const last: HardwarePrice = rows[rows.length - 1]!
              after = { value: sortValue(last, plan.sort.by), tie: last.observation_id }
            }
          })

        yield* Effect.promise(() => fc.assert(fc.asyncProperty(batches, fc.array(plan, { minLength: 1, maxLength: 6 }), (puts, plans) =>
          Effect.runPromise(Effect.scoped(Effect.gen(function* () {
            const redis = (yield* RedisStorage.make({ url: server.url, prefix: uniquePrefix("hw-fc") })).hardwarePriceStore
            const memory = makeMemoryHardwarePriceStore()
            for (const rows of puts) assert.deepStrictEqual(yield* redis.put(rows), yield* memory.put(rows))
            for (const p of plans) {
              const pagePlan: PagePlan = { scope: p.scope, predicates: p.predicates, sort: { by: p.by, order: p.order }, after: undefined, limit: p.limit }
              assert.deepStrictEqual(yield* walk(redis.page, pagePlan), yield* walk(memory.page, pagePlan), JSON.stringify(pagePlan))
            }
            assert.deepStrictEqual(yield* redis.summary, yield* memory.summary)
          })))), { numRuns: 60 }))
      }))
  })
})
