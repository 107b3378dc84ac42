import { type HardwareClassField, hardwareClassFields, type HardwarePrice, hardwarePriceFields } from "@gpu-market/core"
import {
  DateSpans, type HardwareGpuCoverage, HardwarePriceStore, hardwarePriceTable, type HardwareSummary, type PagePlan
} from "@gpu-market/core/storage"
import type { SqliteClient } from "./client.js"
import { readMark, writeMark } from "./settings.js"
import type { Migration } from "./migration.js"
import {
  type Clauses, cmp, columnGuard, type CompiledPage, InvalidPlan, keysetClause, limitParam, orderBy, type PageSort,
  pinnedValue, placeholders, predicateClauses, predicateFieldsOf, readRows
} from "./page-sql.js"
import { dataVersion } from "./data-version.js"
import { appendEvents } from "./event-log.js"

/**
 * Sort fields and the SQL each orders by. A null `condition` orders as "" (the plan contract),
 * spelled as the expression the indexes hold, so SQLite reads them in order.
 */
const SORT_EXPRESSIONS: ReadonlyMap<string, string> = new Map([
  ["condition", "ifnull(condition, '')"],
  ["gpu_canonical_name", "gpu_canonical_name"],
  ["observed_date", "observed_date"],
  ["price_usd", "price_usd"],
  ["observation_id", "observation_id"]
])

/** The index a window page sorted by a field other than the day walks. */
const WINDOW_SORT_INDEXES: ReadonlyMap<string, string> = new Map([
  ["condition", "hardware_prices_condition"],
  ["gpu_canonical_name", "hardware_prices_gpu"],
  ["price_usd", "hardware_prices_price"]
])

/** The row's columns in spec order, so column i is field i. */
const SELECT = `SELECT ${hardwarePriceFields.join(", ")} FROM hardware_prices`

const flag = (v: unknown): boolean | null => (v === null ? null : v === 1)
const list = (v: unknown): ReadonlyArray<string> | null => (v === null ? null : JSON.parse(v as string))

/**
 * Builds a row from the raw column array of `SELECT`: a literal of fixed shape is much cheaper
 * than better-sqlite3's object rows. Booleans are stored as 0/1 and `services_included` as JSON
 * text. A test checks the positions against `hardwarePriceFields`.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- raw SQLite values, typed by the row they fill
export const hardwareRowFromColumns = (c: ReadonlyArray<any>): HardwarePrice => ({
  observation_id: c[0], listing_key: c[1], gpu_canonical_name: c[2], observed_date: c[3], listing_last_updated_date: c[4],
  price_amount: c[5], currency: c[6], price_usd: c[7], price_usd_low: c[8], price_usd_high: c[9], price_type: c[10],
  price_per_gpu_system_attach: c[11], price_basis: c[12], taxes_included: flag(c[13]), payment_terms: c[14],
  stock_status: c[15], units_available: c[16], min_order_quantity: c[17], lead_time_weeks: c[18], market: c[19],
  channel: c[20], source_type: c[21], confidence: c[22], counterparty_class: c[23], transaction_level: c[24],
  gpu_count_in_unit: c[25], includes_host_cpus: c[26], includes_dram_gb: c[27], includes_storage_tb: c[28],
  includes_nics: c[29], includes_nvswitch: flag(c[30]), includes_scaleout_fabric: flag(c[31]),
  includes_chassis_psu: flag(c[32]), includes_cooling_hw: c[33], software_entitlements: c[34], support_years: c[35],
  warranty_months: c[36], services_included: list(c[37]), condition: c[38], module_packaging: c[39],
  unit_age_months: c[40], unit_age_basis: c[41], warranty_remaining_months: c[42], hours_used: c[43],
  warranty_transferable: flag(c[44]), firmware_region_lock: flag(c[45]), country: c[46], country_group: c[47],
  export_control_regime: c[48]
})

/** A row's values in column order, booleans as 0/1 and the services list as JSON, for binding. */
export const hardwareColumnsOf = (r: HardwarePrice): Array<unknown> =>
  hardwarePriceFields.map((f) => {
    const v = r[f]
    return typeof v === "boolean" ? (v ? 1 : 0) : Array.isArray(v) ? JSON.stringify(v) : v
  })

/** The hardware fields predicates see: only text columns equal a text, only number columns take bounds. */
const PREDICATE_FIELDS = predicateFieldsOf(hardwarePriceTable, { column: columnGuard(hardwarePriceFields, "hardware price"), seekPastBounds: true })

const DAY_START = "T00:00:00.000000Z"

/**
 * A window bound on the instant a day starts (`observed_date || DAY_START`), as a bound on
 * `observed_date` itself, so it is a range over the date indexes. Exact for any text: with `p`
 * the first ten characters of the bound and `q` the rest, `d || DAY_START` compares with `p || q`
 * as `d` compares with `p`, and as `DAY_START` compares with `q` when `d = p`.
 */
const dayBound = (instant: string, side: "start" | "end"): { readonly op: string; readonly value: string } => {
  if (instant.length < 10) return { op: side === "start" ? ">=" : "<", value: instant }
  const p = instant.slice(0, 10)
  const q = instant.slice(10)
  return side === "start"
    ? { op: DAY_START >= q ? ">=" : ">", value: p }
    : { op: DAY_START < q ? "<=" : "<", value: p }
}

/**
 * Whether the keyset position of a day-sorted page already implies a bound on the day:
 * descending from day `v` means `observed_date <= v`, which implies `observed_date < b` when
 * `v < b`. Such a bound is left out, because SQLite would range over it rather than over the
 * position, and every page would read again from the window's edge down to its position.
 */
const dayBoundImplied = (plan: PagePlan, op: string, bound: string): boolean => {
  const after = plan.after
  if (after === undefined || plan.sort.by !== "observed_date" || typeof after.value !== "string") return false
  const v = after.value
  if (plan.sort.order === "desc") return op === "<" ? v < bound : op === "<=" ? v <= bound : false
  return op === ">" ? v > bound : op === ">=" ? v >= bound : false
}

/** The SQL of one page and the values it binds, in order. */

/**
 * Turns a page plan into one statement, never with OFFSET. `latest` is the rows without a next
 * observed day (`next_observed_date IS NULL`, spelled so for the partial indexes); `asOf` the
 * rows whose day is on or before the date and whose next day is after it.
 */
export const compileHardwarePage = (plan: PagePlan): CompiledPage => {
  const c: Clauses = { where: [], params: [] }
  const { where, params } = c
  switch (plan.scope._tag) {
    case "latest":
      where.push("next_observed_date IS NULL")
      break
    case "asOf": {
      const day = plan.scope.at.slice(0, 10)
      if (!dayBoundImplied(plan, "<=", day)) {
        where.push("observed_date <= ?")
        params.push(day)
      }
      where.push("(next_observed_date IS NULL OR next_observed_date > ?)")
      params.push(day)
      break
    }
    case "window": {
      for (const bound of [dayBound(plan.scope.start, "start"), dayBound(plan.scope.end, "end")]) {
        if (dayBoundImplied(plan, bound.op, bound.value)) continue
        where.push(`observed_date ${bound.op} ?`)
        params.push(bound.value)
      }
      break
    }
  }
  predicateClauses(c, plan, PREDICATE_FIELDS)
  const by = SORT_EXPRESSIONS.get(plan.sort.by)
  if (by === undefined) throw new InvalidPlan(`cannot sort hardware prices by ${JSON.stringify(plan.sort.by)}`)
  const pinned = plan.after === undefined || plan.sort.by === "price_usd" ? undefined : pinnedValue(plan, plan.sort.by)
  const sort: PageSort = { field: plan.sort.by, sql: by, tie: "observation_id", desc: plan.sort.order === "desc", pinned }
  if (plan.after !== undefined) keysetClause(c, sort, plan.after)
  limitParam(c, plan.limit)
  // A window looks selective to the planner, which would range over the day index and sort the
  // whole window for every page. Walking the sort's own index reads rows in order and stops
  // after one page; only a listing filter, a handful of rows, is better served by its index.
  const walk = plan.scope._tag === "window" && !plan.predicates.some((p) => p.field === "listing_key")
    ? WINDOW_SORT_INDEXES.get(plan.sort.by)
    : undefined
  const from = walk === undefined ? SELECT : `${SELECT} INDEXED BY ${walk}`
  return { sql: `${from} WHERE ${where.join(" AND ")} ORDER BY ${orderBy(sort)} LIMIT ?`, params }
}

const INSERT = `INSERT INTO hardware_prices (${hardwarePriceFields.join(", ")}, next_observed_date)
  VALUES (${placeholders(hardwarePriceFields.length + 1)})`
/** What a replacing row sets: everything but the listing and the day it is the row of. */
const REPLACED_FIELDS = hardwarePriceFields
  .map((field, at) => ({ field, at }))
  .filter(({ field }) => field !== "observation_id" && field !== "listing_key" && field !== "observed_date")
const UPDATE = `UPDATE hardware_prices SET ${REPLACED_FIELDS.map(({ field }) => `${field} = ?`).join(", ")}
  WHERE listing_key = ? AND observed_date = ?`
const STORED = `SELECT gpu_canonical_name, ${hardwareClassFields.join(", ")} FROM hardware_prices WHERE listing_key = ? AND observed_date = ?`
const NEXT_DAY = "SELECT min(observed_date) FROM hardware_prices WHERE listing_key = ? AND observed_date > ?"
// The listing's previous day now has this day after it.
const LINK_PREVIOUS = `UPDATE hardware_prices SET next_observed_date = ?
  WHERE listing_key = ? AND observed_date = (SELECT max(observed_date) FROM hardware_prices WHERE listing_key = ? AND observed_date < ?)`
const ADD_VALUE = `INSERT INTO hardware_filter_values (field, value, rows) VALUES (?, ?, ?)
  ON CONFLICT (field, value) DO UPDATE SET rows = rows + excluded.rows`
const DROP_UNUSED_VALUES = "DELETE FROM hardware_filter_values WHERE rows <= 0"
const ADD_COVERAGE = `INSERT INTO hardware_gpu_listings (gpu_canonical_name, listing_key, first_observed, last_observed, observations)
  VALUES (?, ?, ?, ?, ?)
  ON CONFLICT (gpu_canonical_name, listing_key) DO UPDATE SET
    first_observed = min(first_observed, excluded.first_observed),
    last_observed = max(last_observed, excluded.last_observed),
    observations = observations + excluded.observations`
const RECOUNT = `SELECT count(*) AS n, min(observed_date) AS first, max(observed_date) AS last
  FROM hardware_prices WHERE listing_key = ? AND gpu_canonical_name = ?`
const SET_COVERAGE = `INSERT OR REPLACE INTO hardware_gpu_listings (gpu_canonical_name, listing_key, first_observed, last_observed, observations)
  VALUES (?, ?, ?, ?, ?)`
const DROP_COVERAGE = "DELETE FROM hardware_gpu_listings WHERE gpu_canonical_name = ? AND listing_key = ?"

type Stored = { readonly gpu_canonical_name: string } & { readonly [F in HardwareClassField]: string | null }

/** The hardware price store over one connection; the schema must be migrated. */
export const makeHardwarePriceStore = (client: SqliteClient): HardwarePriceStore["Type"] => {
  const { db, prepare } = client

  const readSummary = (): HardwareSummary => {
    const valueRows = prepare("SELECT field, value FROM hardware_filter_values").raw(true).all() as Array<[HardwareClassField, string]>
    const values = {} as { -readonly [F in HardwareClassField]: Array<string> }
    for (const f of hardwareClassFields) values[f] = []
    for (const [field, value] of valueRows) values[field]?.push(value)
    // Sorted with JS `<`, as the reference sorts.
    for (const f of hardwareClassFields) values[f].sort(cmp)
    const gpus = prepare(
      `SELECT gpu_canonical_name, min(first_observed) AS first_observed, max(last_observed) AS last_observed,
         count(*) AS listings, sum(observations) AS observations
       FROM hardware_gpu_listings GROUP BY gpu_canonical_name`
    ).all() as Array<HardwareGpuCoverage>
    return { values, gpus: gpus.sort((a, b) => cmp(a.gpu_canonical_name, b.gpu_canonical_name)) }
  }
  const version = dataVersion(client, "hardware_prices")
  // One read transaction, so both tables come from one snapshot.
  const readSummaryConsistently = db.transaction(readSummary)

  return {
    mark: readMark(client, "hardware_prices.mark"),

    put: (batch, mark) =>
      client.transaction("hardware_prices.put", () => {
        const stored = prepare(STORED)
        const insert = prepare(INSERT)
        const update = prepare(UPDATE)
        const nextDay = prepare(NEXT_DAY).pluck()
        const linkPrevious = prepare(LINK_PREVIOUS)
        const valueDeltas = new Map<string, number>()
        const count = (field: string, value: string | null, delta: number) => {
          if (value === null) return
          const key = `${field}\u0000${value}`
          valueDeltas.set(key, (valueDeltas.get(key) ?? 0) + delta)
        }
        const coverage = new DateSpans<{ readonly gpu: string; readonly listing: string }>()
        // Coverage of a listing whose row moved to another GPU is counted again from the rows.
        const recount = new Map<string, { gpu: string; listing: string }>()
        let inserted = 0
        let replaced = 0
        for (const r of batch) {
          const columns = hardwareColumnsOf(r)
          const old = stored.get(r.listing_key, r.observed_date) as Stored | undefined
          if (old !== undefined) {
            update.run(...REPLACED_FIELDS.map(({ at }) => columns[at]), r.listing_key, r.observed_date)
            replaced++
            for (const f of hardwareClassFields) count(f, old[f], -1)
            if (old.gpu_canonical_name !== r.gpu_canonical_name) {
              recount.set(`${old.gpu_canonical_name}\u0000${r.listing_key}`, { gpu: old.gpu_canonical_name, listing: r.listing_key })
              recount.set(`${r.gpu_canonical_name}\u0000${r.listing_key}`, { gpu: r.gpu_canonical_name, listing: r.listing_key })
            }
          } else {
            insert.run(...columns, nextDay.get(r.listing_key, r.observed_date) ?? null)
            linkPrevious.run(r.observed_date, r.listing_key, r.listing_key, r.observed_date)
            inserted++
            coverage.add(`${r.gpu_canonical_name}\u0000${r.listing_key}`, r.observed_date, () => ({ gpu: r.gpu_canonical_name, listing: r.listing_key }))
          }
          for (const f of hardwareClassFields) count(f, r[f], 1)
        }
        const addValue = prepare(ADD_VALUE)
        for (const [key, delta] of valueDeltas) {
          if (delta === 0) continue
          const at = key.indexOf("\u0000")
          addValue.run(key.slice(0, at), key.slice(at + 1), delta)
        }
        prepare(DROP_UNUSED_VALUES).run()
        const addCoverage = prepare(ADD_COVERAGE)
        for (const { group, first, last, rows } of coverage.values()) addCoverage.run(group.gpu, group.listing, first, last, rows)
        for (const { gpu, listing } of recount.values()) {
          const now = prepare(RECOUNT).get(listing, gpu) as { n: number; first: string | null; last: string | null }
          if (now.n === 0) prepare(DROP_COVERAGE).run(gpu, listing)
          else prepare(SET_COVERAGE).run(gpu, listing, now.first, now.last, now.n)
        }
        if (batch.length > 0) version.bump()
        appendEvents(client, batch.map((row) => ({ type: "hardware_observation", row })))
        if (mark !== undefined) writeMark(client, mark)
        return { inserted, replaced }
      }),

    version: version.version,

    page: (plan) =>
      client.read("hardware_prices.page", () => {
        const { sql, params } = compileHardwarePage(plan)
        return readRows(prepare, sql, params, hardwareRowFromColumns)
      }),

    summary: client.read("hardware_prices.summary", () => readSummaryConsistently())
  }
}

/** Sort expressions of the collection, by index-name suffix. */
const SORT_INDEX_COLUMNS = [
  ["condition", "ifnull(condition, '')"],
  ["gpu", "gpu_canonical_name"],
  ["day", "observed_date"],
  ["price", "price_usd"]
] as const

/**
 * Planner statistics for an empty database, shaped like a market of 1M listing-days of 10k
 * listings and ~10 GPUs over 180 days, of which one row per listing is its latest. Without them
 * SQLite cannot tell a partial index of latest rows from the full index with the same columns.
 */
const seededHardwareStats = (): string => {
  const all = 1_000_000
  const latest = 10_000
  const rows: Array<readonly [string, string | null, string]> = [
    ["hardware_prices", null, `${all}`],
    ["hardware_prices", "hardware_prices_listing_day", `${all} 100 1`],
    ["hardware_prices", "hardware_prices_gpu_day", `${all} ${all / 10} 550 1`],
    ["hardware_prices", "hardware_prices_day", `${all} 5500 1`],
    ["hardware_prices", "hardware_prices_condition", `${all} ${all / 3} 1`],
    ["hardware_prices", "hardware_prices_gpu", `${all} ${all / 10} 1`],
    ["hardware_prices", "hardware_prices_price", `${all} 5 1`],
    ["hardware_prices", "hardware_prices_latest_condition", `${latest} ${latest / 3} 1`],
    ["hardware_prices", "hardware_prices_latest_gpu", `${latest} ${latest / 10} 1`],
    ["hardware_prices", "hardware_prices_latest_day", `${latest} ${latest / 2} 1`],
    ["hardware_prices", "hardware_prices_latest_price", `${latest} 2 1`],
    ["hardware_prices", "hardware_prices_latest_gpu_condition", `${latest} ${latest / 10} ${latest / 30} 1`],
    ["hardware_prices", "hardware_prices_latest_gpu_day", `${latest} ${latest / 10} ${latest / 20} 1`],
    ["hardware_prices", "hardware_prices_latest_gpu_price", `${latest} ${latest / 10} 2 1`]
  ]
  const values = rows.map(([tbl, idx, stat]) => `('${tbl}', ${idx === null ? "NULL" : `'${idx}'`}, '${stat}')`).join(",\n  ")
  return `ANALYZE hardware_prices;
DELETE FROM sqlite_stat1 WHERE tbl = 'hardware_prices';
INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES
  ${values};
ANALYZE sqlite_schema;`
}

/**
 * Migration 2: the hardware price table, its indexes, and the summaries behind metadata.
 * `next_observed_date` is the listing's next observed day (null on its latest row), kept by
 * `put`: `/latest` reads the small partial indexes of rows without one, and `/as-of` is the
 * versioned-row test `observed_date <= D < next_observed_date`.
 */
export const hardwarePricesMigration: Migration = {
  version: 2,
  name: "hardware prices",
  sql: `
CREATE TABLE hardware_prices (
  observation_id TEXT NOT NULL,
  listing_key TEXT NOT NULL,
  gpu_canonical_name TEXT NOT NULL,
  observed_date TEXT NOT NULL,
  listing_last_updated_date TEXT,
  price_amount REAL,
  currency TEXT,
  price_usd REAL NOT NULL,
  price_usd_low REAL,
  price_usd_high REAL,
  price_type TEXT,
  price_per_gpu_system_attach REAL,
  price_basis TEXT,
  taxes_included INTEGER,
  payment_terms TEXT,
  stock_status TEXT,
  units_available INTEGER,
  min_order_quantity INTEGER,
  lead_time_weeks REAL,
  market TEXT,
  channel TEXT,
  source_type TEXT,
  confidence TEXT,
  counterparty_class TEXT,
  transaction_level TEXT,
  gpu_count_in_unit INTEGER,
  includes_host_cpus INTEGER,
  includes_dram_gb REAL,
  includes_storage_tb REAL,
  includes_nics TEXT,
  includes_nvswitch INTEGER,
  includes_scaleout_fabric INTEGER,
  includes_chassis_psu INTEGER,
  includes_cooling_hw TEXT,
  software_entitlements TEXT,
  support_years REAL,
  warranty_months REAL,
  services_included TEXT,
  condition TEXT,
  module_packaging TEXT,
  unit_age_months REAL,
  unit_age_basis TEXT,
  warranty_remaining_months REAL,
  hours_used REAL,
  warranty_transferable INTEGER,
  firmware_region_lock INTEGER,
  country TEXT,
  country_group TEXT,
  export_control_regime TEXT,
  next_observed_date TEXT
);
-- One row per listing and day; also the listing filter and the seek for a listing's neighbours.
CREATE UNIQUE INDEX hardware_prices_listing_day ON hardware_prices(listing_key, observed_date);
-- Windows range over the day, with or without a GPU filter; the other sorts scan their own order.
CREATE INDEX hardware_prices_day ON hardware_prices(observed_date, observation_id);
CREATE INDEX hardware_prices_gpu_day ON hardware_prices(gpu_canonical_name, observed_date, observation_id);
${SORT_INDEX_COLUMNS.filter(([name]) => name !== "day")
  .map(([name, expr]) => `CREATE INDEX hardware_prices_${name} ON hardware_prices(${expr}, observation_id);`).join("\n")}
-- Latest rows: one per listing, small enough to keep one index per sort, with and without a GPU.
${SORT_INDEX_COLUMNS.map(([name, expr]) =>
  `CREATE INDEX hardware_prices_latest_${name} ON hardware_prices(${expr}, observation_id) WHERE next_observed_date IS NULL;`).join("\n")}
${SORT_INDEX_COLUMNS.filter(([name]) => name !== "gpu").map(([name, expr]) =>
  `CREATE INDEX hardware_prices_latest_gpu_${name} ON hardware_prices(gpu_canonical_name, ${expr}, observation_id) WHERE next_observed_date IS NULL;`).join("\n")}

-- Metadata without scanning rows: how many rows hold each filter value, and each listing's
-- days per GPU. Both are kept by put, in its transaction.
CREATE TABLE hardware_filter_values (
  field TEXT NOT NULL,
  value TEXT NOT NULL,
  rows INTEGER NOT NULL,
  PRIMARY KEY (field, value)
) WITHOUT ROWID;
CREATE TABLE hardware_gpu_listings (
  gpu_canonical_name TEXT NOT NULL,
  listing_key TEXT NOT NULL,
  first_observed TEXT NOT NULL,
  last_observed TEXT NOT NULL,
  observations INTEGER NOT NULL,
  PRIMARY KEY (gpu_canonical_name, listing_key)
) WITHOUT ROWID;

${seededHardwareStats()}
`
}
