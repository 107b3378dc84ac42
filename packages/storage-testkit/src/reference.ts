import { assert, type Vitest } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { FxRateInput, GpuCatalogEntryInput } from "@gpu-market/core"
import { ReferenceDataStore, selectFxRates, type Storage } from "@gpu-market/core/storage"
import { namespace } from "./namespace.js"

/**
 * The reference data cases of the storage conformance suite. The store is shared by the whole
 * suite, so each test keeps to currencies and GPU slugs of its own.
 */

let counter = 0

/** A currency code no other test uses: `X` and two letters, from the time and a counter. */
const currency = () => {
  const n = (Date.now() + counter++ * 7919) % (26 * 26)
  return `X${String.fromCharCode(65 + Math.floor(n / 26))}${String.fromCharCode(65 + (n % 26))}`
}

const gpu = (slug: string, over: Partial<GpuCatalogEntryInput> = {}): GpuCatalogEntryInput => ({
  gpu_canonical_name: slug, gpu_manufacturer: "acme", gpu_model: slug.toUpperCase(), gpu_memory_gb: 48, form_factor: "pcie",
  spellings: [`${slug} 48GB`], ...over
})

/** Registers the reference data cases. */
export const referenceDataConformance = (it: Vitest.MethodsNonLive<Storage>) => {
  it.effect("reference: FX rates of a date range come with each currency's latest rate before it, as the reference selects them", () =>
    Effect.gen(function* () {
      const s = yield* ReferenceDataStore
      const [a, b, c] = [currency(), currency(), currency()]
      const rates: Array<FxRateInput> = [
        { currency: a, date: "2026-03-02", usd_per_unit: 1.08 },
        { currency: a, date: "2026-02-27", usd_per_unit: 1.07 },
        { currency: a, date: "2026-03-09", usd_per_unit: 1.0912345678901 },
        { currency: a, date: "2026-03-20", usd_per_unit: 1.1 },
        { currency: a, date: "2026-01-05", usd_per_unit: 1.01 },
        { currency: b, date: "2026-03-05", usd_per_unit: 0.0067 },
        { currency: c, date: "2026-03-05", usd_per_unit: 1.27 }
      ]
      assert.deepStrictEqual(yield* s.putFxRates(rates), { inserted: 7, replaced: 0 })
      const windows: Array<[ReadonlyArray<string>, string, string]> = [
        [[a], "2026-03-01", "2026-03-10"],
        [[a, b], "2026-03-02", "2026-03-02"],
        [[b, a], "2026-03-06", "2026-04-01"],
        [[a], "2025-01-01", "2025-12-31"],
        [[a, b], "2027-01-01", "2027-01-31"],
        [[], "2026-03-01", "2026-03-31"]
      ]
      for (const [currencies, from, to] of windows) {
        assert.deepStrictEqual(yield* s.fxRates(currencies, from, to), selectFxRates(rates, currencies, from, to), `${currencies} ${from}..${to}`)
      }
      // Stated by hand: the rate in force on the 1st (the 27th's), then the range.
      assert.deepStrictEqual((yield* s.fxRates([a], "2026-03-01", "2026-03-10")).map((r) => [r.date, r.usd_per_unit]), [
        ["2026-02-27", 1.07], ["2026-03-02", 1.08], ["2026-03-09", 1.0912345678901]
      ])
    }))

  it.effect("reference: a rate of a stored currency and date replaces it, the last of a call standing; the mark goes with the write", () =>
    Effect.gen(function* () {
      const s = yield* ReferenceDataStore
      const a = currency()
      const name = `${namespace("fx-mark")}-through`
      assert.deepStrictEqual(yield* s.mark(name), Option.none())
      assert.deepStrictEqual(yield* s.putFxRates([{ currency: a, date: "2026-03-02", usd_per_unit: 1.08 }], { name, value: "1" }), { inserted: 1, replaced: 0 })
      assert.deepStrictEqual(yield* s.mark(name), Option.some("1"))
      const again = [
        { currency: a, date: "2026-03-02", usd_per_unit: 1.09 },
        { currency: a, date: "2026-03-03", usd_per_unit: 1.5 },
        { currency: a, date: "2026-03-03", usd_per_unit: 1.1 }
      ]
      assert.deepStrictEqual(yield* s.putFxRates(again, { name, value: "2" }), { inserted: 1, replaced: 1 })
      assert.deepStrictEqual(yield* s.fxRates([a], "2026-03-01", "2026-03-31"), [
        { currency: a, date: "2026-03-02", usd_per_unit: 1.09 }, { currency: a, date: "2026-03-03", usd_per_unit: 1.1 }
      ])
      yield* s.putFxRates([], { name, value: "3" })
      assert.deepStrictEqual(yield* s.mark(name), Option.some("3"))
    }))

  it.effect("reference: GPU catalog entries are kept by slug, replaced whole, and read in slug order; the mark goes with the write", () =>
    Effect.gen(function* () {
      const s = yield* ReferenceDataStore
      const ns = namespace("gpu")
      const name = `${ns}-through`
      const [b, a] = [gpu(`${ns}-b`), gpu(`${ns}-a`, { form_factor: null, spellings: ["A one", "A-1"] })]
      assert.deepStrictEqual(yield* s.putGpus([b, a], { name, value: "1" }), { inserted: 2, replaced: 0 })
      assert.deepStrictEqual(yield* s.mark(name), Option.some("1"))
      const mine = Effect.map(s.gpus, (all) => all.filter((e) => e.gpu_canonical_name.startsWith(ns)))
      assert.deepStrictEqual(yield* mine, [a, b])
      const b2 = gpu(`${ns}-b`, { gpu_memory_gb: 96, spellings: ["B two"] })
      assert.deepStrictEqual(yield* s.putGpus([gpu(`${ns}-b`, { gpu_memory_gb: 1 }), b2]), { inserted: 0, replaced: 1 })
      assert.deepStrictEqual(yield* mine, [a, b2])
    }))
}
