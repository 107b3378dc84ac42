/**
 * @gpu-market/storage-sqlite: every gpu-market store in one SQLite file, through better-sqlite3.
 * WAL mode and IMMEDIATE write transactions let several processes share the file.
 */
import { type Storage, storageContext, type StorageError, type Stores } from "@gpu-market/core"
import { Config, type ConfigError, Effect, Layer, type Scope } from "effect"
import { makeClient, type SqliteOptions } from "./client"
import { migrate } from "./migrations"
import { makeHardwarePriceStore } from "./hardware-prices"
import { makeRateLimitStore } from "./rate-limits"
import { makeRentalPriceStore } from "./rental-prices"
import { makeSettingsStore } from "./settings"
import { makeTokenStore } from "./tokens"
import { makeLlmTokenPriceStore } from "./llm-token-prices"
import { makeTransactionStore } from "./transactions"
import { makeIndexStore } from "./indexes"
import { makeProcurementStore } from "./procurement"

export { fromDatabase, makeClient, Rollback, type SqliteClient, type SqliteOptions, type Statement } from "./client"
export { LATEST_VERSION, migrate, type Migration, migrations } from "./migrations"
export { columnsOf, compilePage, makeRentalPriceStore, rowFromColumns } from "./rental-prices"
export { type CompiledPage, InvalidPlan } from "./page-sql"
export { makeTokenStore } from "./tokens"
export { makeRateLimitStore } from "./rate-limits"
export { makeSettingsStore } from "./settings"
export {
  compileHardwarePage, hardwareColumnsOf, hardwarePricesMigration, hardwareRowFromColumns,
  makeHardwarePriceStore
} from "./hardware-prices"
export {
  compileLlmPage, InvalidLlmPlan, llmColumnsOf, llmRowFromColumns, llmTokenPricesMigration, makeLlmTokenPriceStore
} from "./llm-token-prices"
export { compileTransactionPage, makeTransactionStore, transactionFromColumns, transactionsMigration } from "./transactions"
export { compileIndexPage, indexesMigration, indexValueFromColumns, makeIndexStore } from "./indexes"
export { compileResourcePage, makeProcurementStore, procurementMigration } from "./procurement"

/**
 * Opens the database for the life of the scope, migrates it to the current schema and builds
 * the stores. The connection closes when the scope does.
 */
export const make = (options: SqliteOptions): Effect.Effect<Stores, StorageError, Scope.Scope> =>
  Effect.gen(function* () {
    const client = yield* makeClient(options)
    yield* migrate(client)
    return {
      rentalStore: makeRentalPriceStore(client),
      tokenStore: makeTokenStore(client),
      rateLimitStore: makeRateLimitStore(client),
      settingsStore: makeSettingsStore(client),
      hardwarePriceStore: makeHardwarePriceStore(client),
      llmTokenPriceStore: makeLlmTokenPriceStore(client),
      transactionStore: makeTransactionStore(client),
      indexStore: makeIndexStore(client),
      procurementStore: makeProcurementStore(client)
    }
  })

/** Every store in the SQLite file `filename`, which the layer opens and closes. */
export const layer = (options: SqliteOptions): Layer.Layer<Storage, StorageError> =>
  Layer.scopedContext(Effect.map(make(options), storageContext))

/** The SQLite file `filename` as a market's storage: `createMarket({ storage: sqlite("market.db") })`. */
export const sqlite = (filename: string): Layer.Layer<Storage, StorageError> => layer({ filename })

/** `layer` with the file from `GPU_MARKET_DB`, `./data/market.db` by default. */
export const layerConfig: Layer.Layer<Storage, StorageError | ConfigError.ConfigError> = Layer.unwrapEffect(
  Effect.map(
    Config.string("GPU_MARKET_DB").pipe(Config.withDefault("./data/market.db")),
    (filename) => layer({ filename })
  )
)
