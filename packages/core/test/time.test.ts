import { assert, describe, it } from "@effect/vitest"
import { formatDate, formatInstant, MAX_INSTANT, MIN_INSTANT, parseDate, parseDateTime } from "@gpu-market/core"
import fc from "fast-check"

describe("instants", () => {
  it("format is fixed-width, microsecond, UTC", () => {
    assert.strictEqual(formatInstant(Date.UTC(2026, 5, 1) * 1000), "2026-06-01T00:00:00.000000Z")
    assert.strictEqual(formatInstant(Date.UTC(2026, 5, 1) * 1000 + 86_400_000_000 - 1), "2026-06-01T23:59:59.999999Z")
    assert.strictEqual(formatInstant(MIN_INSTANT), "1700-01-01T00:00:00.000000Z")
    assert.strictEqual(formatInstant(MAX_INSTANT), "2199-12-31T23:59:59.999999Z")
  })

  it("instants beyond the exact range clamp instead of breaking text order", () => {
    assert.strictEqual(formatInstant(parseDate("9999-12-31")! + 86_400_000_000), "2199-12-31T23:59:59.999999Z")
    assert.strictEqual(formatInstant(parseDate("0001-01-01")!), "1700-01-01T00:00:00.000000Z")
  })

  it("parses offsets, missing offsets (UTC), fractions to the microsecond, and early years", () => {
    assert.strictEqual(parseDateTime("2026-06-01T02:00:00+02:00"), Date.UTC(2026, 5, 1) * 1000)
    assert.strictEqual(parseDateTime("2026-06-01T00:00:00-00:30"), Date.UTC(2026, 5, 1, 0, 30) * 1000)
    assert.strictEqual(parseDateTime("2026-06-01T00:00"), Date.UTC(2026, 5, 1) * 1000)
    assert.strictEqual(parseDateTime("2026-06-01T00:00:00.1234567Z"), Date.UTC(2026, 5, 1) * 1000 + 123_456)
    // Two-digit years are years 0–99, not 1900–1999 (Date.UTC's reading).
    assert.isBelow(parseDate("0042-03-04")!, parseDate("1700-01-01")!)
    assert.isBelow(parseDateTime("0099-12-31T23:59:59Z")!, parseDate("1700-01-01")!)
    assert.strictEqual(formatInstant(parseDate("1969-07-20")!), "1969-07-20T00:00:00.000000Z")
    for (const bad of ["2026-02-29", "2026-13-01", "2026-06-31", "2026-6-1"]) assert.isUndefined(parseDate(bad), bad)
    for (const bad of ["2026-06-01T24:00:00Z", "2026-06-01T00:60Z", "2026-06-01T00:00:00+25:00", "2026-06-01"]) assert.isUndefined(parseDateTime(bad), bad)
  })

  it("property: text order is time order, and format then parse is the identity", () => {
    const instant = fc.integer({ min: MIN_INSTANT, max: MAX_INSTANT })
    fc.assert(fc.property(instant, instant, (a, b) => {
      const fa = formatInstant(a), fb = formatInstant(b)
      assert.strictEqual(fa.length, 27)
      assert.strictEqual(Math.sign(a - b), fa < fb ? -1 : fa > fb ? 1 : 0)
      assert.strictEqual(parseDateTime(fa), a)
      assert.strictEqual(parseDate(formatDate(a)), Math.floor(a / 86_400_000_000) * 86_400_000_000)
    }), { numRuns: 2000, seed: 1121 })
  })
})
