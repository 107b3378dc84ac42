import * as Effect from "effect/Effect"
import { type HardwareClassField, hardwareClassFields, type HardwarePrice } from "../schema/hardware-price.js"
import type { HardwareGpuCoverage, HardwarePriceStore, HardwareSummary } from "./hardware.js"
import { cmp, DateSpans, dayStart, matchesPredicates, orderAndSeek } from "./rules.js"
import type { PagePlan, Scope } from "./plan.js"
import { hardwarePriceTable } from "./tables.js"
import { memoryMarks } from "./marks.js"

/**
 * The in-memory reference of the hardware price store: the plain statement of what every
 * backend must return, scanning everything.
 */

/** The rows of a scope: each listing's newest (on or before a date), or the days of a window. */
export const inHardwareScope = (rows: Iterable<HardwarePrice>, scope: Scope): Array<HardwarePrice> => {
  if (scope._tag === "window") {
    const out: Array<HardwarePrice> = []
    for (const r of rows) {
      const start = dayStart(r.observed_date)
      if (start >= scope.start && start < scope.end) out.push(r)
    }
    return out
  }
  const through = scope._tag === "asOf" ? scope.at.slice(0, 10) : undefined
  const newest = new Map<string, HardwarePrice>()
  for (const r of rows) {
    if (through !== undefined && r.observed_date > through) continue
    const seen = newest.get(r.listing_key)
    if (seen === undefined || r.observed_date > seen.observed_date) newest.set(r.listing_key, r)
  }
  return [...newest.values()]
}

/** The reference evaluation of a hardware price plan: scope first, then predicates, order, seek. */
export const evaluateHardwarePlan = (rows: Iterable<HardwarePrice>, plan: PagePlan): Array<HardwarePrice> =>
  orderAndSeek(inHardwareScope(rows, plan.scope).filter((r) => matchesPredicates(r, plan.predicates)), plan, hardwarePriceTable.tie)

/** Filter values and per-GPU coverage of rows, as every backend reports them. */
export const summariseHardware = (rows: Iterable<HardwarePrice>): HardwareSummary => {
  const values = Object.fromEntries(hardwareClassFields.map((f) => [f, new Set<string>()])) as Record<HardwareClassField, Set<string>>
  const gpus = new DateSpans<string>()
  const listings = new Map<string, Set<string>>()
  for (const r of rows) {
    for (const f of hardwareClassFields) {
      const v = r[f]
      if (v !== null) values[f].add(v)
    }
    gpus.add(r.gpu_canonical_name, r.observed_date, () => r.gpu_canonical_name)
    const seen = listings.get(r.gpu_canonical_name)
    if (seen === undefined) listings.set(r.gpu_canonical_name, new Set([r.listing_key]))
    else seen.add(r.listing_key)
  }
  const sorted = {} as { -readonly [F in HardwareClassField]: ReadonlyArray<string> }
  for (const f of hardwareClassFields) sorted[f] = [...values[f]].sort(cmp)
  return {
    values: sorted,
    gpus: [...gpus.values()].sort((a, b) => cmp(a.group, b.group)).map(({ group, first, last, rows }): HardwareGpuCoverage => ({
      gpu_canonical_name: group, first_observed: first, last_observed: last, listings: listings.get(group)!.size, observations: rows
    }))
  }
}

/** A fresh in-memory hardware price store. */
export const makeMemoryHardwarePriceStore = (): HardwarePriceStore["Type"] => {
  const rows = new Map<string, HardwarePrice>()
  const marks = memoryMarks()
  return {
    mark: marks.mark,
    put: (batch, mark) => Effect.sync(() => {
      let inserted = 0
      let replaced = 0
      for (const r of batch) {
        if (rows.has(r.observation_id)) replaced++
        else inserted++
        rows.set(r.observation_id, r)
      }
      if (mark !== undefined) marks.marks.set(mark.name, mark.value)
      return { inserted, replaced }
    }),
    page: (plan) => Effect.sync(() => evaluateHardwarePlan(rows.values(), plan)),
    summary: Effect.sync(() => summariseHardware(rows.values()))
  }
}
