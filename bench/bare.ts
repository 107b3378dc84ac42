import Database from "better-sqlite3"

/**
 * The baseline: the statement a hand-written service would run for the benchmark page, on its
 * own better-sqlite3 connection. Written out by hand, not derived from the library, so that it
 * is an independent reference for what the core returns.
 */

const BARE_COLUMNS = `vendor, vendor_gpu_name, vendor_sku, vendor_region, region, gpu_canonical_name,
  gpu_manufacturer, gpu_model, gpu_count, gpu_memory_gb, vcpu, ram_gb, os, form_factor, interconnect,
  instance_type, instance_variant, contract_type, contract_term, contract_details, availability,
  price_usd_per_gpu_hour, raw_price, raw_price_unit, valid_from, valid_to, extracted_at, base_product_key,
  product_key`

export const BARE_SQL = `SELECT ${BARE_COLUMNS}
FROM rental_prices
WHERE gpu_canonical_name = ? AND valid_to IS NULL
ORDER BY price_usd_per_gpu_hour, product_key
LIMIT 101`

/** The same page with an upper bound on the price, as the cold-page load asks it. */
export const BARE_SQL_MAX_PRICE = `SELECT ${BARE_COLUMNS}
FROM rental_prices
WHERE gpu_canonical_name = ? AND valid_to IS NULL AND price_usd_per_gpu_hour <= ?
ORDER BY price_usd_per_gpu_hour, product_key
LIMIT 101`

/**
 * Opens the file the way the library's client does for reading: the same page cache size, so
 * neither side wins by holding more of the index in memory.
 */
export const openBare = (filename: string): Database.Database => {
  const db = new Database(filename, { fileMustExist: true, timeout: 5000 })
  db.pragma("cache_size = -65536")
  db.pragma("temp_store = MEMORY")
  return db
}

export type Row = Record<string, unknown>

/**
 * The same statement as an informational best case: raw column arrays turned into fixed-shape
 * literals, which is cheaper than better-sqlite3's object rows. Not the baseline the targets
 * use; it shows how far the core is from the cheapest hand-written read.
 */
export const rawRow = (c: ReadonlyArray<unknown>): Row => ({
  vendor: c[0], vendor_gpu_name: c[1], vendor_sku: c[2], vendor_region: c[3], region: c[4],
  gpu_canonical_name: c[5], gpu_manufacturer: c[6], gpu_model: c[7], gpu_count: c[8], gpu_memory_gb: c[9],
  vcpu: c[10], ram_gb: c[11], os: c[12], form_factor: c[13], interconnect: c[14], instance_type: c[15],
  instance_variant: c[16], contract_type: c[17], contract_term: c[18], contract_details: c[19],
  availability: c[20], price_usd_per_gpu_hour: c[21], raw_price: c[22], raw_price_unit: c[23],
  valid_from: c[24], valid_to: c[25], extracted_at: c[26], base_product_key: c[27], product_key: c[28]
})
