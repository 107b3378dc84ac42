import * as Effect from "effect/Effect"
import type { GpuCatalogEntryInput } from "../catalog/gpu-catalog.js"
import type { FxRateInput } from "../schema/fx-rate.js"
import { memoryMarks, type ProgressMark } from "./marks.js"
import type { ReferenceDataStore, ReferencePutSummary } from "./reference.js"
import { cmp } from "./rules.js"

/**
 * The in-memory reference of the reference data store: the plain statement of what every
 * backend must return.
 */

/** The rates `fxRates(currencies, from, to)` answers, out of every stored rate. */
export const selectFxRates = (
  rates: Iterable<FxRateInput>,
  currencies: ReadonlyArray<string>,
  from: string,
  to: string
): Array<FxRateInput> => {
  const wanted = new Set(currencies)
  const before = new Map<string, FxRateInput>()
  const out: Array<FxRateInput> = []
  for (const r of rates) {
    if (!wanted.has(r.currency)) continue
    if (r.date >= from && r.date <= to) out.push(r)
    else if (r.date < from && (before.get(r.currency)?.date ?? "") < r.date) before.set(r.currency, r)
  }
  return [...before.values(), ...out].sort((a, b) => cmp(a.currency, b.currency) || cmp(a.date, b.date))
}

/** Writes `records` into `map` by key, counting what each did. */
const putAll = <A>(map: Map<string, A>, records: ReadonlyArray<A>, key: (a: A) => string): ReferencePutSummary => {
  const finals = new Map<string, A>()
  for (const r of records) finals.set(key(r), r)
  let inserted = 0
  for (const [k, r] of finals) {
    if (!map.has(k)) inserted++
    map.set(k, r)
  }
  return { inserted, replaced: finals.size - inserted }
}

const fxKey = (r: FxRateInput) => `${r.currency}:${r.date}`

/** A fresh in-memory reference data store. */
export const makeMemoryReferenceDataStore = (): ReferenceDataStore["Type"] => {
  const rates = new Map<string, FxRateInput>()
  const gpus = new Map<string, GpuCatalogEntryInput>()
  const marks = memoryMarks()
  const marked = <A>(put: () => A, mark: ProgressMark | undefined) =>
    Effect.sync(() => {
      const done = put()
      if (mark !== undefined) marks.marks.set(mark.name, mark.value)
      return done
    })
  return {
    putFxRates: (batch, mark) => marked(() => putAll(rates, batch, fxKey), mark),
    fxRates: (currencies, from, to) => Effect.sync(() => selectFxRates(rates.values(), currencies, from, to)),
    putGpus: (batch, mark) => marked(() => putAll(gpus, batch, (e) => e.gpu_canonical_name), mark),
    gpus: Effect.sync(() => [...gpus.values()].sort((a, b) => cmp(a.gpu_canonical_name, b.gpu_canonical_name))),
    mark: marks.mark
  }
}
