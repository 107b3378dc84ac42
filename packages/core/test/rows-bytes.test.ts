import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { createHash } from "node:crypto"
import { bodyJson, responseBody } from "../src/adapters.js"
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
      const first = rowsBytes(page)
      assert.isTrue(Buffer.concat(first.parts).equals(expected))
      assert.strictEqual(first.length, expected.length)
      // The second time, frozen rows come from what the first kept.
      assert.isTrue(Buffer.concat(rowsBytes(page).parts).equals(expected))
    }))
  })

  it("a page's body is the bytes and the text of JSON.stringify of the envelope, its rows parsed back from the bytes", () => {
    fc.assert(fc.property(rows, meta, (data, pageMeta) => {
      const frozen = data.map((r) => Object.freeze({ ...r }))
      const expected = JSON.stringify({ data: frozen, meta: pageMeta })
      const read = withSerialisedData({ data: frozen, meta: pageMeta }, rowsBytes(frozen))
      const cached = pageFromBytes(rowsBytes(frozen), pageMeta)
      for (const page of [read, cached]) {
        assert.strictEqual(Buffer.from(responseBody(page).bytes).toString(), expected)
        assert.strictEqual(bodyJson(page), expected)
      }
      assert.deepStrictEqual(cached.data, JSON.parse(JSON.stringify(frozen)))
    }))
  })

  it("a page's body has a digest that tells bodies apart exactly as their bytes do, frozen rows or not; other bodies have none", () => {
    const pageOf = (data: ReadonlyArray<object>, pageMeta: object) => {
      const body = responseBody(withSerialisedData({ data, meta: pageMeta as never }, rowsBytes(data)))
      return { text: Buffer.from(body.bytes).toString(), digest: body.digest }
    }
    fc.assert(fc.property(rows, meta, rows, meta, (a, metaA, b, metaB) => {
      const frozenA = a.map((r) => Object.freeze({ ...r }))
      const x = pageOf(frozenA, metaA)
      // The same rows as new objects (a row read again), served again: the same digest.
      const again = pageOf(frozenA.map((r) => Object.freeze({ ...r })), JSON.parse(JSON.stringify(metaA)))
      // Rows frozen or not, as `rows` draws them.
      const y = pageOf(b, metaB)
      assert.isDefined(x.digest)
      assert.isTrue(Buffer.from(x.digest!).equals(Buffer.from(again.digest!)))
      assert.strictEqual(Buffer.from(x.digest!).equals(Buffer.from(y.digest!)), x.text === y.text, `${x.text} / ${y.text}`)
    }))
    // Rows not frozen (a store that keeps none) get the same digest as the same rows frozen; a
    // body that is not a page has none, and is hashed whole.
    const loose = responseBody(withSerialisedData({ data: [{ a: 1 }], meta: {} as never }, rowsBytes([{ a: 1 }])))
    const held = responseBody(withSerialisedData({ data: [Object.freeze({ a: 1 })], meta: {} as never }, rowsBytes([Object.freeze({ a: 1 })])))
    assert.isTrue(Buffer.from(loose.digest!).equals(Buffer.from(held.digest!)))
    assert.isUndefined(responseBody({ a: 1 }).digest)
    // A page recorded without its bytes (read around the cache) is serialised when its body is
    // asked for: the same bytes and digest as one whose rows were serialised when read.
    const later = responseBody(withSerialisedData({ data: [{ a: 1 }], meta: {} as never }))
    assert.isTrue(Buffer.from(later.bytes).equals(Buffer.from(loose.bytes)))
    assert.isTrue(Buffer.from(later.digest!).equals(Buffer.from(loose.digest!)))
    // The digest of a page stands for its rows and meta: the same rows one by one, then the meta.
    const one = Object.freeze({ a: 1 }), two = Object.freeze({ b: "é" })
    const sha = (...parts: ReadonlyArray<Uint8Array | string>) => parts.reduce((h, p) => h.update(p), createHash("sha256")).digest()
    const rowsPart = sha(sha(JSON.stringify(one)), sha(JSON.stringify(two)))
    const body = responseBody(withSerialisedData({ data: [one, two], meta: { page_size: 2 } as never }, rowsBytes([one, two])))
    assert.isTrue(Buffer.from(body.digest!).equals(sha(rowsPart, JSON.stringify({ page_size: 2 }))))
  })
})
