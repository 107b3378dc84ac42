import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { unavailableWrite } from "../market/storage.js"
import { formatInstant, isBareDate, MICROS_PER_MS, parseDate, parseDateTime } from "../query/time.js"
import { AdministeredValue, FleetWeight, IndexDefinition, type IndexValue } from "../schema/indexes.js"
import { IndexStore } from "../storage/indexes.js"
import { type MarkedWrite, withMark } from "../storage/marks.js"
import { chunksOf, countedIngest, decodeRecords, INDEX_VALUES_PER_WRITE, invalidRecords, markedChunks, markReader } from "./batch.js"
import { IndexComputation, IndexComputationSummary } from "./index-computation.js"
import { intervalMicros } from "./index-method.js"

/** Decodes every record of a batch with `schema`, refusing unknown fields; issues carry the record's index. */
const decodeAll = <A, I>(schema: Schema.Schema<A, I>, input: ReadonlyArray<unknown>) => {
  const decode = Schema.decodeUnknownEither(schema, { errors: "all", onExcessProperty: "error" })
  const out: Array<{ readonly index: number; readonly value: A }> = []
  const issues = decodeRecords(input, decode, (value, index) => {
    out.push({ index, value })
  })
  return { out, issues }
}

/** What `define` did. */
export const IndexDefineSummary = Schema.Struct({ defined: Schema.Number, computed: IndexComputationSummary })
export type IndexDefineSummary = typeof IndexDefineSummary.Type

/**
 * The write path of indexes: definitions, fleet weights and administered values. Every batch
 * is validated whole and stored atomically; one bad record (reported with its index) refuses it.
 */
export class IndexIngest extends Effect.Service<IndexIngest>()("Market/IndexIngest", {
  effect: Effect.gen(function* () {
    const store = yield* IndexStore
    const computation = yield* IndexComputation

    /**
     * Stores index definitions (an existing id is replaced, keeping its values) and computes
     * what is due, so a new computed index is readable from its first day when this returns.
     * A reference price's components must be rental indices of one GPU with its row type; an
     * index cannot change its row type or source, as its stored values would no longer fit.
     */
    const define = Effect.fn("IndexIngest.define")(function* (definitions: ReadonlyArray<unknown>) {
      const { out, issues } = decodeAll(IndexDefinition, definitions)
      const stored = new Map((yield* Effect.mapError(store.definitions, unavailableWrite)).map((d) => [d.definition.id as string, d.definition]))
      const batch = new Map<string, IndexDefinition>()
      for (const { index, value: d } of out) {
        if (batch.has(d.id)) issues.push({ index, message: `id: ${d.id} appears twice in the batch` })
        batch.set(d.id, d)
        const before = stored.get(d.id)
        if (before !== undefined && (before.row_type !== d.row_type || before.source !== d.source)) {
          issues.push({ index, message: `id: ${d.id} is stored as a ${before.source} ${before.row_type} index; its row type and source cannot change` })
        }
      }
      for (const { index, value: d } of out) {
        if (d.inputs.kind !== "reference") continue
        for (const id of d.inputs.components) {
          const c = batch.get(id) ?? stored.get(id)
          if (c === undefined || c.inputs.kind !== "rental" || c.inputs.gpus.length !== 1 || c.row_type !== d.row_type) {
            issues.push({ index, message: `inputs.components: ${id} is not a ${d.row_type} rental index of one GPU` })
          }
        }
      }
      if (issues.length > 0) return yield* Effect.fail(invalidRecords(issues.sort((a, b) => a.index - b.index)))
      yield* Effect.mapError(store.define([...batch.values()]), unavailableWrite)
      const summary: IndexDefineSummary = { defined: batch.size, computed: yield* computation.computeDue() }
      return summary
    })

    /**
     * Replaces the fleet weights of every GPU the batch names by the batch's weights. The
     * periods of one GPU must not overlap. Reference values already computed are not restated
     * (`IndexComputation.computeRange` does that).
     */
    const setFleetWeights = Effect.fn("IndexIngest.setFleetWeights")(function* (weights: ReadonlyArray<unknown>) {
      const { out, issues } = decodeAll(FleetWeight, weights)
      const byGpu = new Map<string, Array<{ index: number; value: FleetWeight }>>()
      for (const w of out) {
        const list = byGpu.get(w.value.gpu_canonical_name)
        if (list === undefined) byGpu.set(w.value.gpu_canonical_name, [w])
        else list.push(w)
      }
      for (const list of byGpu.values()) {
        list.sort((a, b) => (a.value.valid_from < b.value.valid_from ? -1 : 1))
        for (let i = 1; i < list.length; i++) {
          const prev = list[i - 1]!.value
          if (prev.valid_to === null || prev.valid_to > list[i]!.value.valid_from) {
            issues.push({ index: list[i]!.index, message: `valid_from: overlaps the weight of ${prev.gpu_canonical_name} from ${prev.valid_from}` })
          }
        }
      }
      if (issues.length > 0) return yield* Effect.fail(invalidRecords(issues.sort((a, b) => a.index - b.index)))
      yield* Effect.mapError(store.putWeights([...byGpu.keys()], out.map((w) => w.value)), unavailableWrite)
      return out.length
    })

    /**
     * Publishes values of administered indices. A daily value names its date; an intraday one
     * the instant its interval starts (on :00 or :30). A value whose interval is not complete
     * by `Clock` is refused, as is one for an unknown or computed index. A value with a stored
     * timestamp replaces it (the administrator's restatement). `options.mark` is written with
     * the last values.
     */
    const publish = Effect.fn("IndexIngest.publish")(function* (values: ReadonlyArray<unknown>, options: MarkedWrite = {}) {
      const { out, issues } = decodeAll(AdministeredValue, values)
      const now = (yield* Clock.currentTimeMillis) * MICROS_PER_MS
      const defs = new Map((yield* Effect.mapError(store.definitions, unavailableWrite)).map((d) => [d.definition.id as string, d.definition]))
      const rows: Array<IndexValue> = []
      const seen = new Set<string>()
      for (const { index, value: v } of out) {
        const d = defs.get(v.id)
        if (d === undefined || d.source !== "administered") {
          issues.push({ index, message: `id: ${v.id} is not an administered index` })
          continue
        }
        let start: number | undefined
        let timestamp: string
        if (d.row_type === "daily") {
          start = isBareDate(v.timestamp) ? parseDate(v.timestamp) : undefined
          timestamp = v.timestamp
        } else {
          start = isBareDate(v.timestamp) ? undefined : parseDateTime(v.timestamp)
          if (start !== undefined && start % intervalMicros("intraday") !== 0) start = undefined
          timestamp = start === undefined ? "" : formatInstant(start)
        }
        if (start === undefined) {
          issues.push({ index, message: `timestamp: expected ${d.row_type === "daily" ? "a YYYY-MM-DD date" : "an ISO 8601 instant on a :00 or :30 boundary"}` })
          continue
        }
        if (start + intervalMicros(d.row_type) > now) {
          issues.push({ index, message: `timestamp: the interval of ${v.timestamp} is not complete yet` })
          continue
        }
        if (seen.has(`${v.id}\u0000${timestamp}`)) {
          issues.push({ index, message: `timestamp: ${v.id} at ${timestamp} appears twice in the batch` })
          continue
        }
        seen.add(`${v.id}\u0000${timestamp}`)
        rows.push({ id: v.id, type: d.row_type, timestamp, value: v.value, p5: null, p95: null })
      }
      if (issues.length > 0) return yield* Effect.fail(invalidRecords(issues.sort((a, b) => a.index - b.index)))
      for (const { rows: values, mark } of markedChunks(chunksOf(rows, INDEX_VALUES_PER_WRITE), options.mark)) {
        yield* Effect.mapError(store.apply({ clear: [], values, cursors: [], ...withMark(mark) }), unavailableWrite)
      }
      return rows.length
    }, countedIngest("indexes"))

    /** A progress mark written with a write of this type (`options.mark`). */
    return { define, setFleetWeights, publish, mark: markReader(store.mark) } as const
  })
}) {}
