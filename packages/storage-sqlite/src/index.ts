/**
 * @gpu-market/storage-sqlite: every gpu-market store in one SQLite file, through better-sqlite3.
 * WAL mode and IMMEDIATE write transactions let several processes share the file.
 */
import {
  RateLimitStore, RentalPriceStore, SettingsStore, type Storage, type StorageError, TokenStore
} from "@gpu-market/core"
import { HardwarePriceStore, LlmTokenPriceStore } from "@gpu-market/core"
import { TransactionStore } from "@gpu-market/core"
import { IndexStore } from "@gpu-market/core"
import { Config, type ConfigError, Context, Effect, Layer, type Scope } from "effect"
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

/** The four stores over one connection. */
export interface SqliteStores {
  readonly rentalStore: RentalPriceStore["Type"]
  readonly tokenStore: TokenStore["Type"]
  readonly rateLimitStore: RateLimitStore["Type"]
  readonly settingsStore: SettingsStore["Type"]
  readonly hardwarePriceStore: HardwarePriceStore["Type"]
  readonly llmTokenPriceStore: LlmTokenPriceStore["Type"]
  readonly transactionStore: TransactionStore["Type"]
  readonly indexStore: IndexStore["Type"]
}

/**
 * Opens the database for the life of the scope, migrates it to the current schema and builds
 * the stores. The connection closes when the scope does.
 */
export const make = (options: SqliteOptions): Effect.Effect<SqliteStores, StorageError, Scope.Scope> =>
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
      indexStore: makeIndexStore(client)
    }
  })

/** Every store in the SQLite file `filename`, which the layer opens and closes. */
export const layer = (options: SqliteOptions): Layer.Layer<Storage, StorageError> =>
  Layer.scopedContext(
    Effect.map(make(options), (s) =>
      Context.make(RentalPriceStore, s.rentalStore).pipe(
        Context.add(TokenStore, s.tokenStore),
        Context.add(RateLimitStore, s.rateLimitStore),
        Context.add(SettingsStore, s.settingsStore),
        Context.add(HardwarePriceStore, s.hardwarePriceStore),
        Context.add(LlmTokenPriceStore, s.llmTokenPriceStore),
        Context.add(TransactionStore, s.transactionStore),
        Context.add(IndexStore, s.indexStore)
      ))
  )

/** `layer` with the file from `GPU_MARKET_DB`, `./data/market.db` by default. */
export const layerConfig: Layer.Layer<Storage, StorageError | ConfigError.ConfigError> = Layer.unwrapEffect(
  Effect.map(
    Config.string("GPU_MARKET_DB").pipe(Config.withDefault("./data/market.db")),
    (filename) => layer({ filename })
  )
)
