/**
 * @gpu-market/storage-sqlite: every gpu-market store in one SQLite file, through better-sqlite3.
 * WAL mode and IMMEDIATE write transactions let several processes share the file.
 */
import { type PortableMarketStorage, portableStorage, type Storage, type StorageError } from "@gpu-market/core"
import { storageContext, type Stores } from "@gpu-market/core/storage"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { rebuildHeldIndexes } from "./bulk-load.js"
import { makeClient, type SqliteOptions } from "./client.js"
import { purgeReplacedText } from "./hardware-terms.js"
import { integrityWatch } from "./integrity.js"
import { migrate } from "./migrations.js"
import { makeStores } from "./stores.js"

export type { SqliteOptions } from "./client.js"
export { checkIntegrity, INTEGRITY_PROBLEMS, type IntegrityReport } from "./integrity.js"

/**
 * Opens the database for the life of the scope, migrates it to the current schema and builds
 * the stores. The connection closes when the scope does. Serving indexes a bulk load held back
 * and never built again (its process was killed, or the disk was full) are built now, unless this
 * connection is a bulk load's own (`bulk`), which takes them over; should that fail for want of
 * room, it opens without them (a warning says so) and the next open tries again. A file migration
 * 10 rewrote to hardware terms is vacuumed first (`purgeReplacedText`). With
 * `integrityCheck`, the file's integrity is checked in the background (its `StoreReadiness` fails once corruption is found).
 */
export const make = (options: SqliteOptions): Effect.Effect<Stores, StorageError, Scope.Scope> =>
  Effect.gen(function* () {
    const client = yield* makeClient(options)
    yield* migrate(client)
    yield* purgeReplacedText(client)
    if (options.bulk !== true) yield* rebuildHeldIndexes(client)
    const stores = makeStores(client, options)
    return options.integrityCheck === true && client.filename !== ":memory:" && client.filename !== ""
      ? { ...stores, readiness: Effect.zipRight(stores.readiness ?? Effect.void, yield* integrityWatch(client)) }
      : stores
  })

/** Every store in the SQLite file `filename`, which the layer opens and closes. */
export const layer = (options: SqliteOptions): Layer.Layer<Storage, StorageError> =>
  Layer.scopedContext(Effect.map(make(options), storageContext))

/**
 * The SQLite file `filename` as a market's storage: `createMarket({ storage: sqlite("market.db") })`.
 * Portable: `createWorkerMarket({ storage: sqlite("market.db") })` opens the file in each worker.
 */
export const sqlite = (filename: string): PortableMarketStorage =>
  portableStorage(layer({ filename }), { module: import.meta.url, options: { filename } })

/** `layer` with the file from `GPU_MARKET_DB`, `./data/market.db` by default. */
export const layerConfig: Layer.Layer<Storage, StorageError | ConfigError.ConfigError> = Layer.unwrapEffect(
  Effect.map(
    Config.string("GPU_MARKET_DB").pipe(Config.withDefault("./data/market.db")),
    (filename) => layer({ filename })
  )
)
