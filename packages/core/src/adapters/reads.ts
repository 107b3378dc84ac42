import type * as Types from "effect/Types"
import type { hardwarePricesCollection } from "../market/hardware-prices.js"
import type { indexesCollection } from "../market/indexes.js"
import type { llmTokenPricesCollection } from "../market/llm-token-prices.js"
import type { rentalPricesCollection } from "../market/rental-prices.js"
import type { transactionsCollection } from "../market/transactions.js"
import type { CollectionDef, DecodedParam, RequiredParamNames } from "../query/collection.js"
import type { Page } from "../schema/envelope.js"
import type { HardwarePriceMetadata } from "../schema/hardware-metadata.js"
import type { HardwarePrice } from "../schema/hardware-price.js"
import type { IndexMetadata, IndexValue, LegacyAvailableIndexBody, LegacyCurrentIndexBody } from "../schema/indexes.js"
import type { LlmTokenPriceMetadata } from "../schema/llm-metadata.js"
import type { LlmTokenPrice } from "../schema/llm-token-price.js"
import type { RentalPriceMetadata } from "../schema/rental-metadata.js"
import type { RentalPrice } from "../schema/rental-price.js"
import type { AggregatedTransaction, TransactionMetadata } from "../schema/transaction.js"

/**
 * The read API's shape without the market behind it: each read endpoint's dotted name, path and
 * whether it is paged, the query and answer types, and `buildReads` to make the namespaces over
 * any transport. It imports no Node module and no service, so an HTTP client in a browser bundle
 * builds on it (`@gpu-market/core/reads`); the catalogue adds each endpoint's schemas and service.
 */

/** One read endpoint as a caller sees it: its dotted name, HTTP path, and whether it is paged. */
export interface ReadEndpoint {
  readonly name: EndpointName
  readonly path: `/${string}`
  /** Answers with the paged envelope (and takes `page_token`). */
  readonly paged: boolean
}

/** Every read endpoint, in the order of the HTTP API's docs (the catalogue's order, which a test holds it to). */
export const readEndpoints: ReadonlyArray<ReadEndpoint> = [
  { name: "rental.prices.latest", path: "/v2/gpu/rental/prices/latest", paged: true },
  { name: "rental.prices.asOf", path: "/v2/gpu/rental/prices/as-of", paged: true },
  { name: "rental.prices.history", path: "/v2/gpu/rental/prices/history", paged: true },
  { name: "rental.prices.metadata", path: "/v2/gpu/rental/prices/metadata", paged: false },
  { name: "hardware.prices.latest", path: "/v2/gpu/hardware/prices/latest", paged: true },
  { name: "hardware.prices.asOf", path: "/v2/gpu/hardware/prices/as-of", paged: true },
  { name: "hardware.prices.history", path: "/v2/gpu/hardware/prices/history", paged: true },
  { name: "hardware.prices.metadata", path: "/v2/gpu/hardware/prices/metadata", paged: false },
  { name: "transactions.history", path: "/v2/gpu/rental/transactions/aggregated/history", paged: true },
  { name: "transactions.metadata", path: "/v2/gpu/rental/transactions/aggregated/metadata", paged: false },
  { name: "indices.latest", path: "/v2/gpu/rental/indexes/latest", paged: true },
  { name: "indices.asOf", path: "/v2/gpu/rental/indexes/as-of", paged: true },
  { name: "indices.history", path: "/v2/gpu/rental/indexes/history", paged: true },
  { name: "indices.metadata", path: "/v2/gpu/rental/indexes/metadata", paged: false },
  { name: "llm.tokenPrices.latest", path: "/v2/llm/token/prices/latest", paged: true },
  { name: "llm.tokenPrices.asOf", path: "/v2/llm/token/prices/as-of", paged: true },
  { name: "llm.tokenPrices.history", path: "/v2/llm/token/prices/history", paged: true },
  { name: "llm.tokenPrices.metadata", path: "/v2/llm/token/prices/metadata", paged: false },
  { name: "indices.legacy.current", path: "/v1/custom-index/current", paged: false },
  { name: "indices.legacy.available", path: "/v1/info-index/available", paged: false }
]

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
 * names, and each of its parameters (required where every request must name it). Types only:
 * the declarations' modules are not loaded by this one.
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
export interface Transport<E extends ReadEndpoint = ReadEndpoint> {
  readonly call: (entry: E, query: Record<string, string>, options: CallOptions) => Promise<unknown>
  /** Fetches the page `next` describes (by its page token, or its URL). */
  readonly next: (entry: E, next: NonNullable<Page<unknown>["meta"]["next"]>, options: CallOptions) => Promise<unknown>
}

/** Builds the typed read namespaces over a transport: one function per endpoint, by its dotted name. */
export const buildReads = <E extends ReadEndpoint>(endpoints: ReadonlyArray<E>, transport: Transport<E>): MarketReads => {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a tree built from the dotted names; MarketReads types it at the return
  const root: Record<string, any> = {}
  for (const entry of endpoints) {
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
