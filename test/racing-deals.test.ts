import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { TransactionIngest, type TransactionIngestSummary } from "@gpu-market/core"
import { type StoredDeal, TransactionStore } from "@gpu-market/core/storage"
import * as Demo from "@gpu-market/demo"
import * as RedisStorage from "@gpu-market/storage-redis"
import { Effect, Layer, ManagedRuntime } from "effect"
import { type RedisServer, startRedis, uniquePrefix } from "./support/redis"

/**
 * Two clients of one redis-server record deals of the same pools at the same time: each day's
 * demo deals split between them, both sending day after day as fast as they can. Each write
 * reads its pools' pending deals, decides which blends they form and writes all of it in one
 * checked batch, so a write that raced another finds its checks failed and decides again from
 * fresh reads. Neither caller may get an error, and the store must hold every deal once, in at
 * most one cohort, one published row per cohort, with nothing pending that a blend should have
 * taken.
 */

const DAYS = 30
const FIRST_DAY = Date.UTC(2026, 0, 1) / 86_400_000

describe("two writers recording deals of the same pools at once", () => {
  let server: RedisServer | undefined
  beforeAll(async () => {
    server = await startRedis()
  })
  afterAll(async () => {
    await server?.stop()
  })

  it("Redis: both succeed; every deal is stored once and in one cohort at most, one published row per cohort, no blend missed", { timeout: 120_000 }, async () => {
    const prefix = uniquePrefix("deals-race")
    const writer = () => ManagedRuntime.make(TransactionIngest.Default.pipe(Layer.provideMerge(RedisStorage.layer({ url: server!.url, prefix }))))
    const writers = [writer(), writer()]
    const alone = ManagedRuntime.make(TransactionIngest.Default.pipe(Layer.provideMerge(RedisStorage.layer({ url: server!.url, prefix: uniquePrefix("deals-alone") }))))
    try {
      const days = Array.from({ length: DAYS }, (_, d) => Demo.demoDeals(FIRST_DAY + d))
      const all = days.flat()
      const record = (runtime: (typeof writers)[number], deals: ReadonlyArray<unknown>) =>
        runtime.runPromise(Effect.flatMap(TransactionIngest, (ingest) => ingest.record(deals)))
      const results: Array<TransactionIngestSummary> = []
      await Promise.all(writers.map(async (runtime, parity) => {
        for (const deals of days) results.push(await record(runtime, deals.filter((_, i) => i % 2 === parity)))
      }))
      assert.strictEqual(results.reduce((n, r) => n + r.recorded, 0), all.length, "every deal recorded by one of the writers")

      // The same deals, one writer, day by day: what the store must add up to.
      for (const deals of days) await record(alone, deals)
      const state = (runtime: typeof alone) => runtime.runPromise(Effect.gen(function* () {
        const store = yield* TransactionStore
        const deals = yield* store.deals(all.map((d) => d.deal_id))
        return { deals, audit: yield* store.audit }
      }))
      const raced = await state(writers[0]!)
      const single = await state(alone)

      const terms = (d: StoredDeal) => JSON.stringify({ ...d, cohort: null })
      assert.sameMembers(raced.deals.map(terms), single.deals.map(terms), "every deal stored once, with its terms")
      // One published row per cohort, each deal in one cohort; a rolling row also carries the
      // deals of the cohort before it, so a deal is in one row, or two when the next one rolled.
      const cohorts = new Set(raced.deals.flatMap((d) => (d.cohort === null ? [] : [d.cohort])))
      assert.isAbove(cohorts.size, 0)
      assert.strictEqual(raced.audit.length, cohorts.size, "one published row per cohort")
      const rowsOf = new Map<string, number>()
      for (const r of raced.audit) for (const id of r.deal_ids) rowsOf.set(id, (rowsOf.get(id) ?? 0) + 1)
      assert.sameMembers([...rowsOf.keys()], raced.deals.filter((d) => d.cohort !== null).map((d) => d.deal_id), "the published rows account for exactly the blended deals")
      assert.isAtMost(Math.max(...rowsOf.values()), 2, "no deal in more than its own row and one rolling row")
      // No blend was missed: publishing again from the pending deals forms none.
      const again = await writers[1]!.runPromise(Effect.flatMap(TransactionIngest, (ingest) => ingest.publish()))
      assert.strictEqual(again.published, 0, "a blend the pending deals could form was left unpublished")
    } finally {
      await Promise.all([...writers, alone].map((r) => r.dispose()))
    }
  })
})
