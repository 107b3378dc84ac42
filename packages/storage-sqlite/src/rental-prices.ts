import { type RentalPrice, rentalPriceFields } from "@gpu-market/core"
import { type GpuSpelling, type RentalGpuSummary, rentalPriceEvents, rentalPriceKeys, type RentalPriceStore, rentalPriceTable, rowCacheRowsOf } from "@gpu-market/core/storage"
import type { SqliteClient } from "./client.js"
import { cmp, placeholders } from "./page-sql.js"
import { rowCachedPages } from "./row-cache.js"
import { summaryCache } from "./summary-cache.js"
import { bulkLoad } from "./bulk-load.js"
import { dataVersion } from "./data-version.js"
import type { KeyedRows } from "./event-log.js"
import { readMark } from "./settings.js"
import { sqliteTransact, versionPageCompiler } from "./versions.js"

/** The 29 columns in the row's field order, so better-sqlite3 builds each row in spec order. */
const SELECT = `SELECT ${rentalPriceFields.join(", ")} FROM rental_prices`

/**
 * Builds a row from the raw column array of `SELECT` (columns in spec order). better-sqlite3
 * makes an object row by setting 29 properties one at a time from C++, which costs more than
 * reading the columns; a literal with a fixed shape costs next to nothing, so a page runs in about
 * half the time of object mode (BENCHMARKS.md), and the rows get one stable hidden class. A test
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

/** Rental rows as the change feed's log names them: by `product_key` (`KeyedRows`). */
export const rentalEventRows: KeyedRows<RentalPrice> = {
  table: "rental_prices",
  key: "product_key",
  columns: rentalPriceFields,
  fromColumns: rowFromColumns,
  event: (type, row) => (type === "rental_price" || type === "rental_price_withdrawal" ? { type, row } : undefined)
}

/** Turns a page plan into one statement (`versionPageCompiler`). */
export const compilePage = versionPageCompiler(rentalPriceTable, SELECT)

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

/**
 * Rows one rental write may hold (`RentalPriceStore.rowsPerWrite`): a CLI import's batch of 500
 * products, new or each closing a row and opening one, is one transaction with its progress mark.
 * A commit writes every page it changed, and a row changes a page in each of the table's 20
 * indexes, so writes of `MAX_ROWS_PER_WRITE` spent an import's time writing the same pages again.
 * Readers never wait for a writer (WAL); another writer polls SQLite's busy handler, and waited
 * no longer behind these writes than behind small ones (docs/design/writing.md, "SQLite rental writes of 1,000 rows").
 */
export const ROWS_PER_WRITE = 1_000

/**
 * Rows one rental write of a bulk load's connection holds (`SqliteOptions.bulk`): a commit copies
 * every page it changed to the WAL, and with the serving indexes held back (`bulkLoad`) those are
 * mostly pages of the three indexes keyed by hashes, which a write of 1,000 rows changes nearly
 * one page per row. Past half a million rows a write of 25,000 new products still changed nine in
 * ten of those pages, so each commit copied nearly all three indexes again; a write of 50,000
 * products copies them half as often for the same rows (BENCHMARKS.md (k)). The bound is the bulk
 * page cache (`BULK_CACHE_MIB`): the pages such a write dirties, three indexes of a million rows
 * and the write's own table and event pages, stay in it until the commit. Another writer waits for
 * the whole write: about two seconds on a quiet machine.
 */
export const BULK_ROWS_PER_WRITE = 100_000

/** The rental price store over one connection; the schema must be migrated. */
export const makeRentalPriceStore = (
  client: SqliteClient,
  options: { readonly bulk?: boolean; readonly rowCacheRows?: number } = {}
): RentalPriceStore["Type"] => {
  const bulk = options.bulk === true
  const { prepare } = client
  const version = dataVersion(client, "rental_prices")

  const cachedPage = rowCachedPages(client, {
    name: "rental_prices", tie: rentalPriceTable.tie, select: SELECT, fromColumns: rowFromColumns, version,
    compiler: (select) => versionPageCompiler(rentalPriceTable, select)
  }, rowCacheRowsOf(options.rowCacheRows))

  // Spellings and summaries are read on every `gpu_search` and metadata request.
  const summary = summaryCache(client, version, (): Summary => {
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
    return { spellings, gpus }
  })

  // The first row seen for a GPU names its manufacturer, as in the reference.
  const INSERT_GPU = "INSERT OR IGNORE INTO rental_gpus (gpu_canonical_name, gpu_manufacturer) VALUES (?, ?)"
  const INSERT_CANONICAL = "INSERT OR IGNORE INTO rental_gpu_spellings (gpu_canonical_name, spelling, by_vendor) VALUES (?, ?, 0)"
  const INSERT_SPELLING = `INSERT INTO rental_gpu_spellings (gpu_canonical_name, spelling, by_vendor) VALUES (?, ?, 1)
    ON CONFLICT (gpu_canonical_name, spelling) DO UPDATE SET by_vendor = 1 WHERE by_vendor = 0`
  const INSERT_VENDOR = "INSERT OR IGNORE INTO rental_gpu_vendors (gpu_canonical_name, vendor) VALUES (?, ?)"

  const opened = (r: RentalPrice, once: (id: string) => boolean) => {
    const gpu = r.gpu_canonical_name
    if (once(`g\u0000${gpu}`)) {
      prepare(INSERT_GPU).run(gpu, r.gpu_manufacturer)
      prepare(INSERT_CANONICAL).run(gpu, gpu)
    }
    if (once(`v\u0000${gpu}\u0000${r.vendor}`)) prepare(INSERT_VENDOR).run(gpu, r.vendor)
    for (const spelling of [r.vendor_gpu_name, r.gpu_model]) {
      if (once(`s\u0000${gpu}\u0000${spelling}`)) prepare(INSERT_SPELLING).run(gpu, spelling)
    }
  }

  return {
    rowsPerWrite: bulk ? BULK_ROWS_PER_WRITE : ROWS_PER_WRITE,
    bulkLoad: (rows) => bulkLoad(client, rows),
    mark: readMark(client, "rental_prices.mark"),
    transact: sqliteTransact(client, "rental_prices.transact", {
      keys: rentalPriceKeys,
      def: rentalPriceTable,
      select: SELECT,
      fromColumns: rowFromColumns,
      insert: INSERT,
      columnsOf,
      opened,
      events: { ...rentalPriceEvents, keyed: rentalEventRows }
    }, () => {
      version.bump()
    }),

    version: version.version,

    page: (plan) =>
      client.read("rental_prices.page", () => cachedPage(plan)),

    spellings: client.read("rental_prices.spellings", () => summary.get().spellings),

    gpus: client.read("rental_prices.gpus", () => summary.get().gpus)
  }
}
