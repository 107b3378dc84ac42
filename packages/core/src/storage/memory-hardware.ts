import type { EventSink } from "./event-log.js"
import * as Effect from "effect/Effect"
import { type HardwareClassField, hardwareClassFields, type HardwarePrice } from "../schema/hardware-price.js"
import type { HardwareGpuCoverage, HardwarePriceStore, HardwareSummary } from "./hardware.js"
import { dayStart, matchesPredicates, orderAndSeek } from "./rules.js"
import type { PagePlan, Scope } from "./plan.js"
import { hardwarePriceTable } from "./tables.js"
import { sortedValues, summarise } from "./summary.js"
import { memoryMarks } from "./marks.js"
import { memoryDataVersion } from "./memory-versions.js"

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
  const summary = summarise(hardwarePriceTable.summary, rows)
  const values = {} as { -readonly [F in HardwareClassField]: ReadonlyArray<string> }
  for (const f of hardwareClassFields) values[f] = sortedValues(summary, f)
  return {
    values,
    gpus: summary.groups.map(({ key, span, distinct }): HardwareGpuCoverage => ({
      gpu_canonical_name: key[0] as string, first_observed: span.first, last_observed: span.last, listings: distinct, observations: span.rows
    }))
  }
}

/** A fresh in-memory hardware price store. */
export const makeMemoryHardwarePriceStore = (sink: EventSink = () => {}): HardwarePriceStore["Type"] => {
  const rows = new Map<string, HardwarePrice>()
  const marks = memoryMarks()
  const version = memoryDataVersion()
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
      if (batch.length > 0) version.bump()
      sink(batch.map((row) => ({ type: "hardware_observation", row })))
      if (mark !== undefined) marks.marks.set(mark.name, mark.value)
      return { inserted, replaced }
    }),
    version: version.version,
    page: (plan) => Effect.sync(() => evaluateHardwarePlan(rows.values(), plan)),
    summary: Effect.sync(() => summariseHardware(rows.values()))
  }
}
