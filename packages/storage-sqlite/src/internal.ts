/**
 * Internals of the backend for its own tests and the benchmarks: not part of the package's
 * exports (its public surface is `index.ts`).
 */
export { fromDatabase, makeClient, Rollback, type SqliteClient, type SqliteOptions, type Statement } from "./client.js"
export { LATEST_VERSION, migrate, type Migration, migrations } from "./migrations.js"
export { makeStores } from "./stores.js"
export { columnsSql, versionedTableSql } from "./table-sql.js"
export { columnsOf, compilePage, makeRentalPriceStore, rentalEventRows, rowFromColumns } from "./rental-prices.js"
export { appendKeyedEvents } from "./event-log.js"
export { type CompiledPage, InvalidPlan } from "./page-sql.js"
export { makeTokenStore } from "./tokens.js"
export { makeRateLimitStore } from "./rate-limits.js"
export { makeSettingsStore } from "./settings.js"
export {
  compileHardwarePage, hardwareColumnsOf, hardwarePricesMigration, hardwareRowFromColumns,
  makeHardwarePriceStore
} from "./hardware-prices.js"
export {
  compileLlmPage, llmColumnsOf, llmRowFromColumns, llmTokenPricesMigration, makeLlmTokenPriceStore
} from "./llm-token-prices.js"
export { compileTransactionPage, makeTransactionStore, transactionFromColumns, transactionsMigration } from "./transactions.js"
export { compileIndexPage, indexesMigration, indexValueFromColumns, makeIndexStore } from "./indexes.js"
export { compileResourcePage, makeProcurementStore, procurementMigration } from "./procurement.js"
export * from "./index.js"
