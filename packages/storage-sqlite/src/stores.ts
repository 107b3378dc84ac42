import { rowCacheRowsOf, type Stores } from "@gpu-market/core/storage"
import type { SqliteClient, SqliteOptions } from "./client.js"
import { makeHardwarePriceStore } from "./hardware-prices.js"
import { makeIndexStore } from "./indexes.js"
import { makeLlmTokenPriceStore } from "./llm-token-prices.js"
import { makeProcurementStore } from "./procurement.js"
import { makeRateLimitStore } from "./rate-limits.js"
import { makeReferenceDataStore } from "./reference.js"
import { makeRentalPriceStore, rentalEventRows } from "./rental-prices.js"
import { makeSettingsStore } from "./settings.js"
import { makeTokenStore } from "./tokens.js"
import { makeTransactionStore } from "./transactions.js"
import { makeEventLogStore } from "./event-log.js"
import { fileIdentity } from "./identity.js"

/** Every store over one migrated connection; the tests build them over connections they set up. */
export const makeStores = (client: SqliteClient, options: Pick<SqliteOptions, "eventPollMs" | "bulk" | "rowCacheRows"> = {}): Stores => {
  // A bulk load's connection serves no pages, so keeps no rows.
  const rowCacheRows = options.bulk === true ? 0 : rowCacheRowsOf(options.rowCacheRows)
  return {
  rentalStore: makeRentalPriceStore(client, { bulk: options.bulk === true, rowCacheRows }),
  tokenStore: makeTokenStore(client),
  rateLimitStore: makeRateLimitStore(client),
  settingsStore: makeSettingsStore(client),
  hardwarePriceStore: makeHardwarePriceStore(client),
  llmTokenPriceStore: makeLlmTokenPriceStore(client, rowCacheRows),
  transactionStore: makeTransactionStore(client),
  indexStore: makeIndexStore(client),
  procurementStore: makeProcurementStore(client),
  referenceDataStore: makeReferenceDataStore(client),
  eventLogStore: makeEventLogStore(client, rentalEventRows, options.eventPollMs),
  ...fileIdentity(client.filename)
  }
}
