import { type RentalPrice, rentalPriceFields } from "@gpu-market/core"
import {
  fieldsOfKind, type GpuSpelling, nullableFields, type PagePlan, type RentalGpuSummary, RentalPriceStore, rentalPriceTable, StorageConflict
} from "@gpu-market/core/storage"
import * as Effect from "effect/Effect"
import type { SqliteClient } from "./client.js"
import {
  type Clauses, cmp, columnGuard, type CompiledPage, InvalidPlan, isUniqueViolation, KEY_CHUNK, keysetClause, limitParam,
  orderBy, padded, type PageSort, pinnedValue, placeholders, predicateClauses, type PredicateFields, readRows, versionScopeClause
} from "./page-sql.js"

/** Row fields that hold numbers; every other field holds text. */
const NUMERIC_FIELDS = fieldsOfKind(rentalPriceTable, "numeric")

/**
 * Row fields that may be null. A sort over one has no order both the reference store and SQL
 * agree on (JS `<` coerces null), so sorting by it is refused.
 */
const NULLABLE_FIELDS = nullableFields(rentalPriceTable)

/** The 29 columns in the row's field order, so better-sqlite3 builds each row in spec order. */
const SELECT = `SELECT ${rentalPriceFields.join(", ")} FROM rental_prices`

/**
 * Builds a row from the raw column array of `SELECT` (columns in spec order). better-sqlite3
 * makes an object row by setting 29 properties one at a time from C++, which costs more than
 * reading the columns; a literal with a fixed shape costs next to nothing, so a 100-row page runs
 * in about 55% of the time of object mode, and the rows get one stable hidden class. A test
 * checks the positions against `rentalPriceFields`.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- raw SQLite values, typed by the row they fill
export const rowFromColumns = (c: ReadonlyArray<any>): RentalPrice => ({
  vendor: c[0], vendor_gpu_name: c[1], vendor_sku: c[2], vendor_region: c[3], region: c[4],
  gpu_canonical_name: c[5], gpu_manufacturer: c[6], gpu_model: c[7], gpu_count: c[8], gpu_memory_gb: c[9],
  vcpu: c[10], ram_gb: c[11], os: c[12], form_factor: c[13], interconnect: c[14], instance_type: c[15],
  instance_variant: c[16], contract_type: c[17], contract_term: c[18], contract_details: c[19], availability: c[20],
  price_usd_per_gpu_hour: c[21], raw_price: c[22], raw_price_unit: c[23], valid_from: c[24], valid_to: c[25],
  extracted_at: c[26], base_product_key: c[27], product_key: c[28]
})

/**
 * A row's values in column order, for positional binding: named binding would refuse a row that
 * is not a plain object (a `RentalPriceRow` instance, say), which the reference accepts.
 */
export const columnsOf = (r: RentalPrice): Array<unknown> => [
  r.vendor, r.vendor_gpu_name, r.vendor_sku, r.vendor_region, r.region,
  r.gpu_canonical_name, r.gpu_manufacturer, r.gpu_model, r.gpu_count, r.gpu_memory_gb,
  r.vcpu, r.ram_gb, r.os, r.form_factor, r.interconnect, r.instance_type,
  r.instance_variant, r.contract_type, r.contract_term, r.contract_details, r.availability,
  r.price_usd_per_gpu_hour, r.raw_price, r.raw_price_unit, r.valid_from, r.valid_to,
  r.extracted_at, r.base_product_key, r.product_key
]

const column = columnGuard(rentalPriceFields, "rental price")

/** The rental fields predicates see; a text value never equals a number column. */
const PREDICATE_FIELDS: PredicateFields = {
  column,
  matchable: (field, texts) => (NUMERIC_FIELDS.has(field) ? [] : texts),
  ordered: (field) => NUMERIC_FIELDS.has(field),
  seekPastBounds: true
}

/**
 * Turns a page plan into one statement. The text depends only on the plan's shape (scope, fields,
 * list lengths, sort, whether there is a position); values are bound, so each shape is prepared
 * once. Never uses OFFSET: pages continue from the keyset position.
 */
export const compilePage = (plan: PagePlan): CompiledPage => {
  const c: Clauses = { where: [], params: [] }
  const { where, params } = c
  versionScopeClause(c, plan)
  predicateClauses(c, plan, PREDICATE_FIELDS)
  const by = column(plan.sort.by)
  if (NULLABLE_FIELDS.has(by)) throw new InvalidPlan(`cannot sort by nullable field ${by}`)
  const pinned = plan.after === undefined || NUMERIC_FIELDS.has(by) ? undefined : pinnedValue(plan, by)
  // Sorting by a field an equality pins is the default (GPU anchor, GPU sort).
  const sort: PageSort = { field: by, sql: by, tie: rentalPriceTable.tie, desc: plan.sort.order === "desc", pinned }
  if (plan.after !== undefined) keysetClause(c, sort, plan.after)
  limitParam(c, plan.limit)
  return { sql: `${SELECT} WHERE ${where.join(" AND ")} ORDER BY ${orderBy(sort)} LIMIT ?`, params }
}

const INSERT = `INSERT INTO rental_prices (${rentalPriceFields.join(", ")}) VALUES (${placeholders(rentalPriceFields.length)})`

interface SpellingRow {
  readonly gpu_canonical_name: string
  readonly spelling: string
  readonly by_vendor: number
}
interface GpuRow {
  readonly gpu_canonical_name: string
  readonly gpu_manufacturer: string
  readonly listed: number
}
interface VendorRow {
  readonly gpu_canonical_name: string
  readonly vendor: string
}

interface Summary {
  readonly spellings: ReadonlyArray<GpuSpelling>
  readonly gpus: ReadonlyArray<RentalGpuSummary>
}

/** The rental price store over one connection; the schema must be migrated. */
export const makeRentalPriceStore = (client: SqliteClient): RentalPriceStore["Type"] => {
  const { db, prepare } = client

  const rows = (sql: string, params: ReadonlyArray<unknown>): Array<RentalPrice> => readRows(prepare, sql, params, rowFromColumns)

  /**
   * Spellings and summaries are read on every `gpu_search` and metadata request but change only
   * when rows are applied. They are cached until this connection applies a change or another
   * connection commits one (`PRAGMA data_version` moves only for the latter).
   */
  let localWrites = 0
  let cached: { readonly dataVersion: number; readonly localWrites: number; readonly summary: Summary } | undefined
  const dataVersion = () => prepare("PRAGMA data_version").pluck().get() as number

  const readSummary = (): Summary => {
    const version = dataVersion()
    if (cached !== undefined && cached.dataVersion === version && cached.localWrites === localWrites) return cached.summary
    const gpuRows = prepare(
      `SELECT g.gpu_canonical_name, g.gpu_manufacturer,
         EXISTS (SELECT 1 FROM rental_prices p WHERE p.gpu_canonical_name = g.gpu_canonical_name AND p.valid_to IS NULL) AS listed
       FROM rental_gpus g`
    ).all() as Array<GpuRow>
    const spellingRows = prepare("SELECT gpu_canonical_name, spelling, by_vendor FROM rental_gpu_spellings").all() as Array<SpellingRow>
    const vendorRows = prepare("SELECT gpu_canonical_name, vendor FROM rental_gpu_vendors").all() as Array<VendorRow>
    // Sorted here with JS `<`, as the reference sorts, rather than by SQLite's byte order:
    // spellings are free text and the two orders differ outside the Basic Multilingual Plane.
    const vendorSpellings = new Map<string, Array<string>>()
    for (const s of spellingRows) {
      if (s.by_vendor === 0) continue
      const list = vendorSpellings.get(s.gpu_canonical_name)
      if (list === undefined) vendorSpellings.set(s.gpu_canonical_name, [s.spelling])
      else list.push(s.spelling)
    }
    const vendors = new Map<string, Array<string>>()
    for (const v of vendorRows) {
      const list = vendors.get(v.gpu_canonical_name)
      if (list === undefined) vendors.set(v.gpu_canonical_name, [v.vendor])
      else list.push(v.vendor)
    }
    gpuRows.sort((a, b) => cmp(a.gpu_canonical_name, b.gpu_canonical_name))
    const spellings: Array<GpuSpelling> = []
    const gpus = gpuRows.map((g): RentalGpuSummary => {
      const name = g.gpu_canonical_name
      const own = (vendorSpellings.get(name) ?? []).sort(cmp)
      spellings.push({ gpu_canonical_name: name, spelling: name })
      for (const spelling of own) if (spelling !== name) spellings.push({ gpu_canonical_name: name, spelling })
      return {
        gpu_canonical_name: name,
        gpu_manufacturer: g.gpu_manufacturer,
        spellings: [...own],
        currently_listed: g.listed === 1,
        vendors: (vendors.get(name) ?? []).sort(cmp)
      }
    })
    const summary: Summary = { spellings, gpus }
    cached = { dataVersion: version, localWrites, summary }
    return summary
  }
  // One read transaction, so the version and the three tables come from one snapshot.
  const readSummaryConsistently = db.transaction(readSummary)

  const CLOSE = "UPDATE rental_prices SET valid_to = ? WHERE product_key = ? AND valid_to IS NULL"
  const RECLOSE = "UPDATE rental_prices SET valid_to = ? WHERE product_key = ?"
  const DELETE = "DELETE FROM rental_prices WHERE product_key = ?"
  const EXISTS = "SELECT 1 FROM rental_prices WHERE product_key = ?"
  // The first row seen for a GPU names its manufacturer, as in the reference.
  const INSERT_GPU = "INSERT OR IGNORE INTO rental_gpus (gpu_canonical_name, gpu_manufacturer) VALUES (?, ?)"
  const INSERT_CANONICAL = "INSERT OR IGNORE INTO rental_gpu_spellings (gpu_canonical_name, spelling, by_vendor) VALUES (?, ?, 0)"
  const INSERT_SPELLING = `INSERT INTO rental_gpu_spellings (gpu_canonical_name, spelling, by_vendor) VALUES (?, ?, 1)
    ON CONFLICT (gpu_canonical_name, spelling) DO UPDATE SET by_vendor = 1 WHERE by_vendor = 0`
  const INSERT_VENDOR = "INSERT OR IGNORE INTO rental_gpu_vendors (gpu_canonical_name, vendor) VALUES (?, ?)"

  return {
    current: (keys) => client.run("rental_prices.current", () => {
      const unique = [...new Set(keys)]
      const out: Array<RentalPrice> = []
      for (let i = 0; i < unique.length; i += KEY_CHUNK) {
        const chunk = padded(unique.slice(i, i + KEY_CHUNK))
        for (const r of rows(`${SELECT} WHERE valid_to IS NULL AND base_product_key IN (${placeholders(chunk.length)})`, chunk)) {
          out.push(r)
        }
      }
      return out
    }),

    apply: (changes) =>
      client.transaction<void, StorageConflict>("rental_prices.apply", (abort) => {
        const close = prepare(CLOSE)
        const closed = new Set<string>()
        for (const c of changes.close) {
          // The reference checks every close against the state before the change, then applies
          // them in order, so closing one row twice is no conflict and the last valid_to wins.
          if (closed.has(c.product_key)) {
            prepare(RECLOSE).run(c.valid_to, c.product_key)
            continue
          }
          if (close.run(c.valid_to, c.product_key).changes === 0) {
            abort(new StorageConflict({ detail: `row ${c.product_key} is no longer current` }))
          }
          closed.add(c.product_key)
        }

        const insert = prepare(INSERT)
        const insertGpu = prepare(INSERT_GPU)
        const insertCanonical = prepare(INSERT_CANONICAL)
        const insertSpelling = prepare(INSERT_SPELLING)
        const insertVendor = prepare(INSERT_VENDOR)
        // Named as the reference names it: a stored key first, else the product's current row.
        const conflict = (r: RentalPrice) =>
          new StorageConflict({
            detail: prepare(EXISTS).get(r.product_key) !== undefined
              ? `row ${r.product_key} exists`
              : `product ${r.base_product_key} already has a current row`
          })
        const opened = new Set<string>()
        const openedCurrentBases = new Set<string>()
        // Summary rows already written in this change; a batch repeats the same few GPUs a lot.
        const seen = new Set<string>()
        const once = (key: string) => (seen.has(key) ? false : (seen.add(key), true))

        for (const r of changes.open) {
          if (opened.has(r.product_key)) {
            // The reference keeps the last of two opens with one key; the earlier one goes.
            prepare(DELETE).run(r.product_key)
          }
          if (r.valid_to === null) {
            // The reference remembers every current open of the change, even one later
            // replaced, so the unique index alone would miss this case.
            if (openedCurrentBases.has(r.base_product_key)) abort(conflict(r))
            openedCurrentBases.add(r.base_product_key)
          }
          try {
            insert.run(columnsOf(r))
          } catch (e) {
            if (!isUniqueViolation(e)) throw e
            abort(conflict(r))
          }
          opened.add(r.product_key)

          const gpu = r.gpu_canonical_name
          if (once(`g\u0000${gpu}`)) {
            insertGpu.run(gpu, r.gpu_manufacturer)
            insertCanonical.run(gpu, gpu)
          }
          if (once(`v\u0000${gpu}\u0000${r.vendor}`)) insertVendor.run(gpu, r.vendor)
          if (once(`s\u0000${gpu}\u0000${r.vendor_gpu_name}`)) insertSpelling.run(gpu, r.vendor_gpu_name)
          if (once(`s\u0000${gpu}\u0000${r.gpu_model}`)) insertSpelling.run(gpu, r.gpu_model)
        }
      }).pipe(Effect.tap(() => {
        localWrites++
      })),

    page: (plan) =>
      client.run("rental_prices.page", () => {
        const { sql, params } = compilePage(plan)
        return rows(sql, params)
      }),

    spellings: client.run("rental_prices.spellings", () => readSummaryConsistently().spellings),

    gpus: client.run("rental_prices.gpus", () => readSummaryConsistently().gpus)
  }
}
