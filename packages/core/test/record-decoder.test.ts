import { assert, describe, it } from "@effect/vitest"
import { HardwarePriceObservation, RentalPriceObservation } from "@gpu-market/core"
import { Either, ParseResult, Schema } from "effect"
import fc from "fast-check"
import { hasFastPath, recordDecoder } from "../src/ingest/record-decoder"

/**
 * `recordDecoder` answers as the parser does for every input: the same value for a valid record
 * (properties in the same order, defaults filled), and the same issues for an invalid one.
 */

const answer = (result: Either.Either<unknown, ParseResult.ParseError>) =>
  Either.isRight(result)
    ? { value: JSON.stringify(result.right) }
    : { issues: ParseResult.ArrayFormatter.formatErrorSync(result.left).map((i) => `${i.path.map(String).join(".")}: ${i._tag}: ${i.message}`) }

const sameAsParser = <A, I>(schema: Schema.Schema<A, I>) => {
  const parse = Schema.decodeUnknownEither(schema, { errors: "all", onExcessProperty: "error" })
  const decode = recordDecoder(schema)
  return (u: unknown): boolean => {
    const expected = answer(parse(u))
    assert.deepStrictEqual(answer(decode(u)), expected, JSON.stringify(u))
    return "value" in expected
  }
}

const RENTAL = {
  vendor: "lambda", vendor_gpu_name: "H100 SXM5", vendor_sku: "gpu_8x_h100_sxm5", vendor_region: "us-east-1", region: "us-east",
  gpu_canonical_name: "h100-sxm", gpu_manufacturer: "nvidia", gpu_model: "H100", gpu_count: 8, gpu_memory_gb: 80, vcpu: 208,
  ram_gb: 1800, contract_type: "ondemand", price_usd_per_gpu_hour: 2.99, raw_price: 23.92, raw_price_unit: "usd_per_instance_hour",
  extracted_at: "2026-06-01T00:00:00Z"
}

/** Values a field may be set to: valid ones, wrong types, values a refinement refuses, and absence. */
const fieldValue = fc.oneof(
  fc.constantFrom<unknown>(undefined, null, "", "x", "H100", "h100-sxm", "Bad Slug", "a".repeat(201), 0, -1, 1, 2.5, 8, Number.NaN, Infinity, true, [], {}),
  fc.string(),
  fc.double()
)

describe("recordDecoder", () => {
  it("judges rental observations by its compiled checks, which the import's speed rests on", () => {
    assert.isTrue(hasFastPath(RentalPriceObservation))
    // A schema with a node the checks do not cover goes to the parser.
    assert.isFalse(hasFastPath(Schema.Struct({ at: Schema.DateFromString })))
  })

  it("answers as the parser for rental observations, valid or not", () => {
    const check = sameAsParser(RentalPriceObservation)
    const fields = Object.keys(RENTAL)
    let valid = 0
    fc.assert(fc.property(
      fc.dictionary(fc.constantFrom(...fields, "unknown_field", "os", "availability"), fieldValue, { maxKeys: 4 }),
      fc.subarray(fields, { maxLength: 3 }),
      (changes, dropped) => {
        const record: Record<string, unknown> = { ...RENTAL }
        for (const f of dropped) delete record[f]
        for (const [k, v] of Object.entries(changes)) {
          if (v === undefined && k.length % 2 === 0) delete record[k]
          else record[k] = v
        }
        if (check(record)) valid++
      }
    ), { numRuns: 2_000 })
    assert.isAbove(valid, 100, "valid records were compared too")
  })

  it("answers as the parser for what is not a plain record", () => {
    const check = sameAsParser(RentalPriceObservation)
    for (const u of [null, undefined, 1, "x", [], [RENTAL], new Map(), Object.create({ ...RENTAL }), Object.assign(Object.create(null), RENTAL)]) check(u)
    check(Object.defineProperty({ ...RENTAL }, "hidden", { value: 1, enumerable: false }))
    check({ ...RENTAL, [Symbol("s")]: 1 })
  })

  it("answers as the parser for a record refined as a whole", () => {
    const check = sameAsParser(RentalPriceObservation.pipe(Schema.filter((o) => o.raw_price >= (o.price_usd_per_gpu_hour ?? 0) || "raw_price below the price per GPU")))
    assert.isTrue(check(RENTAL))
    assert.isFalse(check({ ...RENTAL, raw_price: 1 }))
    assert.isFalse(check({ ...RENTAL, raw_price: "1" }))
  })

  it("answers as the parser for another write path's observations", () => {
    const check = sameAsParser(HardwarePriceObservation)
    check({ listing_ref: "l-1", gpu_canonical_name: "h100-sxm", observed_date: "2026-06-01", price_usd: 25_000 })
    check({ listing_ref: "", gpu_canonical_name: "h100-sxm", observed_date: "2026-06-01", seller: "x" })
  })
})
