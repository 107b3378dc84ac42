import * as Effect from "effect/Effect"
import * as Record from "effect/Record"
import { type ExportRun, runExport } from "../export/rows.js"
import {
  type CollectionDef, endpointDecoder, type EndpointDef, type MarketRequest, type PageRun, runPage
} from "../query/collection.js"
import { nowMicros } from "./storage.js"

/**
 * Where a type's pages come from: its page tokens, the predicates it resolves itself, its store's
 * pages and data version, the market's page cache, and the head of the change feed's log (an
 * export's watermark).
 */
export type PageSource<Row> = Pick<PageRun<Row>, "tokens" | "resolve" | "page" | "version" | "cache"> & Pick<ExportRun<Row>, "head">

/**
 * The paged endpoints of one type, each endpoint's parameter decoder built once, here. Given where
 * the pages come from, it reads one page of an endpoint (`page`), or exports all of its rows
 * (`export`), at the clock's current time.
 */
export const pagedEndpoints = <K extends string>(collection: CollectionDef, endpoints: Record.ReadonlyRecord<K, EndpointDef>) => {
  const decoders = Record.map(endpoints, (endpoint) => endpointDecoder(collection, endpoint))
  return <Row extends Record.ReadonlyRecord<string, unknown>>(source: PageSource<Row>) => {
    const runOf = (endpoint: K, request: MarketRequest) =>
      Effect.map(nowMicros, (now) => ({ ...source, collection, endpoint: endpoints[endpoint], decode: decoders[endpoint], request, now }))
    return {
      page: (endpoint: K, request: MarketRequest) => Effect.flatMap(runOf(endpoint, request), runPage<Row>),
      export: (endpoint: K, request: MarketRequest) => Effect.flatMap(runOf(endpoint, request), runExport<Row>)
    }
  }
}
