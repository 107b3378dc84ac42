import { assert, type Vitest } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fc from "effect/FastCheck"
import { formatInstant, isOutlierPrice, LlmTokenPriceIngest, type LlmTokenPriceObservationInput, MICROS_PER_DAY, outlierReference } from "@gpu-market/core"
import { LlmTokenPriceStore } from "@gpu-market/core/storage"
import { namespace } from "./namespace.js"

/**
 * The outlier property every backend must keep: the flags of a market do not depend on the order
 * its observations arrive in, nor on how they are split into batches, and are the documented
 * rule applied to the whole market in force at each row's start.
 */


const T0 = Date.UTC(2026, 0, 1) * 1000
const INSTANTS = [formatInstant(T0), formatInstant(T0 + MICROS_PER_DAY)] as const

/** Prices are a group's base price times one of these: around and exactly at the 5× bounds. */
const FACTORS = [0.05, 0.1, 0.19, 0.2, 0.5, 0.9, 1, 1.1, 2, 4.9, 5, 6, 10, 30] as const
const BASE = { input: 1, output: 4 } as const

interface Thing {
  readonly model: number
  readonly provider: number
  readonly price_type: keyof typeof BASE
  readonly region: string
}

/** A market of priced things, each quoted at one or both instants; the order and batches one ingest of it sends. */
interface Case {
  readonly things: ReadonlyArray<{ readonly thing: Thing; readonly factors: readonly [number | null, number | null] }>
  readonly order: ReadonlyArray<number>
  readonly sizes: ReadonlyArray<number>
}

const MAX_OBSERVATIONS = 48
const factor = fc.option(fc.nat(FACTORS.length - 1), { nil: null, freq: 4 })

const caseArb: fc.Arbitrary<Case> = fc.record({
  things: fc.uniqueArray(
    fc.record({
      thing: fc.record({
        model: fc.nat(1),
        provider: fc.nat(6),
        price_type: fc.constantFrom("input", "output"),
        region: fc.constantFrom("global", "eu-west")
      }),
      factors: fc.tuple(factor, factor)
    }),
    { minLength: 1, maxLength: MAX_OBSERVATIONS / 2, selector: ({ thing }) => JSON.stringify(thing) }
  ),
  order: fc.array(fc.nat(), { minLength: MAX_OBSERVATIONS, maxLength: MAX_OBSERVATIONS }),
  sizes: fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 1, maxLength: 8 })
})

interface Quote {
  readonly id: string
  readonly thing: Thing
  readonly instant: number
  readonly price: number
}

const quotesOf = (c: Case): Array<Quote> =>
  c.things.flatMap(({ thing, factors }) =>
    factors.flatMap((f, instant) => (f === null ? [] : [{
      id: `m${thing.model}/p${thing.provider}/${thing.price_type}/${thing.region}`, thing, instant, price: BASE[thing.price_type] * FACTORS[f]!
    }])))

const observation = (ns: string, q: Quote): LlmTokenPriceObservationInput => ({
  source: "provider-pricing-page", model: `${ns}-m${q.thing.model}`, model_name: `M${q.thing.model}`, serving_provider: `p${q.thing.provider}`,
  price_type: q.thing.price_type, region: q.thing.region, price_usd_per_1m_tokens: q.price, raw_price: q.price,
  raw_price_unit: "usd_per_1m_tokens", currency: "USD", extracted_at: INSTANTS[q.instant]!
})

/**
 * The quotes in the case's random order, each priced thing's own still in time order (an earlier
 * quote of a price after a later one cannot be placed: history is never rewritten), so other
 * priced things' earlier quotes may arrive after later ones. Then cut into the case's batch sizes.
 */
const batchesOf = (c: Case, quotes: ReadonlyArray<Quote>): Array<Array<Quote>> => {
  const shuffled = quotes.map((q, i) => ({ q, key: c.order[i]! })).sort((a, b) => a.key - b.key).map(({ q }) => q)
  const ofThing = new Map<string, Array<Quote>>()
  for (const q of shuffled) ofThing.set(q.id, [...(ofThing.get(q.id) ?? []), q])
  for (const list of ofThing.values()) list.sort((a, b) => a.instant - b.instant)
  const ordered = shuffled.map((q) => ofThing.get(q.id)!.shift()!)
  const batches: Array<Array<Quote>> = []
  for (let i = 0, n = 0; i < ordered.length; n++) {
    const size = c.sizes[n % c.sizes.length]!
    batches.push(ordered.slice(i, i + size))
    i += size
  }
  return batches
}

/**
 * The documented rule, stated over the quotes alone: at each instant, the market is every priced
 * thing's latest quote so far; a quote opens a row when its price is new, and the row is flagged
 * by the reference of its model, price type and metric in that market. Keyed `id@instant`.
 */
const expectedFlags = (quotes: ReadonlyArray<Quote>): Record<string, boolean> => {
  const out: Record<string, boolean> = {}
  const market = new Map<string, Quote>()
  for (const instant of [0, 1]) {
    const opened: Array<Quote> = []
    for (const q of quotes) {
      if (q.instant !== instant) continue
      if (market.get(q.id)?.price !== q.price) opened.push(q)
      market.set(q.id, q)
    }
    for (const q of opened) {
      const group = [...market.values()].filter((m) => m.thing.model === q.thing.model && m.thing.price_type === q.thing.price_type)
      const reference = outlierReference(group.map((m) => ({ serving_provider: `p${m.thing.provider}`, price_usd_per_1m_tokens: m.price })))
      out[`${q.id}@${instant}`] = isOutlierPrice(q.price, reference)
    }
  }
  return out
}

/** Every version stored under `ns`, as `id@instant` → flag. */
const storedFlags = (ns: string) =>
  Effect.gen(function* () {
    const store = yield* LlmTokenPriceStore
    const rows = yield* store.page({
      scope: { _tag: "window", start: formatInstant(T0 - MICROS_PER_DAY), end: formatInstant(T0 + 10 * MICROS_PER_DAY) },
      predicates: [{ op: "in", field: "model", values: [`${ns}-m0`, `${ns}-m1`] }],
      sort: { by: "valid_from", order: "asc" }, after: undefined, limit: 1000
    })
    const out: Record<string, boolean> = {}
    for (const r of rows) {
      const id = `m${r.model.slice(ns.length + 2)}/${r.serving_provider}/${r.price_type}/${r.region}`
      out[`${id}@${INSTANTS.indexOf(r.valid_from)}`] = r.is_price_outlier
    }
    return out
  })

/** Registers the outlier property on a suite's `it`. */
export const llmOutlierConformance = (it: Vitest.MethodsNonLive<LlmTokenPriceStore>) => {
  it.effect.prop(
    "llm: outlier flags are the rule over the whole market, whatever the order and batches of its observations",
    { c: caseArb },
    ({ c }) =>
      Effect.gen(function* () {
        const ingest = yield* LlmTokenPriceIngest
        const quotes = quotesOf(c)
        const expected = expectedFlags(quotes)
        // One batch, in the case's order; then the same quotes in random order and batches.
        const whole = namespace("llm-outliers-whole")
        const summary = yield* ingest.ingest(quotes.map((q) => observation(whole, q)))
        assert.strictEqual(summary.flagged, Object.values(expected).filter((f) => f).length)
        assert.strictEqual(summary.reflagged, 0)
        assert.deepStrictEqual(yield* storedFlags(whole), expected)
        const batched = namespace("llm-outliers-batched")
        for (const batch of batchesOf(c, quotes)) yield* ingest.ingest(batch.map((q) => observation(batched, q)))
        assert.deepStrictEqual(yield* storedFlags(batched), expected)
      }).pipe(Effect.provide(LlmTokenPriceIngest.Default)),
    { fastCheck: { numRuns: 25 } }
  )
}
