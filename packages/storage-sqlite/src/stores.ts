import type { Stores } from "@gpu-market/core/storage"
import type { SqliteClient, SqliteOptions } from "./client.js"
import { makeHardwarePriceStore } from "./hardware-prices.js"
import { makeIndexStore } from "./indexes.js"
import { makeLlmTokenPriceStore } from "./llm-token-prices.js"
import { makeProcurementStore } from "./procurement.js"
import { makeRateLimitStore } from "./rate-limits.js"
import { makeReferenceDataStore } from "./reference.js"
import { makeRentalPriceStore } from "./rental-prices.js"
import { makeSettingsStore } from "./settings.js"
import { makeTokenStore } from "./tokens.js"
import { makeTransactionStore } from "./transactions.js"
import { makeEventLogStore } from "./event-log.js"
import { DEFAULT_ROW_CACHE_ROWS } from "./row-cache.js"

/** The row cache's size (`SqliteOptions.rowCacheRows`); a bulk load's connection serves no pages and keeps none. */
const rowCacheRowsOf = (options: Pick<SqliteOptions, "bulk" | "rowCacheRows">): number => {
  if (options.bulk === true) return 0
  const rows = options.rowCacheRows ?? DEFAULT_ROW_CACHE_ROWS
  if (!Number.isSafeInteger(rows) || rows < 0) throw new RangeError(`rowCacheRows must be a whole number ≥ 0, got ${rows}`)
  return rows
}

/** Every store over one migrated connection; the tests build them over connections they set up. */
export const makeStores = (client: SqliteClient, options: Pick<SqliteOptions, "eventPollMs" | "bulk" | "rowCacheRows"> = {}): Stores => ({
  rentalStore: makeRentalPriceStore(client, { bulk: options.bulk === true, rowCacheRows: rowCacheRowsOf(options) }),
  tokenStore: makeTokenStore(client),
  rateLimitStore: makeRateLimitStore(client),
  settingsStore: makeSettingsStore(client),
  hardwarePriceStore: makeHardwarePriceStore(client),
  llmTokenPriceStore: makeLlmTokenPriceStore(client, rowCacheRowsOf(options)),
  transactionStore: makeTransactionStore(client),
  indexStore: makeIndexStore(client),
  procurementStore: makeProcurementStore(client),
  referenceDataStore: makeReferenceDataStore(client),
  eventLogStore: makeEventLogStore(client, options.eventPollMs),
  changeStamp: client.changeStamp
})
