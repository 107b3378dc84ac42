import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
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
 * `effect` in a span named `name` when tracing is on. Off (the standalone server, the handlers),
 * no span is made: even a no-op span is provided to the effect as a service, which copies the
 * whole context of the market, and on a page the cache answers that, with `Effect.fn`'s two stack
 * traces per call, cost more than the rest of the read.
 */
export const spanned = <A, E, R>(name: string, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(FiberRef.get(FiberRef.currentTracerEnabled), (tracing) =>
    tracing ? Effect.withSpan(effect, name, { captureStackTrace: false }) : effect)

/**
 * The paged endpoints of one type, each endpoint's parameter decoder built once, here. Given where
 * the pages come from, it reads one page of an endpoint (`page`), or exports all of its rows
 * (`export`), at the clock's current time, in a span named after the service and the endpoint
 * (`RentalPrices.latest`, `RentalPrices.export`) (`spanned`).
 */
export const pagedEndpoints = <K extends string>(collection: CollectionDef, endpoints: Record.ReadonlyRecord<K, EndpointDef>, service: string) => {
  const decoders = Record.map(endpoints, (endpoint) => endpointDecoder(collection, endpoint))
  const spans = Record.map(endpoints, (_, name) => `${service}.${name}`)
  return <Row extends Record.ReadonlyRecord<string, unknown>>(source: PageSource<Row>) => {
    const runOf = (endpoint: K, request: MarketRequest) =>
      Effect.map(nowMicros, (now) => ({ ...source, collection, endpoint: endpoints[endpoint], decode: decoders[endpoint], request, now }))
    return {
      page: (endpoint: K, request: MarketRequest) => spanned(spans[endpoint], Effect.flatMap(runOf(endpoint, request), runPage<Row>)),
      export: (endpoint: K, request: MarketRequest) => spanned(`${service}.export`, Effect.flatMap(runOf(endpoint, request), runExport<Row>))
    }
  }
}
