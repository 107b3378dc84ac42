import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { type ValidationFailed, validationFailed } from "../errors.js"
import { unavailableComputation } from "../market/storage.js"
import { formatInstant, isBareDate, MICROS_PER_MS, type Micros, parseDate, parseDateTime } from "../query/time.js"
import type { IndexDefinition, IndexValue } from "../schema/indexes.js"
import type { RentalPrice } from "../schema/rental-price.js"
import { RentalPriceStore } from "../storage/contract.js"
import { IndexStore, type StoredIndexDefinition } from "../storage/indexes.js"
import { type PagePlan, type Position, sortValue } from "../storage/plan.js"
import { chunksOf, INDEX_VALUES_PER_WRITE } from "./batch.js"
import {
  ceilToInterval, floorToInterval, instantMicros, intervalMicros, pricedRows, type ReferenceComponent, sweepReference, sweepRental,
  timedWeights
} from "./index-method.js"

/** What one computation did. */
export const IndexComputationSummary = Schema.Struct({
  /** Computed indices whose range was not empty. */
  indices: Schema.Number,
  /** Intervals computed, published or not. */
  intervals: Schema.Number,
  /** Values stored (intervals with enough vendors, or with a weighted component). */
  values: Schema.Number
})
export type IndexComputationSummary = typeof IndexComputationSummary.Type

type Range = { readonly from: Micros; readonly to: Micros }

const PAGE = 1000

const startsAt = (d: IndexDefinition): Micros =>
  d.inputs.kind === "administered" ? Number.POSITIVE_INFINITY : parseDate(d.inputs.starts_at)!

/** Where computing an index resumes: its cursor, or its first day. */
const resumeAt = (d: StoredIndexDefinition): Micros =>
  d.computed_through === null ? startsAt(d.definition) : instantMicros(d.computed_through)

const parseBound = (parameter: string, text: string): Micros | ValidationFailed => {
  const micros = isBareDate(text) ? parseDate(text) : parseDateTime(text)
  return micros ?? validationFailed([{ parameter, message: "expected an ISO 8601 datetime or a YYYY-MM-DD date" }])
}

/**
 * Computes the service's own indices from rental prices and stores them. A value is stored only
 * once its interval is complete by `Clock` (a UTC day, or 30 minutes), so an incomplete interval
 * is never served. Computing is deterministic: the same rows give the same values, and storing
 * replaces a range rather than adding to it, so recomputing changes nothing.
 */
export class IndexComputation extends Effect.Service<IndexComputation>()("Market/IndexComputation", {
  effect: Effect.gen(function* () {
    const indexes = yield* IndexStore
    const rental = yield* RentalPriceStore
    const lock = yield* Effect.makeSemaphore(1)
    /** The interval boundary through which this process last computed everything due. */
    let ensuredThrough = Number.NEGATIVE_INFINITY

    const now = Effect.map(Clock.currentTimeMillis, (ms) => ms * MICROS_PER_MS)

    /** Follows a rental plan's keyset pages to the end. */
    const walk = (plan: Omit<PagePlan, "after" | "limit">) =>
      Effect.gen(function* () {
        const out: Array<RentalPrice> = []
        let after: Position | undefined
        for (;;) {
          const rows = yield* rental.page({ ...plan, after, limit: PAGE })
          for (const r of rows) out.push(r)
          if (rows.length < PAGE) return out
          const last = rows[rows.length - 1]!
          after = { value: sortValue(last, plan.sort.by), tie: last.product_key }
        }
      })

    /** Rental rows of `gpus` in force at some moment of `[from, to)`: those in force at `from`, and those starting inside. */
    const rentalRows = (gpus: ReadonlyArray<string>, range: Range) =>
      Effect.gen(function* () {
        const byKey = new Map<string, RentalPrice>()
        const sort = { by: "valid_from", order: "asc" } as const
        for (const gpu of gpus) {
          // One GPU per plan: an equality on the GPU is what SQLite pairs with its (gpu, valid_from) index.
          const predicates = [{ op: "in", field: "gpu_canonical_name", values: [gpu] }] as const
          for (const r of yield* walk({ scope: { _tag: "asOf", at: formatInstant(range.from) }, predicates, sort })) byKey.set(r.product_key, r)
          const window = { _tag: "window", start: formatInstant(range.from), end: formatInstant(range.to) } as const
          for (const r of yield* walk({ scope: window, predicates, sort })) byKey.set(r.product_key, r)
        }
        return [...byKey.values()]
      })

    /** An index's stored values whose intervals start in `[from, to)`, by timestamp. */
    const storedValues = (id: string, range: Range) =>
      Effect.gen(function* () {
        const out = new Map<string, IndexValue>()
        let after: Position | undefined
        for (;;) {
          const rows = yield* indexes.page({
            scope: { _tag: "window", start: formatInstant(range.from), end: formatInstant(range.to) },
            predicates: [{ op: "eq", field: "id", value: id }],
            sort: { by: "timestamp", order: "asc" },
            after,
            limit: PAGE
          })
          for (const r of rows) out.set(r.timestamp, r)
          if (rows.length < PAGE) return out
          const last = rows[rows.length - 1]!
          after = { value: last.timestamp, tie: last.timestamp }
        }
      })

    /**
     * Computes the range `rangeOf` gives each computed index: rental indices first and stored,
     * then reference prices from the stored component values. Each phase is one atomic apply
     * that clears the range, stores its values and moves cursors (when `cursor` says so).
     */
    const compute = (
      rangeOf: (d: StoredIndexDefinition) => Range,
      cursor: (d: StoredIndexDefinition, range: Range) => boolean
    ) =>
      Effect.gen(function* () {
        let indices = 0, intervals = 0, values = 0
        const jobsOf = (defs: ReadonlyArray<StoredIndexDefinition>, kind: "rental" | "reference") =>
          defs.flatMap((d) => {
            if (d.definition.inputs.kind !== kind) return []
            const range = rangeOf(d)
            return range.to <= range.from ? [] : [{ stored: d, range }]
          })
        const store = (jobs: ReadonlyArray<{ stored: StoredIndexDefinition; range: Range }>, computed: ReadonlyArray<IndexValue>) =>
          Effect.gen(function* () {
            indices += jobs.length
            values += computed.length
            for (const j of jobs) intervals += (j.range.to - j.range.from) / intervalMicros(j.stored.definition.row_type)
            // In bounded chunks: the ranges clear with the first, the cursors move with the last,
            // so a computation cut short is done again from its cursors by the next one.
            const chunks = computed.length === 0 ? [[]] : chunksOf(computed, INDEX_VALUES_PER_WRITE)
            for (const [i, values] of chunks.entries()) {
              yield* indexes.apply({
                clear: i > 0 ? [] : jobs.map((j) => ({ id: j.stored.definition.id, start: formatInstant(j.range.from), end: formatInstant(j.range.to) })),
                values,
                cursors: i < chunks.length - 1 ? [] : jobs.filter((j) => cursor(j.stored, j.range)).map((j) => ({ id: j.stored.definition.id, through: formatInstant(j.range.to) }))
              })
            }
          })

        const defs = yield* indexes.definitions
        const rentalJobs = jobsOf(defs, "rental")
        if (rentalJobs.length > 0) {
          const gpus = [...new Set(rentalJobs.flatMap((j) => j.stored.definition.inputs.kind === "rental" ? j.stored.definition.inputs.gpus : []))].sort()
          const span = { from: Math.min(...rentalJobs.map((j) => j.range.from)), to: Math.max(...rentalJobs.map((j) => j.range.to)) }
          const rows = yield* rentalRows(gpus, span)
          const computed: Array<IndexValue> = []
          for (const { stored: { definition: d }, range } of rentalJobs) {
            if (d.inputs.kind !== "rental") continue
            for (const v of sweepRental(d, pricedRows(d.inputs, rows), range.from, range.to)) computed.push(v)
          }
          yield* store(rentalJobs, computed)
        }

        const referenceJobs = jobsOf(defs, "reference")
        if (referenceJobs.length > 0) {
          const byId = new Map(defs.map((d) => [d.definition.id as string, d.definition]))
          const weights = timedWeights(yield* indexes.weights)
          const computed: Array<IndexValue> = []
          for (const { stored: { definition: d }, range } of referenceJobs) {
            if (d.inputs.kind !== "reference") continue
            const components: Array<ReferenceComponent> = []
            for (const id of d.inputs.components) {
              const c = byId.get(id)
              // Checked when defined; a component redefined since as something else is left out.
              if (c === undefined || c.inputs.kind !== "rental" || c.inputs.gpus.length !== 1 || c.row_type !== d.row_type) continue
              components.push({ gpu: c.inputs.gpus[0]!, values: yield* storedValues(id, range) })
            }
            for (const v of sweepReference(d, components, weights, range.from, range.to)) computed.push(v)
          }
          yield* store(referenceJobs, computed)
        }
        const summary: IndexComputationSummary = { indices, intervals, values }
        return summary
      }).pipe(Effect.mapError(unavailableComputation))

    /** Everything due at `at`: from each index's cursor to the end of its last complete interval. */
    const due = (at: Micros) =>
      compute((d) => ({ from: resumeAt(d), to: floorToInterval(d.definition.row_type, at) }), () => true).pipe(
        Effect.tap(() => {
          ensuredThrough = Math.max(ensuredThrough, floorToInterval("intraday", at))
        })
      )

    /** Computes and stores every value due at `now` of every computed index, from where each left off. */
    const computeDue = Effect.fn("IndexComputation.computeDue")(function* () {
      const at = yield* now
      return yield* lock.withPermits(1)(due(at))
    })

    /**
     * Recomputes the intervals starting in `[start, end)` (ISO 8601 datetimes or dates) of every
     * computed index, replacing what is stored there: a restatement, and the benchmark's
     * from-scratch run. Intervals before an index's first day or not complete yet are left out.
     * A range that reaches an index's cursor moves it.
     */
    const computeRange = Effect.fn("IndexComputation.computeRange")(function* (start: string, end: string) {
      const from = parseBound("start", start)
      if (typeof from !== "number") return yield* Effect.fail(from)
      const to = parseBound("end", end)
      if (typeof to !== "number") return yield* Effect.fail(to)
      if (from >= to) return yield* Effect.fail(validationFailed([{ parameter: "start", message: "must be before end" }]))
      const at = yield* now
      return yield* lock.withPermits(1)(compute(
        (d) => ({
          from: Math.max(ceilToInterval(d.definition.row_type, from), startsAt(d.definition)),
          to: Math.min(ceilToInterval(d.definition.row_type, to), floorToInterval(d.definition.row_type, at))
        }),
        (d, range) => range.from <= resumeAt(d)
      ))
    })

    /**
     * Computes what is due when an interval has completed since this process last did, so reads
     * serve values as soon as their interval is complete without a scheduler. Between interval
     * boundaries it costs a clock read. A failure is logged and the read serves what is stored.
     */
    const ensureCurrent = Effect.gen(function* () {
      const at = yield* now
      const boundary = floorToInterval("intraday", at)
      if (boundary <= ensuredThrough) return
      // Another fiber may have computed while this one waited for the lock.
      yield* lock.withPermits(1)(Effect.unless(due(at), () => boundary <= ensuredThrough))
    }).pipe(Effect.catchAll((e) => Effect.logWarning("index computation failed; serving stored values", e.detail)))

    return { computeDue, computeRange, ensureCurrent } as const
  })
}) {}
