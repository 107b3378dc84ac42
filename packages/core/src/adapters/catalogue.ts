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
import { type EndpointName, type ReadEndpoint, readEndpoint, type ReadResult, type ServiceName } from "./reads.js"
import { HardwarePrices, hardwarePricesCollection, endpoints as hardwareEndpoints } from "../market/hardware-prices.js"
import { Indexes, indexesCollection, endpoints as indexEndpoints, LegacyCurrentParams } from "../market/indexes.js"
import { LlmTokenPrices, llmTokenPricesCollection, endpoints as llmEndpoints } from "../market/llm-token-prices.js"
import { RentalPrices, rentalPricesCollection, endpoints as rentalEndpoints } from "../market/rental-prices.js"
import { summaryHistoryParameters, summaryParameters } from "../market/rental-summaries.js"
import { RentalPriceSummaryPointRow, RentalPriceSummaryRow } from "../schema/rental-summary.js"
import { Transactions, transactionsCollection, endpoints as transactionEndpoints } from "../market/transactions.js"

/**
 * The read endpoints every adapter offers, by dotted name (`rental.prices.latest`), with what each
 * takes and answers and the service behind it. The Promise API and the worker build their
 * `market.rental.prices.latest(...)` surface over it with `buildReads`. Each entry's name, path
 * and paging are the browser-safe declaration's (`readEndpoints`, reads.ts), which the HTTP client
 * calls without loading the services; a test holds the catalogue to every endpoint declared there.
 */

type Paged = "latest" | "asOf" | "history"

/** One read endpoint: its dotted name, HTTP path, what it takes and answers, and the service method behind it. */
export interface CatalogueEntry extends ReadEndpoint {
  /** Its namespace and method (the service method `makeReadCalls` reaches by its name). */
  readonly service: ServiceName
  readonly method: Paged | "metadata" | "summary" | "summaryHistory" | "legacyCurrent" | "legacyAvailable"
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

const collectionEntries = <E extends { readonly [P in Paged]?: EndpointDef }>(
  collection: CollectionDef,
  endpoints: E,
  schemas: { readonly row: readonly [name: string, schema: Schema.Schema.AnyNoContext]; readonly metadata: readonly [name: string, schema: Schema.Schema.AnyNoContext] }
) => {
  const [rowName, row] = schemas.row
  const page = named(`${rowName}Page`, Envelope(named(rowName, row)))
  const { service } = collection
  return [
    ...(["latest", "asOf", "history"] as const).filter((method): method is keyof E & Paged => endpoints[method] !== undefined).map((method) => ({
      ...readEndpoint(`${service}.${method}`), service, method,
      collection, endpoint: endpoints[method]!, parameters: endpointParameters(collection, endpoints[method]!), response: page
    })),
    {
      ...readEndpoint(`${service}.metadata`), service, method: "metadata" as const,
      collection, parameters: [], response: named(...schemas.metadata)
    }
  ]
}

/** Every read endpoint, in the order of the HTTP API's docs. */
export const catalogue: ReadonlyArray<CatalogueEntry> = [
  ...collectionEntries(rentalPricesCollection, rentalEndpoints, {
    row: ["RentalPriceRow", RentalPriceRow], metadata: ["RentalPriceMetadata", RentalPriceMetadata]
  }),
  {
    ...readEndpoint("rental.prices.summary"), service: "rental.prices", method: "summary",
    parameters: summaryParameters(rentalPricesCollection),
    response: named("RentalPriceSummaryPage", Envelope(named("RentalPriceSummaryRow", RentalPriceSummaryRow)))
  },
  {
    ...readEndpoint("rental.prices.summaryHistory"), service: "rental.prices", method: "summaryHistory",
    parameters: summaryHistoryParameters(rentalPricesCollection),
    response: named("RentalPriceSummaryPointPage", Envelope(named("RentalPriceSummaryPointRow", RentalPriceSummaryPointRow)))
  },
  ...collectionEntries(hardwarePricesCollection, hardwareEndpoints, {
    row: ["HardwarePriceRow", HardwarePriceRow], metadata: ["HardwarePriceMetadata", HardwarePriceMetadata]
  }),
  ...collectionEntries(transactionsCollection, transactionEndpoints, {
    row: ["TransactionRow", TransactionRow], metadata: ["TransactionMetadata", TransactionMetadata]
  }),
  ...collectionEntries(indexesCollection, indexEndpoints, {
    row: ["IndexValueRow", IndexValueRow], metadata: ["IndexMetadata", IndexMetadata]
  }),
  ...collectionEntries(llmTokenPricesCollection, llmEndpoints, {
    row: ["LlmTokenPriceRow", LlmTokenPriceRow], metadata: ["LlmTokenPriceMetadata", LlmTokenPriceMetadata]
  }),
  {
    ...readEndpoint("indices.legacy.current"), service: "indices", method: "legacyCurrent",
    parameters: optionalParameters(LegacyCurrentParams.fields), response: named("LegacyCurrentIndexBody", LegacyCurrentIndexBody)
  },
  {
    ...readEndpoint("indices.legacy.available"), service: "indices", method: "legacyAvailable",
    parameters: [], response: named("LegacyAvailableIndexBody", LegacyAvailableIndexBody)
  }
]

/** One read as a market service answers it: the endpoint's typed result (`ReadResult`), its page's rows typed by its collection. */
export type ReadCall<N extends EndpointName = EndpointName> = (request: MarketRequest) => Effect.Effect<ReadResult<N>, MarketError>

/**
 * The service method behind each catalogue entry, over the market's services in context: every
 * adapter (HTTP routes, the Promise API, the worker) reaches a service through this one map. Each
 * method is held to what the Promise API says its endpoint answers (`MarketReads`).
 */
export const makeReadCalls = Effect.gen(function* () {
  const rental = yield* RentalPrices
  const hardware = yield* HardwarePrices
  const transactions = yield* Transactions
  const llm = yield* LlmTokenPrices
  const indices = yield* Indexes
  const calls: { readonly [N in EndpointName]: ReadCall<N> } = {
    "rental.prices.latest": rental.latest,
    "rental.prices.asOf": rental.asOf,
    "rental.prices.history": rental.history,
    "rental.prices.metadata": rental.metadata,
    "rental.prices.summary": rental.summary,
    "rental.prices.summaryHistory": rental.summaryHistory,
    "hardware.prices.latest": hardware.latest,
    "hardware.prices.asOf": hardware.asOf,
    "hardware.prices.history": hardware.history,
    "hardware.prices.metadata": hardware.metadata,
    "transactions.history": transactions.history,
    "transactions.metadata": transactions.metadata,
    "indices.latest": indices.latest,
    "indices.asOf": indices.asOf,
    "indices.history": indices.history,
    "indices.metadata": indices.metadata,
    "indices.legacy.current": indices.legacyCurrent,
    "indices.legacy.available": indices.legacyAvailable,
    "llm.tokenPrices.latest": llm.latest,
    "llm.tokenPrices.asOf": llm.asOf,
    "llm.tokenPrices.history": llm.history,
    "llm.tokenPrices.metadata": llm.metadata
  }
  return <N extends EndpointName>(entry: { readonly name: N }): ReadCall<N> => calls[entry.name]
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
