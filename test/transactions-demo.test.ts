import { assert, describe, layer } from "@effect/vitest"
import { Auth } from "@gpu-market/core"
import { TransactionStore } from "@gpu-market/core/storage"
import * as Demo from "@gpu-market/demo"
import { Effect, TestClock } from "effect"
import { http, NOW_MS } from "./support/market"
import { emptyMarket, follow, TX } from "./support/transactions"

const DAY_MS = 86_400_000
const everything = Effect.flatMap(TransactionStore, (s) => s.page({
  scope: { _tag: "window", start: "2000-01-01T00:00:00.000000Z", end: "2100-01-01T00:00:00.000000Z" },
  predicates: [], sort: { by: "row_key", order: "asc" }, after: undefined, limit: 1_000_000
}))

describe("aggregated transactions in the demo market", () => {
  layer(emptyMarket("tx-demo"), { timeout: "300 seconds" })((it) => {
    it.effect("the transaction demo publishes months of blends of every kind, rolling ones included, and the demo tokens' entitlements hold", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(NOW_MS)
        // seedDemo calls this with today, then issues the demo tokens; the other types' demos (most
        // of a full seed's half minute) are left out. test/start.e2e.test.ts serves the deals npm start's
        // seedDemo writes.
        yield* Demo.seedTransactionDemo(Math.floor(NOW_MS / DAY_MS))
        const auth = yield* Auth
        for (const t of Demo.DEMO_TOKENS) yield* auth.issue(t.principal, t.secret)
        const rows = yield* everything
        const dates = [...new Set(rows.map((r) => r.transaction_date))].sort()
        assert.strictEqual(dates[dates.length - 1], "2026-06-15")
        assert.isTrue(dates[0]! <= "2026-02-15", "at least 120 days of history")
        assert.isAtLeast(rows.length, 300)
        const count = (f: (r: (typeof rows)[number]) => boolean) => rows.filter(f).length
        assert.isAtLeast(count((r) => r.is_rolling), 50)
        for (const axis of ["none", "tenor", "region_group"]) assert.isAtLeast(count((r) => r.blend_axis === axis), 20, axis)
        assert.isAtLeast(count((r) => r.discount_percentage === null), 1)
        assert.sameMembers([...new Set(rows.map((r) => r.region_group))], ["north_america", "europe", "apac"])
        assert.sameMembers([...new Set(rows.map((r) => r.tenor_days))], [30, 90, 180, 365])
        assert.isAtLeast(new Set(rows.map((r) => r.gpu_canonical_name)).size, 5)

        const history = yield* follow(`${TX}/history?page_size=1000`, "demo-all")
        assert.isAbove(history.rows.length, 300)
        assert.strictEqual(history.rows[0].transaction_date, "2026-06-15")
        assert.strictEqual((yield* http(`${TX}/history`, { token: "demo-current" })).status, 403)
        assert.strictEqual((yield* http(`${TX}/metadata`, { token: "demo-current" })).status, 200)
        assert.strictEqual((yield* http(`${TX}/history`, { token: "demo-rental" })).status, 403)
        assert.strictEqual((yield* http(`${TX}/metadata`, { token: "demo-rental" })).status, 403)
      }), 240_000)

    it.effect("seeding again the same day adds nothing; days later it extends to today without changing the past", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(NOW_MS)
        const before = yield* everything
        yield* Demo.seedTransactionDemo(Math.floor(NOW_MS / DAY_MS))
        assert.deepStrictEqual(yield* everything, before)
        yield* TestClock.setTime(NOW_MS + 3 * DAY_MS)
        yield* Demo.seedTransactionDemo(Math.floor(NOW_MS / DAY_MS) + 3)
        const after = yield* everything
        const kept = new Map(after.map((r) => [r.row_key, r]))
        for (const r of before) assert.deepStrictEqual(kept.get(r.row_key), r)
        const added = after.filter((r) => !before.some((b) => b.row_key === r.row_key))
        assert.isAbove(added.length, 0)
        assert.sameMembers([...new Set(added.map((r) => r.transaction_date))], ["2026-06-16", "2026-06-17", "2026-06-18"])
      }), 240_000)
  })
})
