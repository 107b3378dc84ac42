/** Rows a store keeps per data type for its pages by default (`rowCacheRows` of the SQLite and Redis options). */
export const DEFAULT_ROW_CACHE_ROWS = 10_000

/**
 * The row-cache size a store's `rowCacheRows` option asks for: the default when unset. One that is
 * not a whole number ≥ 0 throws a `RangeError`, before the store serves anything.
 */
export const rowCacheRowsOf = (rows: number | undefined): number => {
  const n = rows ?? DEFAULT_ROW_CACHE_ROWS
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`rowCacheRows must be a whole number ≥ 0, got ${n}`)
  return n
}
