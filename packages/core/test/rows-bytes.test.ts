import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { bodyBytes, bodyJson } from "../src/adapters.js"
import { pageFromBytes, rowsBytes, withSerialisedData } from "../src/market/page-cache.js"

/** A row as stores return them: a flat record of JSON values, any text (multi-byte UTF-8 included). */
const row = fc.dictionary(
  fc.string({ unit: "binary", maxLength: 8 }),
  fc.oneof(fc.string({ unit: "binary" }), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer(), fc.boolean(), fc.constant(null)),
  { maxKeys: 6 }
)
const rows = fc.array(fc.tuple(row, fc.boolean()).map(([r, frozen]) => (frozen ? Object.freeze(r) : r)), { maxLength: 12 })
const meta = fc.record({
  sort: fc.record({ by: fc.string(), order: fc.constantFrom("asc" as const, "desc" as const) }),
  page_size: fc.nat(),
  returned: fc.nat(),
  has_more: fc.boolean(),
  next: fc.option(fc.record({ url: fc.string(), path: fc.string(), query_params: fc.dictionary(fc.string(), fc.string()) }), { nil: null })
})

describe("serialised rows", () => {
  it("rowsBytes is JSON.stringify in UTF-8, for any rows, frozen or not, served once or again", () => {
    fc.assert(fc.property(rows, (page) => {
      const expected = Buffer.from(JSON.stringify(page))
      assert.isTrue(Buffer.from(rowsBytes(page)).equals(expected))
      // The second time, frozen rows come from what the first kept.
      assert.isTrue(Buffer.from(rowsBytes(page)).equals(expected))
    }))
  })

  it("a page's body is the bytes and the text of JSON.stringify of the envelope, its rows parsed back from the bytes", () => {
    fc.assert(fc.property(rows, meta, (data, pageMeta) => {
      const frozen = data.map((r) => Object.freeze({ ...r }))
      const expected = JSON.stringify({ data: frozen, meta: pageMeta })
      const read = withSerialisedData({ data: frozen, meta: pageMeta }, rowsBytes(frozen))
      const cached = pageFromBytes(rowsBytes(frozen), pageMeta)
      for (const page of [read, cached]) {
        assert.strictEqual(Buffer.from(bodyBytes(page)).toString(), expected)
        assert.strictEqual(bodyJson(page), expected)
      }
      assert.deepStrictEqual(cached.data, JSON.parse(JSON.stringify(frozen)))
    }))
  })
})
