import { type FleetWeight, type IndexDefinition, type IndexValue, indexValueFields } from "@gpu-market/core"
import {
  answersFrom, type IndexCoverage, IndexStore, indexValueTable, intervalStart, nullableFields, type PagePlan, type StoredIndexDefinition
} from "@gpu-market/core/storage"
import * as Option from "effect/Option"
import type { SqliteClient } from "./client.js"
import { readMark, writeMark } from "./settings.js"
import type { Migration } from "./migration.js"
import {
  type Clauses, columnGuard, type CompiledPage, InvalidPlan, limitParam, pinnedValue, predicateClauses, predicateFieldsOf, readRows
} from "./page-sql.js"
import { dataVersion } from "./data-version.js"
import { appendEvents } from "./event-log.js"

/**
 * Index definitions, fleet weights and published values. Values are keyed by `(id, start)`,
 * the instant their interval starts, which orders one index's values as `timestamp` does; the
 * as-of scope seeks `(id, answers_from)`. Both columns derive from the row (see core's
 * `intervalStart` and `answersFrom`).
 */
export const indexesMigration: Migration = {
  version: 5,
  name: "gpu price indexes",
  sql: `
CREATE TABLE index_definitions (
  id TEXT PRIMARY KEY,
  definition_json TEXT NOT NULL,
  computed_through TEXT
) WITHOUT ROWID;

CREATE TABLE index_values (
  id TEXT NOT NULL,
  start TEXT NOT NULL,
  answers_from TEXT NOT NULL,
  type TEXT NOT NULL,
  timestamp TEXT NOT NULL,
  value REAL NOT NULL,
  p5 REAL,
  p95 REAL,
  PRIMARY KEY (id, start)
) WITHOUT ROWID;
CREATE INDEX index_values_value ON index_values(id, value, timestamp);
CREATE INDEX index_values_answers ON index_values(id, answers_from);

CREATE TABLE index_fleet_weights (
  gpu_canonical_name TEXT NOT NULL,
  valid_from TEXT NOT NULL,
  valid_to TEXT,
  weight REAL NOT NULL,
  PRIMARY KEY (gpu_canonical_name, valid_from)
) WITHOUT ROWID;
`
}

const NULLABLE_FIELDS = nullableFields(indexValueTable)

const SELECT = `SELECT ${indexValueFields.map((f) => `v.${f}`).join(", ")} FROM index_values v`

/** Builds a row from the raw columns of `SELECT`, in spec order. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- raw SQLite values, typed by the row they fill
export const indexValueFromColumns = (c: ReadonlyArray<any>): IndexValue => ({
  id: c[0], type: c[1], timestamp: c[2], value: c[3], p5: c[4], p95: c[5]
})

const known = columnGuard(indexValueFields, "index value")

/** The index value fields predicates see; a text value never equals a number. */
const PREDICATE_FIELDS = predicateFieldsOf(indexValueTable, { column: (field) => `v.${known(field)}`, seekPastBounds: false })

/**
 * Turns a page plan over index values into one statement (values bound, never OFFSET). Sorting
 * one index by `timestamp` walks its primary key by `start`, the same order.
 */
export const compileIndexPage = (plan: PagePlan): CompiledPage => {
  const c: Clauses = { where: [], params: [] }
  const { where, params } = c
  predicateClauses(c, plan, PREDICATE_FIELDS)
  switch (plan.scope._tag) {
    case "latest":
      where.push("v.start = (SELECT max(w.start) FROM index_values w WHERE w.id = v.id)")
      break
    case "asOf":
      where.push("v.start = (SELECT w.start FROM index_values w WHERE w.id = v.id AND w.answers_from <= ? ORDER BY w.answers_from DESC LIMIT 1)")
      params.push(plan.scope.at)
      break
    case "window":
      where.push("v.start >= ? AND v.start < ?")
      params.push(plan.scope.start, plan.scope.end)
      break
  }
  const by = known(plan.sort.by)
  if (NULLABLE_FIELDS.has(by)) throw new InvalidPlan(`cannot sort by nullable field ${by}`)
  const desc = plan.sort.order === "desc"
  const dir = desc ? "DESC" : "ASC"
  const op = desc ? "<" : ">"
  let order: string
  if (by === "timestamp" && pinnedValue(plan, "id") !== undefined) {
    order = `v.start ${dir}`
    if (plan.after !== undefined) {
      where.push(`v.start ${op} ?`)
      params.push(intervalStart(plan.after.tie))
    }
  } else if (by === "timestamp") {
    order = `v.timestamp ${dir}`
    if (plan.after !== undefined) {
      where.push(`v.timestamp ${op} ?`)
      params.push(plan.after.tie)
    }
  } else {
    order = `v.${by} ${dir}, v.timestamp ${dir}`
    if (plan.after !== undefined) {
      where.push(`(v.${by}, v.timestamp) ${op} (?, ?)`)
      params.push(plan.after.value, plan.after.tie)
    }
  }
  limitParam(c, plan.limit)
  return { sql: `${SELECT} WHERE ${where.join(" AND ")} ORDER BY ${order} LIMIT ?`, params }
}

const UPSERT = `INSERT INTO index_values (id, start, answers_from, type, timestamp, value, p5, p95) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (id, start) DO UPDATE SET answers_from = excluded.answers_from, type = excluded.type, timestamp = excluded.timestamp,
  value = excluded.value, p5 = excluded.p5, p95 = excluded.p95`

/** The index store over one connection; the schema must be migrated. */
export const makeIndexStore = (client: SqliteClient): IndexStore["Type"] => {
  const { prepare } = client
  const parse = (json: string) => JSON.parse(json) as IndexDefinition
  const version = dataVersion(client, "indexes")
  return {
    define: (definitions) =>
      client.transaction("indexes.define", () => {
        const put = prepare(`INSERT INTO index_definitions (id, definition_json) VALUES (?, ?)
          ON CONFLICT (id) DO UPDATE SET definition_json = excluded.definition_json`)
        for (const d of definitions) put.run(d.id, JSON.stringify(d))
        version.bump()
      }),

    definitions: client.read("indexes.definitions", () =>
      (prepare("SELECT definition_json, computed_through FROM index_definitions ORDER BY id").raw(true).all() as Array<[string, string | null]>)
        .map(([json, computed_through]): StoredIndexDefinition => ({ definition: parse(json), computed_through }))),

    definition: (id) =>
      client.read("indexes.definition", () =>
        Option.map(Option.fromNullable(prepare("SELECT definition_json FROM index_definitions WHERE id = ?").pluck().get(id) as string | undefined), parse)),

    putWeights: (gpus, weights) =>
      client.transaction("indexes.putWeights", () => {
        const remove = prepare("DELETE FROM index_fleet_weights WHERE gpu_canonical_name = ?")
        for (const gpu of new Set(gpus)) remove.run(gpu)
        const insert = prepare("INSERT INTO index_fleet_weights (gpu_canonical_name, valid_from, valid_to, weight) VALUES (?, ?, ?, ?)")
        for (const w of weights) insert.run(w.gpu_canonical_name, w.valid_from, w.valid_to, w.weight)
        version.bump()
      }),

    weights: client.read("indexes.weights", () =>
      (prepare("SELECT gpu_canonical_name, weight, valid_from, valid_to FROM index_fleet_weights ORDER BY gpu_canonical_name, valid_from")
        .raw(true).all() as Array<[string, number, string, string | null]>)
        .map(([gpu_canonical_name, weight, valid_from, valid_to]): FleetWeight => ({ gpu_canonical_name, weight, valid_from, valid_to }))),

    apply: (changes) =>
      client.transaction("indexes.apply", () => {
        const clear = prepare("DELETE FROM index_values WHERE id = ? AND start >= ? AND start < ?")
        for (const c of changes.clear) clear.run(c.id, c.start, c.end)
        const upsert = prepare(UPSERT)
        for (const v of changes.values) upsert.run(v.id, intervalStart(v.timestamp), answersFrom(v), v.type, v.timestamp, v.value, v.p5, v.p95)
        const advance = prepare(`UPDATE index_definitions SET computed_through = ?
          WHERE id = ? AND (computed_through IS NULL OR computed_through < ?)`)
        for (const c of changes.cursors) advance.run(c.through, c.id, c.through)
        appendEvents(client, changes.values.map((row) => ({ type: "index_value", row })))
        if (changes.clear.length > 0 || changes.values.length > 0) version.bump()
        if (changes.mark !== undefined) writeMark(client, changes.mark)
      }),

    mark: readMark(client, "indexes.mark"),

    version: version.version,

    page: (plan) =>
      client.read("indexes.page", () => {
        const { sql, params } = compileIndexPage(plan)
        return readRows(prepare, sql, params, indexValueFromColumns)
      }),

    coverage: (ids, from) =>
      client.read("indexes.coverage", () => {
        const last = prepare("SELECT timestamp FROM index_values WHERE id = ? ORDER BY start DESC LIMIT 1").pluck()
        // One index's timestamps order as its starts do, so min(timestamp) is the first one.
        const since = prepare("SELECT min(timestamp), count(*) FROM index_values WHERE id = ? AND start >= ?").raw(true)
        const out: Array<IndexCoverage> = []
        for (const id of [...new Set(ids)].sort()) {
          const latest = last.get(id) as string | undefined
          if (latest === undefined) continue
          const [first, count] = since.get(id, from ?? "") as [string | null, number]
          out.push({ id, first, count, last: latest })
        }
        return out
      })
  }
}
