import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Types from "effect/Types"
import type { MarketError } from "../errors.js"
import { Envelope, type Page } from "../schema/envelope.js"
import { HardwarePriceMetadata } from "../schema/hardware-metadata.js"
import { type HardwarePrice, HardwarePriceRow } from "../schema/hardware-price.js"
import {
  IndexMetadata, type IndexValue, IndexValueRow, LegacyAvailableIndexBody, LegacyCurrentIndexBody
} from "../schema/indexes.js"
import { LlmTokenPriceMetadata } from "../schema/llm-metadata.js"
import { type LlmTokenPrice, LlmTokenPriceRow } from "../schema/llm-token-price.js"
import { RentalPriceMetadata } from "../schema/rental-metadata.js"
import { type RentalPrice, RentalPriceRow } from "../schema/rental-price.js"
import { type AggregatedTransaction, TransactionMetadata, TransactionRow } from "../schema/transaction.js"
import {
  type CollectionDef, type DecodedParam, type EndpointDef, type EndpointParameter, endpointParameters, type MarketRequest,
  optionalParameters, type RequiredParamNames
} from "../query/collection.js"
import { HardwarePrices, hardwarePricesCollection, endpoints as hardwareEndpoints } from "../market/hardware-prices.js"
import { Indexes, indexesCollection, endpoints as indexEndpoints, LegacyCurrentParams } from "../market/indexes.js"
import { LlmTokenPrices, llmTokenPricesCollection, endpoints as llmEndpoints } from "../market/llm-token-prices.js"
import { RentalPrices, rentalPricesCollection, endpoints as rentalEndpoints } from "../market/rental-prices.js"
import { Transactions, transactionsCollection, endpoints as transactionEndpoints } from "../market/transactions.js"

/**
 * The read endpoints every adapter offers, by dotted name (`rental.prices.latest`), and the typed
 * namespaces built from them. The Promise API, the worker and the HTTP client all build their
 * `market.rental.prices.latest(...)` surface here, so the list is written once.
 */

type Paged = "latest" | "asOf" | "history"

/** One read endpoint: its dotted name, HTTP path, what it takes and answers, and the service method behind it. */
export interface CatalogueEntry {
  readonly name: EndpointName
  readonly path: `/${string}`
  /** Answers with the paged envelope (and takes `page_token`). */
  readonly paged: boolean
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

/** How a call authenticates: the token's secret, exactly as an HTTP caller sends it after `Bearer`. */
export interface CallOptions {
  readonly token?: string
}

/** A comma list: one value, or several. */
type List = string | ReadonlyArray<string>
/** A number parameter: a number, or its decimal text. */
type Num = number | string
/** An instant: a `Date`, or the text the HTTP API takes (a date or an ISO 8601 datetime). */
type Instant = string | Date

interface Paging<Sort extends string> {
  readonly page_size?: number
  readonly sort_by?: Sort
  readonly sort_order?: "asc" | "desc"
  /** From `meta.next.query_params`; only `page_size` may be given beside it. */
  readonly page_token?: string
}
interface Window { readonly start?: Instant; readonly end?: Instant }
interface At { readonly at: Instant }

/** A parameter as the Promise API takes it: a list as one value or several, a number as itself or its text. */
type QueryValue<A> = A extends ReadonlyArray<string> ? List : A extends number ? Num : A

/**
 * The Promise API's query of a collection, derived from its declaration: paging and its sort
 * names, and each of its parameters (required where every request must name it).
 */
export type CollectionQuery<C> = C extends CollectionDef<infer P, infer Sort, string> ? Types.Simplify<
  & Paging<Sort>
  & { readonly [K in Exclude<keyof P, RequiredParamNames<P>>]?: QueryValue<DecodedParam<P[K]>> }
  & { readonly [K in RequiredParamNames<P>]: QueryValue<DecodedParam<P[K]>> }
> : never

/** Query of the rental price endpoints. */
export type RentalPriceQuery = CollectionQuery<typeof rentalPricesCollection>

/** Query of the hardware price endpoints. */
export type HardwarePriceQuery = CollectionQuery<typeof hardwarePricesCollection>

/** Query of the aggregated transaction endpoints (`/history` only, so with its window). */
export type TransactionQuery = Types.Simplify<CollectionQuery<typeof transactionsCollection> & Window>

/** Query of the LLM token price endpoints. */
export type LlmTokenPriceQuery = CollectionQuery<typeof llmTokenPricesCollection>

/** Query of the index endpoints: one index per request. */
export type IndexQuery = CollectionQuery<typeof indexesCollection>

/* eslint-disable @typescript-eslint/no-empty-object-type -- here `{}` is the query with no parameters,
   and `{} extends Q` asks whether every parameter of Q is optional. */

/** A call answered by one body. */
export type Call<Q, A> = {} extends Q
  ? (query?: Q, options?: CallOptions) => Promise<A>
  : (query: Q, options?: CallOptions) => Promise<A>

/** A paged call: one page, or every page (`pages`) or row (`rows`) by following `meta.next`. */
export type PagedCall<Q, Row> = Call<Q, Page<Row>> & {
  readonly pages: (query: Q, options?: CallOptions) => AsyncIterable<Page<Row>>
  readonly rows: (query: Q, options?: CallOptions) => AsyncIterable<Row>
}

/** `latest`, `asOf`, `history` and `metadata` of one data type. */
export interface Collection<Q, Row, Metadata> {
  readonly latest: PagedCall<Q, Row>
  readonly asOf: PagedCall<Q & At, Row>
  readonly history: PagedCall<Q & Window, Row>
  readonly metadata: Call<{}, Metadata>
}

/** The read API, shaped like the HTTP API's paths. */
export interface MarketReads {
  readonly rental: { readonly prices: Collection<RentalPriceQuery, RentalPrice, RentalPriceMetadata> }
  readonly hardware: { readonly prices: Collection<HardwarePriceQuery, HardwarePrice, HardwarePriceMetadata> }
  readonly transactions: {
    readonly history: PagedCall<TransactionQuery, AggregatedTransaction>
    readonly metadata: Call<{}, TransactionMetadata>
  }
  readonly llm: { readonly tokenPrices: Collection<LlmTokenPriceQuery, LlmTokenPrice, LlmTokenPriceMetadata> }
  readonly indices: Collection<IndexQuery, IndexValue, IndexMetadata> & {
    readonly legacy: {
      readonly current: Call<{ readonly index_id?: string }, LegacyCurrentIndexBody>
      readonly available: Call<{}, LegacyAvailableIndexBody>
    }
  }
}
/* eslint-enable @typescript-eslint/no-empty-object-type */

/** Dotted name of a read endpoint: `rental.prices.latest`, `indices.legacy.current`, … */
export type EndpointName = Leaves<MarketReads>
type Leaves<T, P extends string = ""> = {
  [K in keyof T & string]: T[K] extends (...args: never) => unknown ? `${P}${K}` : Leaves<T[K], `${P}${K}.`>
}[keyof T & string]

/** A query as the HTTP layer gets it: lists joined with commas, numbers, flags and instants as text. */
export const toQueryRecord = (query: object | undefined): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(query ?? {})) {
    if (v === undefined) continue
    out[k] = Array.isArray(v) ? v.join(",") : v instanceof Date ? v.toISOString() : String(v)
  }
  return out
}

/** What an adapter provides to build the namespaces: one call, and how to fetch a next page. */
export interface Transport {
  readonly call: (entry: CatalogueEntry, query: Record<string, string>, options: CallOptions) => Promise<unknown>
  /** Fetches the page `next` describes (by its page token, or its URL). */
  readonly next: (entry: CatalogueEntry, next: NonNullable<Page<unknown>["meta"]["next"]>, options: CallOptions) => Promise<unknown>
}

/** Builds the typed read namespaces over a transport. */
export const buildReads = (transport: Transport): MarketReads => {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a tree built from the dotted names; MarketReads types it at the return
  const root: Record<string, any> = {}
  for (const entry of catalogue) {
    const call = (query?: object, options: CallOptions = {}) => transport.call(entry, toQueryRecord(query), options)
    if (entry.paged) {
      const pages = async function* (query: object, options: CallOptions = {}) {
        let page = (await call(query, options)) as Page<unknown>
        yield page
        while (page.meta.next !== null) {
          page = (await transport.next(entry, page.meta.next, options)) as Page<unknown>
          yield page
        }
      }
      Object.assign(call, {
        pages,
        rows: async function* (query: object, options?: CallOptions) {
          for await (const page of pages(query, options)) yield* page.data
        }
      })
    }
    const path = entry.name.split(".")
    let node = root
    for (const key of path.slice(0, -1)) node = node[key] ??= {}
    node[path[path.length - 1]!] = call
  }
  return root as MarketReads
}
