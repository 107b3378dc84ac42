import type { EventSink } from "./event-log.js"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { FleetWeight, IndexDefinition, IndexValue } from "../schema/indexes.js"
import { answersFrom, type IndexCoverage, type IndexStore, intervalStart, type StoredIndexDefinition } from "./indexes.js"
import { cmp, matchesPredicates, orderAndSeek } from "./rules.js"
import type { PagePlan } from "./plan.js"
import { indexValueTable } from "./tables.js"
import { memoryMarks } from "./marks.js"
import { memoryDataVersion } from "./memory-versions.js"

/**
 * The reference evaluation of an index value plan (see `IndexStore.page`): the scope picks the
 * values in play (for `latest` and `asOf`, one per index), then predicates filter them.
 */
export const evaluateIndexPlan = (values: Iterable<IndexValue>, plan: PagePlan): Array<IndexValue> => {
  const scope = plan.scope
  let inScope: Array<IndexValue>
  if (scope._tag === "window") {
    inScope = [...values].filter((v) => {
      const start = intervalStart(v.timestamp)
      return start >= scope.start && start < scope.end
    })
  } else {
    const best = new Map<string, { readonly key: string; readonly value: IndexValue }>()
    for (const v of values) {
      const key = scope._tag === "latest" ? intervalStart(v.timestamp) : answersFrom(v)
      if (scope._tag === "asOf" && key > scope.at) continue
      const seen = best.get(v.id)
      if (seen === undefined || key > seen.key) best.set(v.id, { key, value: v })
    }
    inScope = [...best.values()].map((b) => b.value)
  }
  return orderAndSeek(inScope.filter((v) => matchesPredicates(v, plan.predicates)), plan, indexValueTable.tie)
}

/** Coverage as every backend reports it (see `IndexStore.coverage`). */
export const indexCoverage = (values: Iterable<IndexValue>, ids: ReadonlyArray<string>, from: string | null): Array<IndexCoverage> => {
  const wanted = new Set(ids)
  const byId = new Map<string, { first: string | null; count: number; last: string }>()
  for (const v of values) {
    if (!wanted.has(v.id)) continue
    let c = byId.get(v.id)
    if (c === undefined) byId.set(v.id, c = { first: null, count: 0, last: v.timestamp })
    if (v.timestamp > c.last) c.last = v.timestamp
    if (from === null || intervalStart(v.timestamp) >= from) {
      c.count++
      if (c.first === null || v.timestamp < c.first) c.first = v.timestamp
    }
  }
  return [...byId].sort(([a], [b]) => cmp(a, b)).map(([id, c]) => ({ id, first: c.first, count: c.count, last: c.last }))
}

/** The in-memory index store over fresh state. */
export const makeMemoryIndexStore = (sink: EventSink = () => {}): IndexStore["Type"] => {
  const definitions = new Map<string, { definition: IndexDefinition; computed_through: string | null }>()
  let weights: Array<FleetWeight> = []
  /** Values by `id` then `timestamp`. */
  const values = new Map<string, Map<string, IndexValue>>()
  const all = function* () {
    for (const byTimestamp of values.values()) yield* byTimestamp.values()
  }
  const marks = memoryMarks()
  const version = memoryDataVersion()

  return {
    mark: marks.mark,
    define: (defs) => Effect.sync(() => {
      for (const definition of defs) {
        definitions.set(definition.id, { definition, computed_through: definitions.get(definition.id)?.computed_through ?? null })
      }
      version.bump()
    }),
    definitions: Effect.sync(() =>
      [...definitions.values()]
        .sort((a, b) => cmp(a.definition.id, b.definition.id))
        .map((d): StoredIndexDefinition => ({ definition: d.definition, computed_through: d.computed_through }))),
    definition: (id) => Effect.sync(() => Option.map(Option.fromNullable(definitions.get(id)), (d) => d.definition)),
    putWeights: (gpus, put) => Effect.sync(() => {
      const replaced = new Set(gpus)
      weights = [...weights.filter((w) => !replaced.has(w.gpu_canonical_name)), ...put]
        .sort((a, b) => cmp(a.gpu_canonical_name, b.gpu_canonical_name) || cmp(a.valid_from, b.valid_from))
      version.bump()
    }),
    weights: Effect.sync(() => [...weights]),
    apply: (changes) => Effect.sync(() => {
      for (const c of changes.clear) {
        const byTimestamp = values.get(c.id)
        if (byTimestamp === undefined) continue
        for (const [timestamp] of byTimestamp) {
          const start = intervalStart(timestamp)
          if (start >= c.start && start < c.end) byTimestamp.delete(timestamp)
        }
      }
      for (const v of changes.values) {
        let byTimestamp = values.get(v.id)
        if (byTimestamp === undefined) values.set(v.id, byTimestamp = new Map())
        byTimestamp.set(v.timestamp, v)
      }
      for (const c of changes.cursors) {
        const d = definitions.get(c.id)
        if (d !== undefined && (d.computed_through === null || c.through > d.computed_through)) d.computed_through = c.through
      }
      if (changes.clear.length > 0 || changes.values.length > 0) version.bump()
      sink(changes.values.map((row) => ({ type: "index_value", row })))
      if (changes.mark !== undefined) marks.marks.set(changes.mark.name, changes.mark.value)
    }),
    version: version.version,
    page: (plan) => Effect.sync(() => evaluateIndexPlan(all(), plan)),
    coverage: (ids, from) => Effect.sync(() => indexCoverage(all(), ids, from))
  }
}
