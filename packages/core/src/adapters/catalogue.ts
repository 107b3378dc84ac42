import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { MarketError } from "../errors.js"
import type { RowExport } from "../export/rows.js"
import { Envelope } from "../schema/envelope.js"
import { HardwarePriceMetadata } from "../schema/hardware-metadata.js"
import { HardwarePriceRow } from "../schema/hardware-price.js"
import {
  IndexMetadata, IndexValueRow, LegacyAvailableIndexBody, LegacyCurrentIndexBody
} from "../schema/indexes.js"
import { LlmTokenPriceMetadata } from "../schema/llm-metadata.js"
import { LlmTokenPriceRow } from "../schema/llm-token-price.js"
import { RentalPriceMetadata } from "../schema/rental-metadata.js"
import { RentalPriceRow } from "../schema/rental-price.js"
import { TransactionMetadata, TransactionRow } from "../schema/transaction.js"
import {
  type CollectionDef, type EndpointDef, type EndpointParameter, endpointParameters, type MarketRequest, optionalParameters
} from "../query/collection.js"
import type { ReadEndpoint } from "./reads.js"
import { HardwarePrices, hardwarePricesCollection, endpoints as hardwareEndpoints } from "../market/hardware-prices.js"
import { Indexes, indexesCollection, endpoints as indexEndpoints, LegacyCurrentParams } from "../market/indexes.js"
import { LlmTokenPrices, llmTokenPricesCollection, endpoints as llmEndpoints } from "../market/llm-token-prices.js"
import { RentalPrices, rentalPricesCollection, endpoints as rentalEndpoints } from "../market/rental-prices.js"
import { Transactions, transactionsCollection, endpoints as transactionEndpoints } from "../market/transactions.js"

/**
 * The read endpoints every adapter offers, by dotted name (`rental.prices.latest`), with what each
 * takes and answers and the service behind it. The Promise API and the worker build their
 * `market.rental.prices.latest(...)` surface over it with `buildReads` (reads.ts, whose endpoint
 * list the HTTP client uses without loading the services; a test holds the two lists equal).
 */

type Paged = "latest" | "asOf" | "history"

/** One read endpoint: its dotted name, HTTP path, what it takes and answers, and the service method behind it. */
export interface CatalogueEntry extends ReadEndpoint {
  /** The service (by namespace) and method behind it. */
  readonly service: ServiceName
  readonly method: Paged | "metadata" | "legacyCurrent" | "legacyAvailable"
  /** The data type's collection; absent on the legacy endpoints. */
  readonly collection?: CollectionDef
  /** The paged endpoint's definition (sort, anchor, window); only on paged entries. */
  readonly endpoint?: EndpointDef
  /** The query parameters it accepts, besides a paged entry's `page_token`; any other is a 422. */
  readonly parameters: ReadonlyArray<EndpointParameter>
  /** Body of a 200, named by its `identifier` annotation (a paged entry's is the envelope of its rows). */
  readonly response: Schema.Schema.AnyNoContext
}

/** A schema under its name (`identifier`), so it is one shared definition wherever it appears. */
const named = <S extends Schema.Schema.AnyNoContext>(identifier: string, schema: S) => schema.annotations({ identifier })

const collectionEntries = <const S extends ServiceName, E extends { readonly [P in Paged]?: EndpointDef }>(
  service: S,
  collection: CollectionDef,
  endpoints: E,
  schemas: { readonly row: readonly [name: string, schema: Schema.Schema.AnyNoContext]; readonly metadata: readonly [name: string, schema: Schema.Schema.AnyNoContext] }
) => {
  const [rowName, row] = schemas.row
  const page = named(`${rowName}Page`, Envelope(named(rowName, row)))
  return [
    ...(["latest", "asOf", "history"] as const).filter((method): method is keyof E & Paged => endpoints[method] !== undefined).map((method) => ({
      name: `${service}.${method}` as const, path: `${collection.basePath}/${endpoints[method]!.name}` as const, paged: true, service, method,
      collection, endpoint: endpoints[method]!, parameters: endpointParameters(collection, endpoints[method]!), response: page
    })),
    {
      name: `${service}.metadata` as const, path: `${collection.basePath}/metadata` as const, paged: false, service, method: "metadata" as const,
      collection, parameters: [], response: named(...schemas.metadata)
    }
  ]
}

/** The namespaces of the data types, each answered by one market service. */
export type ServiceName = "rental.prices" | "hardware.prices" | "transactions" | "llm.tokenPrices" | "indices"

/** Every read endpoint, in the order of the HTTP API's docs. */
export const catalogue: ReadonlyArray<CatalogueEntry> = [
  ...collectionEntries("rental.prices", rentalPricesCollection, rentalEndpoints, {
    row: ["RentalPriceRow", RentalPriceRow], metadata: ["RentalPriceMetadata", RentalPriceMetadata]
  }),
  ...collectionEntries("hardware.prices", hardwarePricesCollection, hardwareEndpoints, {
    row: ["HardwarePriceRow", HardwarePriceRow], metadata: ["HardwarePriceMetadata", HardwarePriceMetadata]
  }),
  ...collectionEntries("transactions", transactionsCollection, transactionEndpoints, {
    row: ["TransactionRow", TransactionRow], metadata: ["TransactionMetadata", TransactionMetadata]
  }),
  ...collectionEntries("indices", indexesCollection, indexEndpoints, {
    row: ["IndexValueRow", IndexValueRow], metadata: ["IndexMetadata", IndexMetadata]
  }),
  ...collectionEntries("llm.tokenPrices", llmTokenPricesCollection, llmEndpoints, {
    row: ["LlmTokenPriceRow", LlmTokenPriceRow], metadata: ["LlmTokenPriceMetadata", LlmTokenPriceMetadata]
  }),
  {
    name: "indices.legacy.current", path: "/v1/custom-index/current", paged: false, service: "indices", method: "legacyCurrent",
    parameters: optionalParameters(LegacyCurrentParams.fields), response: named("LegacyCurrentIndexBody", LegacyCurrentIndexBody)
  },
  {
    name: "indices.legacy.available", path: "/v1/info-index/available", paged: false, service: "indices", method: "legacyAvailable",
    parameters: [], response: named("LegacyAvailableIndexBody", LegacyAvailableIndexBody)
  }
]

/** One read as a market service answers it. */
export type ReadCall = (request: MarketRequest) => Effect.Effect<unknown, MarketError>

/**
 * The service method behind each catalogue entry, over the market's services in context: every
 * adapter (HTTP routes, the Promise API, the worker) reaches a service through this one map.
 */
export const makeReadCalls = Effect.gen(function* () {
  const services: Record<ServiceName, Partial<Record<CatalogueEntry["method"], ReadCall>>> = {
    "rental.prices": yield* RentalPrices,
    "hardware.prices": yield* HardwarePrices,
    "transactions": yield* Transactions,
    "llm.tokenPrices": yield* LlmTokenPrices,
    "indices": yield* Indexes
  }
  return (entry: CatalogueEntry): ReadCall =>
    services[entry.service][entry.method] ?? (() => Effect.dieMessage(`${entry.service} has no ${entry.method}`))
})

/** One export as a market service answers it: every row of a paged endpoint's query, at a watermark. */
export type ExportCall = (request: MarketRequest) => Effect.Effect<RowExport<Readonly<Record<string, unknown>>>, MarketError>

/**
 * The export behind each paged catalogue entry, over the market's services in context (undefined
 * for an entry that is not paged): the one way every adapter exports.
 */
export const makeExportCalls = Effect.gen(function* () {
  const transactions = yield* Transactions
  const services: Record<ServiceName, (endpoint: Paged, request: MarketRequest) => ReturnType<ExportCall>> = {
    "rental.prices": (yield* RentalPrices).export,
    "hardware.prices": (yield* HardwarePrices).export,
    "transactions": (endpoint, request) =>
      endpoint === "history" ? transactions.export(endpoint, request) : Effect.dieMessage(`transactions have no ${endpoint}`),
    "llm.tokenPrices": (yield* LlmTokenPrices).export,
    "indices": (yield* Indexes).export
  }
  return (entry: CatalogueEntry): ExportCall | undefined => {
    const method = entry.method
    if (!entry.paged || (method !== "latest" && method !== "asOf" && method !== "history")) return undefined
    return (request) => services[entry.service](method, request)
  }
})
