import { assert, describe, layer } from "@effect/vitest"
import { OfferList, RateLimits, RentalPriceIngest } from "@gpu-market/core"
import { Effect, Metric, Schema, TestClock } from "effect"
import { LAST_DAY, observations } from "./support/market"
import { atMinute, getOffers, H100_REQUEST, procure, procurementFixture, PROVISION_MS } from "./support/procurement"

/**
 * The market's own counters, read from Effect's metric registry as `/metrics` reads them: rows
 * offered to a write path (accepted, or named by a refusal), procurements entering each status,
 * and rate-limit refusals. (`test/observability.e2e.test.ts` scrapes the HTTP, page-cache and
 * storage ones from a running server.)
 */

/** The sum of a counter's values under the tag sets that include `tags`. */
const counted = (name: string, tags: Readonly<Record<string, string>> = {}) =>
  Effect.sync(() => Metric.unsafeSnapshot()
    .filter((p) => p.metricKey.name === name && Object.entries(tags).every(([k, v]) => p.metricKey.tags.some((t) => t.key === k && t.value === v)))
    .reduce((sum, p) => sum + Number((p.metricState as unknown as { readonly count: number }).count), 0))

/** How much `effect` moved the counter. */
const moved = <A, E, R>(name: string, tags: Readonly<Record<string, string>>, effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const before = yield* counted(name, tags)
    yield* effect
    return (yield* counted(name, tags)) - before
  })

describe("the market's metrics", () => {
  layer(procurementFixture("market-metrics"), { timeout: "120 seconds" })((it) => {
    it.effect("ingested rows: a stored batch counts every row accepted, a refused one the rows it names", () =>
      Effect.gen(function* () {
        const ingest = yield* RentalPriceIngest
        const rows = observations(LAST_DAY + 1).slice(0, 4)
        const accepted = { type: "rental", outcome: "accepted" }
        const rejected = { type: "rental", outcome: "rejected" }
        assert.strictEqual(yield* moved("gpu_market_ingest_rows_total", accepted, ingest.ingest(rows)), 4)
        const refused = ingest.ingest([rows[0]!, { ...rows[1]!, price_usd_per_gpu_hour: -1 }, { ...rows[2]!, vendor: 7 }]).pipe(Effect.flip)
        assert.strictEqual(yield* moved("gpu_market_ingest_rows_total", rejected, refused), 2)
        assert.strictEqual(yield* moved("gpu_market_ingest_rows_total", accepted, refused), 0)
      }))

    it.effect("procurements count each status they enter, once", () =>
      Effect.gen(function* () {
        yield* atMinute(30)
        const [offer] = Schema.decodeUnknownSync(OfferList)((yield* getOffers(H100_REQUEST)).body).data
        const pending = yield* counted("gpu_market_procurements_total", { status: "pending" })
        const provisioning = yield* counted("gpu_market_procurements_total", { status: "provisioning" })
        const fulfilled = yield* counted("gpu_market_procurements_total", { status: "fulfilled" })
        const created = yield* procure(offer!.offer_id, "metrics-1")
        assert.strictEqual(created.status, 201, created.text)
        assert.strictEqual((yield* procure(offer!.offer_id, "metrics-1")).status, 200, "a replay enters no status")
        assert.strictEqual((yield* counted("gpu_market_procurements_total", { status: "pending" })) - pending, 1)
        assert.strictEqual((yield* counted("gpu_market_procurements_total", { status: "provisioning" })) - provisioning, 1)
        yield* TestClock.adjust(PROVISION_MS)
        yield* procure(offer!.offer_id, "metrics-1")
        assert.strictEqual((yield* counted("gpu_market_procurements_total", { status: "fulfilled" })) - fulfilled, 1)
      }))

    it.effect("rate limits count the requests they refuse", () =>
      Effect.gen(function* () {
        yield* atMinute(60)
        const limits = yield* RateLimits
        assert.strictEqual(yield* moved("gpu_market_rate_limit_rejections_total", {}, limits.consume("metrics-key", 1)), 0)
        assert.strictEqual(yield* moved("gpu_market_rate_limit_rejections_total", {}, Effect.flip(limits.consume("metrics-key", 1))), 1)
      }))
  })
})
