import { assert, describe, it } from "@effect/vitest"
import { boundedCache } from "@gpu-market/core/adapters"

const cacheOf = () => boundedCache<{ readonly version: string; readonly text: string }>(1_000_000, (key, v) => key.length + v.text.length)
const at = (version: string) => ({ version, text: "x" })

describe("bounded cache admission", () => {
  it("keeps a value from its key's second offer, and remembers at most 4,096 keys offered once", () => {
    const cache = cacheOf()
    cache.set("a", at("1"))
    assert.isUndefined(cache.get("a", "1"))
    cache.set("a", at("1"))
    assert.deepStrictEqual(cache.get("a", "1"), at("1"))
    // Five thousand one-off keys, long ones (a bearer token in each): only the newest 4,096 are remembered.
    cache.set("first", at("1"))
    for (let i = 0; i < 5_000; i++) cache.set(`one-off-${i}-${"t".repeat(2_000)}`, at("1"))
    assert.strictEqual(cache.stats().offered, 4_096)
    cache.set("first", at("1"))
    assert.isUndefined(cache.get("first", "1"), "forgotten, so offered once again")
    cache.set(`one-off-4999-${"t".repeat(2_000)}`, at("1"))
    assert.isDefined(cache.get(`one-off-4999-${"t".repeat(2_000)}`, "1"))
  })

  it("a key whose entry went stale is kept again at once, and stale reads stay within the bound", () => {
    const cache = cacheOf()
    for (let i = 0; i < 5_000; i++) {
      cache.set(`k${i}`, at("1"))
      cache.set(`k${i}`, at("1"))
    }
    // A write moved the version: every entry read now is stale, dropped, and its key remembered.
    for (let i = 0; i < 5_000; i++) assert.isUndefined(cache.get(`k${i}`, "2"))
    assert.isAtMost(cache.stats().offered, 4_096)
    cache.set("k4999", at("2"))
    assert.deepStrictEqual(cache.get("k4999", "2"), at("2"))
  })
})
