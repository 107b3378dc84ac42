import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { atNow, http } from "./support/market"
import { compare } from "./support/paging"
import { follow, TX, txFixtureLayer } from "./support/transactions"

const SORTS = ["contract_type", "gpu_model", "price_usd_per_gpu_hour", "region_group", "tenor_days", "total_gpu_count", "transaction_date"] as const

describe("aggregated transactions paging", () => {
  layer(txFixtureLayer("tx-paging"), { timeout: "120 seconds" })((it) => {
    for (const by of SORTS) for (const order of ["asc", "desc"] as const) {
      it.effect(`every row exactly once, in order, sorted by ${by} ${order}`, () =>
        Effect.gen(function* () {
          yield* atNow
          for (const base of [
            `${TX}/history?start=2026-03-01&gpu_canonical_name=h100-sxm&sort_by=${by}&sort_order=${order}`,
            `${TX}/history?start=2026-05-01&end=2026-05-31&sort_by=${by}&sort_order=${order}`
          ]) {
            const all = yield* http(`${base}&page_size=1000`, { token: "tx-all" })
            assert.strictEqual(all.status, 200, all.text)
            assert.isFalse(all.body.meta.has_more)
            const expected = [...all.body.data].sort(compare(by, order, "row_key"))
            assert.deepStrictEqual(all.body.data, expected, "one page is already in order")
            assert.isAbove(expected.length, 100)
            const ties = new Set(expected.map((r: any) => r[by])).size
            assert.isBelow(ties, expected.length, "the sort key has ties")
            const { pages, rows } = yield* follow(`${base}&page_size=7`)
            assert.isTrue(pages.slice(0, -1).every((p) => p.body.data.length === 7))
            assert.deepStrictEqual(rows, expected)
            assert.deepStrictEqual(pages[0]!.body.meta.sort, { by, order })
          }
        }))
    }

    it.effect("the default order is transaction_date desc, newest first, ties by row_key", () =>
      Effect.gen(function* () {
        yield* atNow
        const r = yield* http(`${TX}/history?page_size=1000&gpu_canonical_name=b200`, { token: "tx-all" })
        assert.strictEqual(r.status, 200)
        assert.deepStrictEqual(r.body.meta.sort, { by: "transaction_date", order: "desc" })
        assert.deepStrictEqual(r.body.data, [...r.body.data].sort(compare("transaction_date", "desc", "row_key")))
        assert.strictEqual(r.body.data[0].transaction_date, "2026-06-15")
      }))

    it.effect("page_size may change on later pages; the token keeps the rest", () =>
      Effect.gen(function* () {
        yield* atNow
        const first = yield* http(`${TX}/history?region_group=europe&page_size=5`, { token: "tx-all" })
        const token = first.body.meta.next.query_params.page_token
        const second = yield* http(`${TX}/history?page_token=${token}&page_size=50`, { token: "tx-all" })
        assert.strictEqual(second.status, 200)
        assert.strictEqual(second.body.meta.page_size, 50)
        assert.deepStrictEqual(second.body.meta.window, first.body.meta.window)
        const all = yield* http(`${TX}/history?region_group=europe&page_size=55`, { token: "tx-all" })
        assert.deepStrictEqual([...first.body.data, ...second.body.data], all.body.data)
      }))

    it.effect("a page_token beside anything but page_size, altered, foreign or from another endpoint is 422", () =>
      Effect.gen(function* () {
        yield* atNow
        const first = yield* http(`${TX}/history?contract_type=spot&page_size=2`, { token: "tx-all" })
        const token: string = first.body.meta.next.query_params.page_token
        for (const extra of ["contract_type=spot", "sort_by=tenor_days", "region_group=apac", "start=2026-05-01"]) {
          const r = yield* http(`${TX}/history?page_token=${token}&${extra}`, { token: "tx-all" })
          assert.strictEqual(r.status, 422)
          assert.strictEqual(r.body.errors[0].parameter, extra.split("=")[0])
        }
        const rental = yield* http(`/api/v2/gpu/rental/prices/history?page_token=${token}`, { token: "tx-all" })
        assert.strictEqual(rental.status, 403, "the rental type is not granted, which is checked first")
        const flipped = token.slice(0, 10) + (token[10] === "A" ? "B" : "A") + token.slice(11)
        for (const [t, caller] of [[flipped, "tx-all"], [token, "tx-other"]] as const) {
          const r = yield* http(`${TX}/history?page_token=${t}`, { token: caller })
          assert.strictEqual(r.status, 422)
          assert.strictEqual(r.body.errors[0].parameter, "page_token")
        }
      }))
  })
})
