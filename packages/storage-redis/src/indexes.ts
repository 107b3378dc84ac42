import { type FleetWeight, type IndexDefinition, type IndexValue, indexValueFields, StorageError } from "@gpu-market/core"
import {
  answersFrom, cmp, type IndexCoverage, IndexStore, type IndexValueChanges, indexValueTable, intervalStart, matchesPredicates, orderAndSeek,
  type PagePlan, type Scope, type StoredIndexDefinition
} from "@gpu-market/core/storage"
import * as Option from "effect/Option"
import { Batch, untilApplied } from "./batch.js"
import type { RedisClient } from "./client.js"
import { decode, encode } from "./codec.js"
import { AFTER_VALUE, encodeMember, encodeValue, memberTie } from "./lex.js"
import { replies } from "./reads.js"
import { readMark } from "./settings.js"
import { type Bounds, makeTable, type Table, type TableSpec } from "./table.js"
import { freshVersion, readVersion } from "./data-version.js"
import { logEvents } from "./event-log.js"

/** The hash tag of everything the index store keeps: one apply may touch several indexes. */
const TAG = "indexes"

/** The key of the index values' version, which every change of a value or definition bumps. */
const indexesVersionKey = (client: RedisClient): string => client.keys.key(TAG, "version")

const startOf = (v: IndexValue): string => intervalStart(v.timestamp)

/** Whether a value's interval starts inside a window; `latest` and `asOf` pick values per index instead. */
const inWindow = (v: IndexValue, scope: Scope): boolean => {
  if (scope._tag !== "window") return true
  const start = startOf(v)
  return start >= scope.start && start < scope.end
}

/**
 * The `timestamp` bounds of a window on interval starts. A daily timestamp is a date, before its
 * own start (midnight), so the walk starts at the window's date and `inWindow` drops what lies
 * before its start; every timestamp before the end starts before it.
 */
const windowBounds = (scope: Scope, sortField: string): Bounds =>
  scope._tag !== "window" || sortField !== "timestamp"
    ? {}
    : {
      lower: { bytes: encodeValue(scope.start.slice(0, 10)), exclusive: false },
      upper: { bytes: encodeValue(scope.end), exclusive: true }
    }

/**
 * The values of ONE index as a table (its tie-breaker, `timestamp`, is unique only within an
 * index): every value indexed by `timestamp` and by `value`, for window pages. `latest` and
 * `asOf` take one value per index from the `start` and `answers` sets instead.
 */
export const indexValueSpec: TableSpec<IndexValue> = {
  tag: TAG,
  tie: indexValueTable.tie,
  sortFields: indexValueTable.sortable,
  subsets: [{ name: "all", holds: () => true, anchors: indexValueTable.anchors, global: true }],
  groups: [],
  subsetsFor: () => ["all"],
  inScope: inWindow,
  scopeBounds: windowBounds,
  structures: [indexValueFields]
}

/** The ids a plan names, if it names any: the shortest `in` / `eq` list on `id`. */
const planIds = (plan: PagePlan): ReadonlyArray<string> | undefined => {
  let best: ReadonlyArray<string> | undefined
  for (const p of plan.predicates) {
    if (p.field !== "id" || (p.op !== "in" && p.op !== "eq")) continue
    const values = p.op === "eq" ? [p.value] : p.values
    if (best === undefined || values.length < best.length) best = values
  }
  return best === undefined ? undefined : [...new Set(best)]
}

/**
 * The index store. Under the hash tag `{indexes}` it keeps `defs` (hash id → msgpack definition),
 * `cursors` (hash id → computed_through), `weights` (hash GPU → msgpack list of its fleet
 * weights), `ids` (set of ids that ever stored a value), `ver` (hash id → count of applies that
 * changed its values, checked by every apply, so applies of one index serialise), and per index
 * `v:<id>:…`: its value table (see `indexValueSpec`), `v:<id>:start` and `v:<id>:answers` (sorted
 * sets, member `lex(interval start or answersFrom) ++ lex(timestamp)`).
 */
export const makeIndexStore = (client: RedisClient): IndexStore["Type"] => {
  const store = storeOn(client)
  if (client.stale === client) return store
  // Index pages and their version may lag the primary: both are read from the replica, so a
  // page is cached under the version it was read at.
  const stale = storeOn(client.stale)
  return { ...store, page: stale.page, version: stale.version }
}

const storeOn = (client: RedisClient): IndexStore["Type"] => {
  const { redis } = client
  const key = (...parts: ReadonlyArray<string>) => client.keys.key(TAG, ...parts)
  const defsKey = key("defs")
  const cursorsKey = key("cursors")
  const marksKey = key("marks")
  const weightsKey = key("weights")
  const idsKey = key("ids")
  const verKey = key("ver")
  const versionKey = indexesVersionKey(client)
  const startKey = (id: string) => key("v", id, "start")
  const answersKey = (id: string) => key("v", id, "answers")

  /** The value table of one index: the engine's keys under `v:<id>`, still in the `{indexes}` slot. */
  const tables = new Map<string, Table<IndexValue>>()
  const tableOf = (id: string): Table<IndexValue> => {
    let table = tables.get(id)
    if (table === undefined) {
      const keys = { prefix: client.keys.prefix, key: (_tag: string, ...parts: ReadonlyArray<string>) => key("v", id, ...parts) }
      tables.set(id, table = makeTable({ ...client, keys }, indexValueSpec))
    }
    return table
  }

  /** Each index's value picked by a `latest` or `asOf` scope, in `ids` order; none where it has none. */
  const picked = async (ids: ReadonlyArray<string>, scope: Scope): Promise<Array<IndexValue>> => {
    // The last value to start (latest), or the last to answer at or before `at` (as-of).
    const [keyOf, upto] = scope._tag === "asOf"
      ? [answersKey, Buffer.concat([Buffer.from("["), encodeValue(scope.at), AFTER_VALUE])]
      : [startKey, "+"]
    const pipeline = redis.pipeline()
    for (const id of ids) pipeline.callBuffer("ZRANGE", keyOf(id), upto, "-", "BYLEX", "REV", "LIMIT", "0", "1")
    const fetches = (await replies(pipeline)).map((members, i) => {
      const member = (members as Array<Buffer>)[0]
      return member === undefined ? Promise.resolve([]) : tableOf(ids[i]!).fetch([memberTie(member)])
    })
    return (await Promise.all(fetches)).flatMap((found) => found.flatMap((s) => (s === undefined ? [] : [s.row])))
  }

  const page = async (plan: PagePlan): Promise<Array<IndexValue>> => {
    const ids = planIds(plan) ?? (await redis.smembers(idsKey))
    if (plan.scope._tag !== "window") {
      const candidates = (await picked(ids, plan.scope)).filter((v) => matchesPredicates(v, plan.predicates))
      return orderAndSeek(candidates, plan, "timestamp")
    }
    // A plan names one index; several are walked each to the limit and merged.
    if (ids.length === 1) return tableOf(ids[0]!).page(plan)
    const rows: Array<IndexValue> = []
    for (const id of ids) rows.push(...await tableOf(id).page(plan))
    return orderAndSeek(rows, plan, "timestamp")
  }

  /** One attempt at `apply`: `"retry"` when another writer changed an index it read meanwhile. */
  const attempt = async (changes: IndexValueChanges): Promise<void | "retry"> => {
    const touched = [...new Set([...changes.clear.map((c) => c.id), ...changes.values.map((v) => v.id)])]
    const cursorIds = [...new Set(changes.cursors.map((c) => c.id))]
    const read = redis.pipeline()
    if (touched.length > 0) read.hmget(verKey, ...touched)
    if (cursorIds.length > 0) read.hmget(cursorsKey, ...cursorIds).hmgetBuffer(defsKey, ...cursorIds)
    for (const c of changes.clear) {
      const lower = Buffer.concat([Buffer.from("["), encodeValue(c.start)])
      const upper = Buffer.concat([Buffer.from("("), encodeValue(c.end)])
      read.callBuffer("ZRANGE", startKey(c.id), lower, upper, "BYLEX")
    }
    const fetched = await replies(read)
    let r = 0
    const versions = touched.length > 0 ? (fetched[r++] as Array<string | null>) : []
    const cursors = cursorIds.length > 0 ? (fetched[r++] as Array<string | null>) : []
    const defined = cursorIds.length > 0 ? (fetched[r++] as Array<Buffer | null>) : []

    // The value each changed (id, timestamp) ends with: clears first, then values, the last one winning.
    const next = new Map<string, Map<string, IndexValue | undefined>>()
    const of = (id: string) => {
      let m = next.get(id)
      if (m === undefined) next.set(id, m = new Map())
      return m
    }
    for (const c of changes.clear) {
      for (const member of fetched[r++] as Array<Buffer>) of(c.id).set(memberTie(member), undefined)
    }
    for (const v of changes.values) of(v.id).set(v.timestamp, v)

    const batch = new Batch()
    touched.forEach((id, i) => batch.expect(verKey, id, versions[i] ?? null))
    for (const [id, values] of next) {
      const table = tableOf(id)
      const timestamps = [...values.keys()]
      const before = await table.fetch(timestamps)
      let changed = false
      timestamps.forEach((timestamp, i) => {
        const old = before[i], now = values.get(timestamp)
        if (old === undefined && now === undefined) return
        changed = true
        table.write(batch, old, now)
        for (const [k, at] of [[startKey(id), startOf], [answersKey(id), answersFrom]] as const) {
          const was = old === undefined ? undefined : encodeMember(at(old.row), timestamp)
          const is = now === undefined ? undefined : encodeMember(at(now), timestamp)
          if (was !== undefined && is !== undefined && was.equals(is)) continue
          if (was !== undefined) batch.op("ZREM", k, was)
          if (is !== undefined) batch.op("ZADD", k, "0", is)
        }
      })
      if (changed) {
        batch.op("HINCRBY", verKey, id, "1")
        if ([...values.values()].some((v) => v !== undefined)) batch.op("SADD", idsKey, id)
      }
    }

    // A cursor only moves forward, and one of an undefined index is ignored.
    const through = new Map<string, string>()
    for (const c of changes.cursors) {
      const prior = through.get(c.id)
      if (prior === undefined || c.through > prior) through.set(c.id, c.through)
    }
    cursorIds.forEach((id, i) => {
      const stored = cursors[i] ?? null
      const to = through.get(id)!
      if (defined[i] === null || (stored !== null && stored >= to)) return
      batch.expect(cursorsKey, id, stored)
      batch.op("HSET", cursorsKey, id, to)
    })
    if (changes.clear.length > 0 || changes.values.length > 0) batch.op("SET", versionKey, freshVersion())
    logEvents(client, batch, changes.values.map((row) => ({ type: "index_value", row })))
    if (changes.mark !== undefined) batch.op("HSET", marksKey, changes.mark.name, changes.mark.value)
    if (!batch.isEmpty && (await batch.execute(client)) !== 0) return "retry"
  }

  return {
    define: (definitions) =>
      client.run("indexes.define", async () => {
        if (definitions.length === 0) return
        // One MULTI: the definitions are stored together, with a new version; cursors live apart, so they are kept.
        await replies(redis.multi().hset(defsKey, ...definitions.flatMap((d) => [d.id, encode(d)])).set(versionKey, freshVersion()))
        await client.acknowledged(defsKey)
      }),

    definitions: client.run("indexes.definitions", async () => {
      const [defs, cursors] = (await replies(redis.multi().hgetallBuffer(defsKey).hgetall(cursorsKey))) as [
        Record<string, Buffer>, Record<string, string>
      ]
      return Object.keys(defs).sort(cmp).map((id): StoredIndexDefinition => ({
        definition: decode<IndexDefinition>(defs[id]!),
        computed_through: cursors[id] ?? null
      }))
    }),

    definition: (id) =>
      client.run("indexes.definition", async () =>
        Option.map(Option.fromNullable(await redis.hgetBuffer(defsKey, id)), (bytes) => decode<IndexDefinition>(bytes))),

    putWeights: (gpus, weights) => {
      const replaced = new Set(gpus)
      const byGpu = new Map<string, Array<FleetWeight>>()
      for (const w of weights) {
        const list = byGpu.get(w.gpu_canonical_name)
        if (list === undefined) byGpu.set(w.gpu_canonical_name, [w])
        else list.push(w)
      }
      // Weights of a GPU not named are added to the ones it keeps: read them, and write only if unchanged.
      const kept = [...byGpu.keys()].filter((gpu) => !replaced.has(gpu))
      return untilApplied(client, "indexes.putWeights", async () => {
        const stored = kept.length === 0 ? [] : await redis.hmgetBuffer(weightsKey, ...kept)
        const batch = new Batch()
        kept.forEach((gpu, i) => batch.expect(weightsKey, gpu, stored[i] ?? null))
        for (const gpu of replaced) if (!byGpu.has(gpu)) batch.op("HDEL", weightsKey, gpu)
        const keeps = new Map(kept.map((gpu, i) => [gpu, stored[i] ?? null]))
        for (const [gpu, list] of byGpu) {
          const bytes = keeps.get(gpu) ?? null
          const prior = bytes === null ? [] : decode<Array<FleetWeight>>(bytes)
          batch.op("HSET", weightsKey, gpu, encode([...prior, ...list]))
        }
        if (!batch.isEmpty) batch.op("SET", versionKey, freshVersion())
        if (!batch.isEmpty && (await batch.execute(client)) !== 0) return "retry"
      }, () => new StorageError({ operation: "indexes.putWeights", cause: "fleet weights kept changing under this write" }))
    },

    weights: client.run("indexes.weights", async () => {
      const all = Object.values(await redis.hgetallBuffer(weightsKey)).flatMap((bytes) => decode<Array<FleetWeight>>(bytes))
      return all.sort((a, b) => cmp(a.gpu_canonical_name, b.gpu_canonical_name) || cmp(a.valid_from, b.valid_from))
    }),

    mark: readMark(client, marksKey, "indexes.mark"),

    version: readVersion(client, versionKey, "indexes.version"),

    apply: (changes) =>
      untilApplied(client, "indexes.apply", () => attempt(changes), () =>
        new StorageError({ operation: "indexes.apply", cause: "index values kept changing under this write" })),

    page: (plan) => client.run("indexes.page", () => page(plan)),

    coverage: (ids, from) =>
      client.run("indexes.coverage", async () => {
        const unique = [...new Set(ids)].sort(cmp)
        const lower = from === null ? "-" : Buffer.concat([Buffer.from("["), encodeValue(from)])
        const pipeline = redis.pipeline()
        for (const id of unique) {
          pipeline.callBuffer("ZRANGE", startKey(id), "+", "-", "BYLEX", "REV", "LIMIT", "0", "1")
          pipeline.zlexcount(startKey(id), lower, "+")
          pipeline.callBuffer("ZRANGE", startKey(id), lower, "+", "BYLEX", "LIMIT", "0", "1")
        }
        const counts = await replies(pipeline)
        const out: Array<IndexCoverage> = []
        unique.forEach((id, i) => {
          // One index's timestamps order as its interval starts do.
          const last = (counts[3 * i] as Array<Buffer>)[0]
          if (last === undefined) return
          const first = (counts[3 * i + 2] as Array<Buffer>)[0]
          out.push({ id, first: first === undefined ? null : memberTie(first), count: counts[3 * i + 1] as number, last: memberTie(last) })
        })
        return out
      })
  }
}
