import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type { StorageUnavailable } from "../errors.js"
import { RateLimitStore, RentalPriceStore, SettingsStore, type Storage, type StorageError, TokenStore } from "./contract.js"
import { HardwarePriceStore } from "./hardware.js"
import { IndexStore } from "./indexes.js"
import { LlmTokenPriceStore } from "./llm-token-prices.js"
import { ProcurementStore } from "./procurement.js"
import { ReferenceDataStore } from "./reference.js"
import { TransactionStore } from "./transactions.js"
import { EventLogStore } from "./event-log.js"
import { StoreReadiness } from "./readiness.js"
import { StorePipelines } from "./pipelining.js"

/** Every store of the storage contract, as a backend builds them over one connection. */
export interface Stores {
  readonly rentalStore: RentalPriceStore["Type"]
  readonly tokenStore: TokenStore["Type"]
  readonly rateLimitStore: RateLimitStore["Type"]
  readonly settingsStore: SettingsStore["Type"]
  readonly hardwarePriceStore: HardwarePriceStore["Type"]
  readonly llmTokenPriceStore: LlmTokenPriceStore["Type"]
  readonly transactionStore: TransactionStore["Type"]
  readonly indexStore: IndexStore["Type"]
  readonly procurementStore: ProcurementStore["Type"]
  readonly referenceDataStore: ReferenceDataStore["Type"]
  readonly eventLogStore: EventLogStore["Type"]
  /** Whether its calls share round trips when started together (`StorePipelines`); default false. */
  readonly pipelines?: boolean
  /** The storage's `StoreReadiness`: whether it may take traffic, where it watches for a reason it may not. */
  readonly readiness?: Effect.Effect<void, StorageError | StorageUnavailable>
}

/** A backend's stores as the context its layer provides: `Layer.scopedContext(Effect.map(make(o), storageContext))`. */
export const storageContext = (s: Stores): Context.Context<Storage> =>
  Context.make(RentalPriceStore, s.rentalStore).pipe(
    Context.add(TokenStore, s.tokenStore),
    Context.add(RateLimitStore, s.rateLimitStore),
    Context.add(SettingsStore, s.settingsStore),
    Context.add(HardwarePriceStore, s.hardwarePriceStore),
    Context.add(LlmTokenPriceStore, s.llmTokenPriceStore),
    Context.add(TransactionStore, s.transactionStore),
    Context.add(IndexStore, s.indexStore),
    Context.add(ProcurementStore, s.procurementStore),
    Context.add(ReferenceDataStore, s.referenceDataStore),
    Context.add(EventLogStore, s.eventLogStore),
    (context) => s.readiness === undefined ? context : Context.add(context, StoreReadiness, s.readiness),
    Context.add(StorePipelines, s.pipelines === true)
  )

/**
 * How another thread opens the same storage: a module exporting `layer(options)` (an import
 * specifier, e.g. the backend's own `import.meta.url`) and those options, as cloneable data.
 */
export interface PortableStorage {
  readonly module: string
  readonly options: unknown
}

/**
 * A market's storage that another thread can open by itself: the layer, and how to open it there.
 * What `createWorkerMarket` takes; `sqlite(file)` and `redis(url)` return one. `memory()` is not
 * portable, since each thread would get a market of its own.
 */
export type PortableMarketStorage = Layer.Layer<Storage, StorageError> & { readonly portable: PortableStorage }

/** Marks `layer` as openable elsewhere through `portable`; backends' `sqlite(…)`/`redis(…)` use it. */
export const portableStorage = (layer: Layer.Layer<Storage, StorageError>, portable: PortableStorage): PortableMarketStorage =>
  Object.assign(layer, { portable })
