import { assert, describe, it, layer } from "@effect/vitest"
import { MAX_BODY_DEPTH, MAX_OFFER_REQUEST_BYTES, parseOfferRequest } from "@gpu-market/core/adapters"
import { Effect, Either } from "effect"
import fc from "fast-check"
import { stringify } from "yaml"
import { atMinute, expectProblem, getOffers, procurementFixture } from "./support/procurement"

/** A "billion laughs": nine levels of nine aliases, 9^9 nodes if expanded. */
const laughs = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
  .concat(Array.from({ length: 8 }, (_, i) => {
    const [name, prev] = [String.fromCharCode(98 + i), String.fromCharCode(97 + i)]
    return `${name}: &${name} [${Array(9).fill(`*${prev}`).join(", ")}]`
  })).join("\n") + "\ngpu: h100\ngpu_count: 1\n"

const BOMBS: ReadonlyArray<[string, string]> = [
  ["billion laughs", laughs],
  ["deep flow nesting", "gpu: " + "[".repeat(5000) + "]".repeat(5000)],
  ["deep block nesting", Array.from({ length: 170 }, (_, i) => `${" ".repeat(i)}k${i}:`).join("\n")],
  ["custom tag", "gpu: !!js/function 'function () { return 1 }'\ngpu_count: 1\n"],
  ["local tag", "gpu: !hack h100\ngpu_count: 1\n"],
  ["duplicate keys", "gpu: h100\ngpu: a100\ngpu_count: 1\n"],
  ["two documents", "gpu: h100\ngpu_count: 1\n---\ngpu: a100\n"],
  ["merge key", "base: &b { gpu: h100 }\n<<: *b\ngpu_count: 1\n"],
  ["__proto__", "__proto__: { polluted: true }\ngpu: h100\ngpu_count: 1\n"],
  ["huge number", `gpu: h100\ngpu_count: 1${"0".repeat(400)}\n`],
  ["binary", "\u0000\u0001\u0002gpu: h100"],
  ["tabs", "gpu:\th100\n\tgpu_count: 1"],
  ["unclosed quote", "gpu: \"h100\ngpu_count: 1\n"]
]

describe("procurement: hostile YAML is a 422, never a crash", () => {
  it("a hostile body never throws and never passes as a request", () => {
    for (const [name, yaml] of BOMBS) {
      const started = Date.now()
      const result = parseOfferRequest(yaml)
      assert.isTrue(Either.isLeft(result), name)
      if (Either.isLeft(result)) assert.strictEqual(result.left._tag, "ValidationFailed", name)
      assert.isBelow(Date.now() - started, 1000, `${name} took too long`)
    }
    assert.isFalse(Object.prototype.hasOwnProperty.call({}, "polluted"))
  })

  it("property: any text, any structure, any nesting is a request or a ValidationFailed / PayloadTooLarge", () => {
    const nested = fc.letrec((tie) => ({
      value: fc.oneof({ depthSize: "small" }, fc.jsonValue({ maxDepth: 2 }), fc.array(tie("value"), { maxLength: 3 }),
        fc.dictionary(fc.string({ maxLength: 12 }), tie("value"), { maxKeys: 4 }))
    })).value
    const yamlOf = fc.oneof(
      fc.string({ maxLength: 400 }),
      fc.string({ unit: "binary", maxLength: 200 }),
      nested.map((v) => stringify(v)),
      fc.record({ gpu: fc.string(), gpu_count: fc.oneof(fc.integer(), fc.double(), fc.string()), regions: fc.anything() }, { requiredKeys: [] })
        .map((v) => stringify(v)),
      fc.integer({ min: 1, max: 3000 }).map((d) => "[".repeat(d) + "]".repeat(d)),
      fc.integer({ min: 1, max: 200 }).map((n) => `a: &a [x]\n${Array.from({ length: n }, (_, i) => `k${i}: *a`).join("\n")}\ngpu: h\ngpu_count: 1\n`)
    )
    fc.assert(fc.property(yamlOf, (yaml) => {
      const result = parseOfferRequest(yaml)
      if (Either.isLeft(result)) assert.include(["ValidationFailed", "PayloadTooLarge"], result.left._tag)
      else assert.isAtLeast(result.right.gpu_count, 1)
    }), { numRuns: 400 })
  })

  it(`nesting past ${MAX_BODY_DEPTH} levels is refused in plain words, whatever form it takes`, () => {
    const issuesOf = (yaml: string) => {
      const result = parseOfferRequest(yaml)
      assert.isTrue(Either.isLeft(result) && result.left._tag === "ValidationFailed", yaml.slice(0, 80))
      return Either.isLeft(result) && result.left._tag === "ValidationFailed" ? result.left.errors : []
    }
    const tooDeep = [{ parameter: "body", message: `nested more than ${MAX_BODY_DEPTH} levels deep` }]
    const flow = (depth: number) => "[".repeat(depth) + "]".repeat(depth)
    // The mapping of the request is the first level.
    const block = (depth: number) => Array.from({ length: depth }, (_, i) => `${" ".repeat(i)}k${i}:`).join("\n") + " x\n"
    for (const deep of [
      `gpu: ${flow(MAX_BODY_DEPTH)}\n`,
      `gpu: ${flow(3000)}\n`,
      `gpu: ${"{a: ".repeat(3000)}1${"}".repeat(3000)}\n`,
      block(MAX_BODY_DEPTH + 1),
      `gpu:\n${Array.from({ length: MAX_BODY_DEPTH }, (_, i) => `${" ".repeat(2 * i)}- `).join("\n")}x\n`,
      `? ${flow(MAX_BODY_DEPTH)}\n: 1\n`,
      // Each alias nests the value it names one level deeper: the text nests 41 levels, the value 81.
      `a: &a ${flow(40)}\nb: &b [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[*a]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\ngpu: h100\ngpu_count: 1\n`
    ]) assert.deepStrictEqual(issuesOf(deep), tooDeep, deep.slice(0, 80))
    // At the bound, nesting is not what is wrong.
    for (const within of [`gpu: ${flow(MAX_BODY_DEPTH - 1)}\n`, block(MAX_BODY_DEPTH)]) {
      assert.notDeepEqual(issuesOf(within), tooDeep, within.slice(0, 80))
    }
  })

  it("the byte cap is checked before parsing", () => {
    const big = `gpu: h100\ngpu_count: 1\n#${"x".repeat(MAX_OFFER_REQUEST_BYTES)}`
    const result = parseOfferRequest(big)
    assert.isTrue(Either.isLeft(result) && result.left._tag === "PayloadTooLarge")
  })

  layer(procurementFixture("proc-yaml"), { timeout: "120 seconds" })((it) => {
    it.effect("over HTTP every bomb is a 422 problem", () =>
      Effect.gen(function* () {
        for (const [i, [name, yaml]] of BOMBS.entries()) {
          yield* atMinute(i)
          const p = expectProblem(yield* getOffers(yaml), 422, "validation_failed")
          assert.isAbove(p.errors!.length, 0, name)
        }
        yield* atMinute(BOMBS.length)
        expectProblem(yield* getOffers(new Uint8Array([0x67, 0x70, 0x75, 0x3a, 0x20, 0xff, 0xfe])), 422, "validation_failed")
      }))
  })
})
