import { assert, describe, layer } from "@effect/vitest"
import { TransactionStore } from "@gpu-market/core/storage"
import { Effect, TestClock } from "effect"
import { assertSameEverywhere, seededBackends } from "./support/backends"
import { atNow } from "./support/market"
import { testRedisLayer } from "./support/redis"
import { seed, TX } from "./support/transactions"

/**
 * Differential test of the transaction store: the fixture's deals recorded through the ingest
 * path into memory, SQLite and Redis publish the same rows, read back identically through the
 * HTTP app page by page to the last, for every sort in both orders, every filter and several
 * windows; the summary and the private audit agree too.
 */

const SORTS = ["contract_type", "gpu_model", "price_usd_per_gpu_hour", "region_group", "tenor_days", "total_gpu_count", "transaction_date"]
const WINDOWS = [
  "start=2026-03-01",
  "start=2026-04-02T06:00:00Z&end=2026-05-10",
  "start=2026-06-01&end=2026-06-01T12:00:00Z"
]
const FILTERS = [
  "gpu_canonical_name=h100-sxm",
  "gpu_canonical_name=b200,a100-sxm-80gb",
  "region_group=europe,apac",
  "contract_type=spot",
  "contract_type=reserved&region_group=north_america&gpu_canonical_name=b200",
  "min_total_gpu_count=24&max_total_gpu_count=48",
  "region_group=nowhere"
]

describe("aggregated transactions on Redis equal memory and SQLite", () => {
  layer(testRedisLayer(), { timeout: "240 seconds" })((it) => {
    it.effect("every sort, filter and window reads the same on every backend", () =>
      Effect.gen(function* () {
        yield* atNow
        const backends = yield* seededBackends("transactions-differential", seed)
        let rows = 0
        for (const window of WINDOWS) {
          // A fresh rate-limit window per window: Redis expires a window's counter in real time,
          // while the test clock stands still, so one window must not outlast a real minute.
          yield* TestClock.adjust("1 minute")
          for (const by of SORTS) for (const order of ["asc", "desc"]) {
            rows += (yield* assertSameEverywhere(backends, `${TX}/history?${window}&sort_by=${by}&sort_order=${order}&page_size=257`, "tx-all")).length
          }
          for (const filter of FILTERS) rows += (yield* assertSameEverywhere(backends, `${TX}/history?${window}&${filter}&page_size=31`, "tx-all")).length
        }
        yield* assertSameEverywhere(backends, `${TX}/metadata`, "tx-all")
        // Refusals read the same too.
        yield* assertSameEverywhere(backends, `${TX}/history?start=2026-03-01&sort_by=row_key`, "tx-all")
        yield* assertSameEverywhere(backends, `${TX}/history?start=2026-03-01`, "tx-current")
        assert.isAbove(rows, 5000, "the plans compared real rows")
        // The private record behind publication: the same deals behind the same rows.
        const audits = yield* Effect.forEach(Object.values(backends), (context) =>
          Effect.provide(Effect.flatMap(TransactionStore, (s) => s.audit), context))
        assert.isAbove(audits[0]!.length, 100)
        for (const audit of audits.slice(1)) assert.deepStrictEqual(audit, audits[0])
      }).pipe(Effect.scoped), 300_000)
  })
})
