import { assert, describe, layer } from "@effect/vitest"
import { Envelope, RentalPriceRow } from "@gpu-market/core"
import { Effect, Schema } from "effect"
import { atNow, BASE_URL, fixtureLayer, http } from "./support/market"
import { compare, followPages } from "./support/paging"

const SORTS = ["gpu_canonical_name", "gpu_count", "gpu_memory_gb", "price_usd_per_gpu_hour", "region", "valid_from", "vendor"] as const
const validEnvelope = Schema.decodeUnknownSync(Envelope(Schema.encodedSchema(RentalPriceRow)), { onExcessProperty: "error" })

/** Follows `meta.next.url` from the first page to the last, checking each envelope. */
const follow = (first: string, token = "all") =>
  followPages(first, { token, validate: validEnvelope, prefix: `${BASE_URL}/v2/gpu/rental/prices/`, maxPages: 500, onlyTokenAndSize: true })

describe("rental prices paging", () => {
  layer(fixtureLayer("paging"), { timeout: "120 seconds" })((it) => {
    for (const by of SORTS) for (const order of ["asc", "desc"] as const) {
      it.effect(`latest and history: every row exactly once, in order, sorted by ${by} ${order}`, () =>
        Effect.gen(function* () {
          yield* atNow
          for (const base of [
            `/api/v2/gpu/rental/prices/latest?vendor=v-alpha,v-beta&sort_by=${by}&sort_order=${order}`,
            `/api/v2/gpu/rental/prices/history?start=2026-05-01&sort_by=${by}&sort_order=${order}&vendor=v-gamma`
          ]) {
            const all = yield* http(`${base}&page_size=1000`, { token: "all" })
            assert.strictEqual(all.status, 200, all.text)
            assert.isFalse(all.body.meta.has_more)
            const expected = [...all.body.data].sort(compare(by, order, "product_key"))
            assert.deepStrictEqual(all.body.data, expected, "one page is already in order")
            assert.isAbove(expected.length, 20)
            const ties = new Set(expected.map((r: any) => r[by])).size
            assert.isBelow(ties, expected.length, "the sort key has ties")
            const pages = yield* follow(`${base}&page_size=7`)
            assert.isTrue(pages.slice(0, -1).every((p) => p.body.data.length === 7))
            assert.deepStrictEqual(pages.flatMap((p) => p.body.data), expected)
            assert.deepStrictEqual(pages[0]!.body.meta.sort, { by, order })
          }
        }))
    }

    it.effect("page_size may change on later pages; the token keeps the rest", () =>
      Effect.gen(function* () {
        yield* atNow
        const first = yield* http("/api/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm&page_size=5", { token: "all" })
        const token = first.body.meta.next.query_params.page_token
        const second = yield* http(`/api/v2/gpu/rental/prices/latest?page_token=${token}&page_size=50`, { token: "all" })
        assert.strictEqual(second.status, 200)
        assert.strictEqual(second.body.meta.page_size, 50)
        const all = yield* http("/api/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm&page_size=1000", { token: "all" })
        assert.deepStrictEqual([...first.body.data, ...second.body.data], all.body.data)
      }))

    it.effect("a page_token beside anything but page_size is 422", () =>
      Effect.gen(function* () {
        yield* atNow
        const first = yield* http("/api/v2/gpu/rental/prices/latest?vendor=v-alpha&page_size=2", { token: "all" })
        const token = first.body.meta.next.query_params.page_token
        for (const extra of ["vendor=v-alpha", "sort_by=vendor", "region=us-east", "gpu_search=h100"]) {
          const r = yield* http(`/api/v2/gpu/rental/prices/latest?page_token=${token}&${extra}`, { token: "all" })
          assert.strictEqual(r.status, 422)
          assert.strictEqual(r.body.code, "validation_failed")
          assert.strictEqual(r.body.errors[0].parameter, extra.split("=")[0])
        }
      }))

    it.effect("a tampered, foreign or cross-endpoint page_token is 422, never a leak", () =>
      Effect.gen(function* () {
        yield* atNow
        const first = yield* http("/api/v2/gpu/rental/prices/latest?vendor=v-alpha&page_size=2", { token: "all" })
        const token: string = first.body.meta.next.query_params.page_token
        const flipped = token.slice(0, 10) + (token[10] === "A" ? "B" : "A") + token.slice(11)
        const cases: Array<[string, string, string]> = [
          [`/api/v2/gpu/rental/prices/latest?page_token=${flipped}`, "all", "altered"],
          [`/api/v2/gpu/rental/prices/latest?page_token=${token.slice(0, -2)}`, "all", "altered"],
          [`/api/v2/gpu/rental/prices/latest?page_token=%00%01`, "all", "not a page token"],
          [`/api/v2/gpu/rental/prices/latest?page_token=${token}`, "other", "another caller"],
          [`/api/v2/gpu/rental/prices/history?page_token=${token}`, "all", "another endpoint"]
        ]
        for (const [path, caller, says] of cases) {
          const r = yield* http(path, { token: caller })
          assert.strictEqual(r.status, 422, path)
          assert.strictEqual(r.headers.get("content-type"), "application/problem+json")
          assert.strictEqual(r.body.errors[0].parameter, "page_token")
          assert.include(r.body.detail, says)
          assert.notInclude(r.text, "v-alpha")
        }
      }))

    it.effect("a page deep in the result set is reached by keyset, not by counting", () =>
      Effect.gen(function* () {
        yield* atNow
        const pages = yield* follow("/api/v2/gpu/rental/prices/history?start=2026-05-01&page_size=1")
        assert.isAbove(pages.length, 100)
        // A token for page N opens exactly the row after page N-1's last row.
        const all = yield* http("/api/v2/gpu/rental/prices/history?start=2026-05-01&page_size=1000", { token: "all" })
        assert.deepStrictEqual(pages.map((p) => p.body.data[0]), all.body.data)
      }))
  })
})
