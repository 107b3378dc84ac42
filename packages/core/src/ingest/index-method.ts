import { formatDate, formatInstant, MICROS_PER_DAY, MICROS_PER_MS, type Micros } from "../query/time.js"
import type { FleetWeight, IndexDefinition, IndexRowType, IndexValue } from "../schema/indexes.js"
import type { RentalPrice } from "../schema/rental-price.js"
import { INTRADAY_MICROS } from "../storage/indexes.js"

/**
 * The index methodology as pure functions: which rental rows feed an index, the vendor-weighted
 * median and its envelope, the sweep that computes a run of intervals, and the fleet-weighted
 * reference price. docs/reference/http-api.md states the same rules in prose; tests check both on hand-computed
 * cases.
 */

/** Fewest distinct vendors an interval needs before a value is published. */
export const MIN_VENDORS = 2

/** Values are published rounded to 1e-6 USD. */
export const roundValue = (x: number): number => Math.round(x * 1e6) / 1e6

/**
 * The `p`-quantile of ascending `sorted` by linear interpolation between closest ranks (the
 * definition of NumPy's default and Hyndman–Fan type 7): at rank `h = (n - 1) p` the value is
 * `x[⌊h⌋] + (h - ⌊h⌋)(x[⌊h⌋ + 1] - x[⌊h⌋])`. Its 0.5-quantile is the usual median.
 */
export const quantile = (sorted: ReadonlyArray<number>, p: number): number => {
  const h = (sorted.length - 1) * p
  const lo = Math.floor(h)
  const a = sorted[lo]!
  return lo + 1 < sorted.length ? a + (h - lo) * (sorted[lo + 1]! - a) : a
}

/** A computed value and its envelope. */
export interface Envelope {
  readonly value: number
  readonly p5: number
  readonly p95: number
}

const ascending = (a: number, b: number) => a - b

/**
 * The vendor-weighted median of prices: each vendor's own median counts once, so a vendor that
 * lists many products moves the index no more than one that lists one. `value` is the median of
 * the vendor medians and `p5`/`p95` their 5th and 95th percentiles (so p5 ≤ value ≤ p95). With
 * fewer than `MIN_VENDORS` vendors nothing is published.
 */
export const vendorWeightedMedian = (prices: Iterable<{ readonly vendor: string; readonly price: number }>): Envelope | undefined => {
  const byVendor = new Map<string, Array<number>>()
  for (const { vendor, price } of prices) {
    const list = byVendor.get(vendor)
    if (list === undefined) byVendor.set(vendor, [price])
    else list.push(price)
  }
  if (byVendor.size < MIN_VENDORS) return undefined
  const medians = [...byVendor.values()].map((list) => quantile(list.sort(ascending), 0.5)).sort(ascending)
  return {
    value: roundValue(quantile(medians, 0.5)),
    p5: roundValue(quantile(medians, 0.05)),
    p95: roundValue(quantile(medians, 0.95))
  }
}

/** Microseconds of a stored 27-character instant. */
export const instantMicros = (instant: string): Micros =>
  Date.parse(instant.slice(0, 23) + "Z") * MICROS_PER_MS + Number(instant.slice(23, 26))

/** A rental row reduced to what the sweep needs, its validity in microseconds. */
export interface PricedRow {
  readonly vendor: string
  readonly price: number
  readonly from: Micros
  readonly to: Micros | null
}

type RentalInputs = Extract<IndexDefinition["inputs"], { readonly kind: "rental" }>

/** Whether a rental row feeds an index with these inputs. */
export const isEligible = (inputs: RentalInputs, row: Pick<RentalPrice, "gpu_canonical_name" | "contract_type" | "region" | "vendor">): boolean =>
  (inputs.gpus as ReadonlyArray<string>).includes(row.gpu_canonical_name) &&
  inputs.contract_types.includes(row.contract_type) &&
  (inputs.regions === null || inputs.regions.includes(row.region)) &&
  (inputs.vendors === null || (inputs.vendors as ReadonlyArray<string>).includes(row.vendor))

/** The rows of an index's eligible rental rows, ordered by `from`. */
export const pricedRows = (inputs: RentalInputs, rows: Iterable<RentalPrice>): Array<PricedRow> => {
  const out: Array<PricedRow> = []
  for (const r of rows) {
    if (!isEligible(inputs, r)) continue
    out.push({ vendor: r.vendor, price: r.price_usd_per_gpu_hour, from: instantMicros(r.valid_from), to: r.valid_to === null ? null : instantMicros(r.valid_to) })
  }
  return out.sort((a, b) => a.from - b.from)
}

/** Length of one interval of a row type. */
export const intervalMicros = (type: IndexRowType): number => (type === "daily" ? MICROS_PER_DAY : INTRADAY_MICROS)

/** The start of the interval holding `micros`. */
export const floorToInterval = (type: IndexRowType, micros: Micros): Micros =>
  Math.floor(micros / intervalMicros(type)) * intervalMicros(type)

/** The first interval start at or after `micros`. */
export const ceilToInterval = (type: IndexRowType, micros: Micros): Micros =>
  Math.ceil(micros / intervalMicros(type)) * intervalMicros(type)

/** The `timestamp` of the interval starting at `start`. */
export const timestampOf = (type: IndexRowType, start: Micros): string =>
  type === "daily" ? formatDate(start) : formatInstant(start)

/**
 * Values of a rental index over the intervals starting in `[from, to)` (both on the interval
 * grid). A row feeds an interval `[s, e)` when it is in force at some moment of it:
 * `valid_from < e` and (`valid_to` null or `valid_to > s`). One pass over `rows` (ordered by
 * `from`): rows join the active set as the intervals reach them and leave once closed, and an
 * interval whose active set did not change reuses the previous result.
 */
export const sweepRental = (
  index: { readonly id: string; readonly row_type: IndexRowType },
  rows: ReadonlyArray<PricedRow>,
  from: Micros,
  to: Micros
): Array<IndexValue> => {
  const step = intervalMicros(index.row_type)
  const out: Array<IndexValue> = []
  let active: Array<PricedRow> = []
  let next = 0
  let result: Envelope | undefined
  let changed = true
  for (let s = from; s < to; s += step) {
    const e = s + step
    while (next < rows.length && rows[next]!.from < e) {
      active.push(rows[next++]!)
      changed = true
    }
    const kept = active.filter((r) => r.to === null || r.to > s)
    if (kept.length !== active.length) {
      active = kept
      changed = true
    }
    if (changed) {
      result = vendorWeightedMedian(active)
      changed = false
    }
    if (result !== undefined) {
      out.push({ id: index.id, type: index.row_type, timestamp: timestampOf(index.row_type, s), value: result.value, p5: result.p5, p95: result.p95 })
    }
  }
  return out
}

/** One component of a reference price: its GPU and its values by timestamp. */
export interface ReferenceComponent {
  readonly gpu: string
  readonly values: ReadonlyMap<string, IndexValue>
}

/** A fleet weight with its validity in microseconds. */
export interface TimedWeight {
  readonly gpu: string
  readonly weight: number
  readonly from: Micros
  readonly to: Micros | null
}

export const timedWeights = (weights: ReadonlyArray<FleetWeight>): Array<TimedWeight> =>
  weights.map((w) => ({
    gpu: w.gpu_canonical_name, weight: w.weight, from: instantMicros(w.valid_from), to: w.valid_to === null ? null : instantMicros(w.valid_to)
  }))

/** The weight of a GPU in force at `at` (`valid_from <= at < valid_to`), if any. */
export const weightAt = (weights: ReadonlyArray<TimedWeight>, gpu: string, at: Micros): number | undefined =>
  weights.find((w) => w.gpu === gpu && w.from <= at && (w.to === null || at < w.to))?.weight

/**
 * Values of a reference price over the intervals starting in `[from, to)`: for each interval,
 * the mean of the components' values for the same timestamp weighted by each GPU's fleet weight
 * in force when the interval starts. A component without a value or a weight is left out and
 * the rest reweighted; with none left nothing is published. `p5`/`p95` are the same weighted
 * means of the components' envelopes (null when an included component has none).
 */
export const sweepReference = (
  index: { readonly id: string; readonly row_type: IndexRowType },
  components: ReadonlyArray<ReferenceComponent>,
  weights: ReadonlyArray<TimedWeight>,
  from: Micros,
  to: Micros
): Array<IndexValue> => {
  const step = intervalMicros(index.row_type)
  const out: Array<IndexValue> = []
  for (let s = from; s < to; s += step) {
    const timestamp = timestampOf(index.row_type, s)
    let total = 0, value = 0, p5 = 0, p95 = 0
    let envelope = true
    for (const c of components) {
      const v = c.values.get(timestamp)
      if (v === undefined) continue
      const w = weightAt(weights, c.gpu, s)
      if (w === undefined) continue
      total += w
      value += w * v.value
      if (v.p5 === null || v.p95 === null) envelope = false
      else {
        p5 += w * v.p5
        p95 += w * v.p95
      }
    }
    if (total === 0) continue
    out.push({
      id: index.id, type: index.row_type, timestamp,
      value: roundValue(value / total),
      p5: envelope ? roundValue(p5 / total) : null,
      p95: envelope ? roundValue(p95 / total) : null
    })
  }
  return out
}
