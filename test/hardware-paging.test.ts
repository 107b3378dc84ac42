import { assert, describe, layer } from "@effect/vitest"
import { Envelope, HardwarePriceRow } from "@gpu-market/core"
import { Effect, Schema } from "effect"
import { HW, hardwareLayer } from "./support/hardware"
import { atNow, BASE_URL, http } from "./support/market"
import { compare, followPages } from "./support/paging"

const SORTS = ["condition", "gpu_canonical_name", "observed_date", "price_usd"] as const
const validEnvelope = Schema.decodeUnknownSync(Envelope(HardwarePriceRow), { onExcessProperty: "error" })
const encodedEnvelope = Schema.decodeUnknownSync(Envelope(Schema.encodedSchema(HardwarePriceRow)), { onExcessProperty: "error" })

/** Follows `meta.next.url` from the first page to the last, checking each encoded envelope. */
const follow = (first: string, token = "hw-all") =>
  followPages(first, { token, validate: encodedEnvelope, prefix: `${BASE_URL}${HW.slice("/api".length)}/`, maxPages: 1000 })

/** The plan contract's order: a null sorts as "", ties by observation_id. */
describe("hardware prices paging", () => {
  layer(hardwareLayer("hw-paging"), { timeout: "180 seconds" })((it) => {
    for (const by of SORTS) for (const order of ["asc", "desc"] as const) {
      it.effect(`latest, as-of and history: every row exactly once, in order, sorted by ${by} ${order}`, () =>
        Effect.gen(function* () {
          yield* atNow
          for (const base of [
            `${HW}/latest?sort_by=${by}&sort_order=${order}`,
            `${HW}/as-of?at=2026-04-10&sort_by=${by}&sort_order=${order}`,
            `${HW}/history?start=2026-04-01&end=2026-05-01&sort_by=${by}&sort_order=${order}`
          ]) {
            const all = yield* http(`${base}&page_size=1000`, { token: "hw-all" })
            assert.strictEqual(all.status, 200, all.text)
            assert.isFalse(all.body.meta.has_more)
            validEnvelope(all.body)
            const expected = [...all.body.data].sort(compare(by, order, "observation_id"))
            assert.deepStrictEqual(all.body.data, expected, "one page is already in order")
            assert.isAbove(expected.length, 20)
            assert.isBelow(new Set(expected.map((r: any) => r[by])).size, expected.length, "the sort key has ties")
            if (by === "condition") assert.isTrue(expected.some((r: any) => r.condition === null), "null conditions take part")
            const pages = yield* follow(`${base}&page_size=7`)
            assert.isTrue(pages.slice(0, -1).every((p) => p.body.data.length === 7))
            assert.deepStrictEqual(pages.flatMap((p) => p.body.data), expected)
            assert.deepStrictEqual(pages[0]!.body.meta.sort, { by, order })
          }
        }))
    }

    it.effect("defaults: latest and as-of by gpu_canonical_name asc, history by observed_date desc", () =>
      Effect.gen(function* () {
        yield* atNow
        const latest = yield* http(`${HW}/latest`, { token: "hw-all" })
        assert.deepStrictEqual(latest.body.meta.sort, { by: "gpu_canonical_name", order: "asc" })
        assert.strictEqual(latest.body.meta.page_size, 100)
        assert.notProperty(latest.body.meta, "window")
        const asOf = yield* http(`${HW}/as-of?at=2026-05-01`, { token: "hw-all" })
        assert.deepStrictEqual(asOf.body.meta.sort, { by: "gpu_canonical_name", order: "asc" })
        const history = yield* http(`${HW}/history`, { token: "hw-all" })
        assert.deepStrictEqual(history.body.meta.sort, { by: "observed_date", order: "desc" })
        assert.strictEqual(history.body.data[0].observed_date, "2026-06-15")
      }))

    it.effect("page_size may change on later pages; the token keeps the rest", () =>
      Effect.gen(function* () {
        yield* atNow
        const first = yield* http(`${HW}/history?gpu_canonical_name=h100-sxm&sort_by=price_usd&page_size=5`, { token: "hw-all" })
        const token = first.body.meta.next.query_params.page_token
        const second = yield* http(`${HW}/history?page_token=${token}&page_size=50`, { token: "hw-all" })
        assert.strictEqual(second.status, 200)
        assert.strictEqual(second.body.meta.page_size, 50)
        assert.deepStrictEqual(second.body.meta.window, first.body.meta.window)
        const all = yield* http(`${HW}/history?gpu_canonical_name=h100-sxm&sort_by=price_usd&page_size=55`, { token: "hw-all" })
        assert.deepStrictEqual([...first.body.data, ...second.body.data], all.body.data)
      }))

    it.effect("a page_token beside anything but page_size, tampered, foreign or from another endpoint is 422", () =>
      Effect.gen(function* () {
        yield* atNow
        const first = yield* http(`${HW}/latest?page_size=2`, { token: "hw-all" })
        const token: string = first.body.meta.next.query_params.page_token
        for (const extra of ["condition=used", "sort_by=price_usd", "country=US"]) {
          const r = yield* http(`${HW}/latest?page_token=${token}&${extra}`, { token: "hw-all" })
          assert.strictEqual(r.status, 422)
          assert.strictEqual(r.body.errors[0].parameter, extra.split("=")[0])
        }
        const flipped = token.slice(0, 10) + (token[10] === "A" ? "B" : "A") + token.slice(11)
        for (const [path, caller] of [
          [`${HW}/latest?page_token=${flipped}`, "hw-all"],
          [`${HW}/latest?page_token=${token}`, "hw-other"],
          [`${HW}/history?page_token=${token}`, "hw-all"],
          [`/api/v2/gpu/rental/prices/latest?page_token=${token}`, "hw-all"]
        ] as const) {
          const r = yield* http(path, { token: caller })
          // The rental endpoint refuses this caller first: it holds no rental grant.
          assert.include([422, 403], r.status, path)
          if (r.status === 422) assert.strictEqual(r.body.errors[0].parameter, "page_token")
        }
      }))

    it.effect("a page deep in history is reached by keyset: page N starts right after page N-1", () =>
      Effect.gen(function* () {
        yield* atNow
        const pages = yield* follow(`${HW}/history?start=2026-05-20&gpu_canonical_name=l40s&page_size=1`)
        assert.isAbove(pages.length, 100)
        const all = yield* http(`${HW}/history?start=2026-05-20&gpu_canonical_name=l40s&page_size=1000`, { token: "hw-all" })
        assert.deepStrictEqual(pages.map((p) => p.body.data[0]), all.body.data)
      }))
  })
})
