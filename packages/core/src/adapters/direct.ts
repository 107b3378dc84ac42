import * as Cause from "effect/Cause"
import type * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { randomUUID } from "node:crypto"
import type { SupplyProvider } from "../procurement/provider.js"
import { requestOrigin } from "../query/collection.js"
import { type Storage, StorageError } from "../storage/contract.js"
import { unavailable } from "../market/storage.js"
import { layer as memoryLayer } from "../storage/memory.js"
import { type CatalogueEntry, catalogue } from "./catalogue.js"
import { buildReads, type MarketReads, toQueryRecord, type Transport } from "./reads.js"
import type { EventsOptions, MarketFeed } from "./feed.js"
import type { ExportOptions, MarketExport, MarketExports } from "./export.js"
import { encodeExport, estimateExport, exportFormats } from "../export/formats.js"
import type { StorageUnavailable } from "../errors.js"
import { type FeedMessage, feedMessage } from "../feed/feed.js"
import * as Stream from "effect/Stream"
import { makeOperations, type Operations, OperationError, type WriteArgs, type WriteName, type WriteResult } from "./operations.js"
import { MarketProblemError, problemOf } from "./problem.js"
import { decodeMarketSettings, type MarketRuntime, marketRuntimeLayer, type MarketSettingsInput } from "./runtime.js"

const isOperationError = Schema.is(OperationError)

/**
 * The Promise API: the market for apps that do not use Effect. Every call takes the same path as
 * an HTTP request (token, rate limit, validation, entitlements, envelope) and resolves with the
 * same JSON the HTTP API answers, or rejects with a `MarketProblemError` carrying its problem.
 */

type Promised<F> = F extends (...args: infer A) => Effect.Effect<infer R, unknown, unknown> ? (...args: A) => Promise<R> : never
type Writes = Operations["writes"]

/** The token admin and write paths, shaped by dotted name: `tokens.create`, `ingest.rental`, … */
export type MarketWrites = {
  readonly [NS in WriteName extends `${infer H}.${string}` ? H : never]: {
    readonly [N in WriteName as N extends `${NS}.${infer M}` ? M : never]: Promised<Writes[N]>
  }
}

/** A market: the read API, exports, the change feed, token admin, write paths, and `close`. */
export type Market = MarketReads & MarketExports & MarketFeed & MarketWrites & {
  /** Releases the storage (closes the SQLite file, the Redis connection) or stops the workers. */
  readonly close: () => Promise<void>
}

/** What an adapter provides to build a `Market`: reads, writes and shutdown. */
export interface MarketTransport extends Transport<CatalogueEntry> {
  readonly write: <N extends WriteName>(name: N, args: WriteArgs<N>) => Promise<WriteResult<N>>
  /** Exports; a transport without them (the worker) rejects one. */
  readonly export?: (entry: CatalogueEntry, query: Record<string, string>, options: ExportOptions) => Promise<MarketExport>
  /** The change feed; a transport without one (the worker) rejects a subscription. */
  readonly events?: (query: Record<string, string>, options: EventsOptions) => AsyncIterable<FeedMessage>
  readonly close: () => Promise<void>
}

/** Builds the Promise surface over a transport; the direct API and the worker share it. */
export const buildMarket = (transport: MarketTransport): Market => {
  const write = <N extends WriteName>(name: N) => (...args: WriteArgs<N>) => transport.write(name, args)
  const writes: MarketWrites = {
    tokens: { create: write("tokens.create"), list: write("tokens.list"), revoke: write("tokens.revoke") },
    ingest: {
      rental: write("ingest.rental"), withdrawRental: write("ingest.withdrawRental"), hardware: write("ingest.hardware"),
      llm: write("ingest.llm"), withdrawLlm: write("ingest.withdrawLlm"), transactions: write("ingest.transactions"),
      indexDefinitions: write("ingest.indexDefinitions"), fleetWeights: write("ingest.fleetWeights"),
      indexValues: write("ingest.indexValues"), skypilot: write("ingest.skypilot"), litellm: write("ingest.litellm"),
      fxRates: write("ingest.fxRates"), gpus: write("ingest.gpus")
    }
  }
  const feed: MarketFeed = {
    events: (query, options = {}) => transport.events === undefined
      ? {
        [Symbol.asyncIterator]: () => ({
          next: () => Promise.reject(new Error("the change feed is not served through this transport; subscribe with createMarket or the HTTP API"))
        })
      }
      : transport.events(toQueryRecord(query), options)
  }
  const exports: MarketExports = {
    export: (name, query, options = {}) => {
      const entry = catalogue.find((e) => e.name === name && e.paged)
      if (entry === undefined) return Promise.reject(new TypeError(`${String(name)} is not a paged endpoint`))
      return transport.export === undefined
        ? Promise.reject(new Error("exports are not served through this transport; export with createMarket or the HTTP API"))
        : transport.export(entry, toQueryRecord(query), options)
    }
  }
  return Object.assign(buildReads(catalogue, transport), exports, feed, writes, { close: transport.close })
}

/** The problem a failure ends with: a typed error's own, or a 500 for a defect. */
export const toProblemError = (cause: Cause.Cause<unknown>): MarketProblemError => {
  const failure = Option.map(Cause.failureOption(cause), (e) => (e instanceof StorageError ? unavailable(e) : e))
  return Option.isSome(failure) && isOperationError(failure.value)
    ? new MarketProblemError(problemOf(failure.value, randomUUID()), { cause: failure.value })
    : new MarketProblemError(problemOf({ _tag: "InternalError" }, randomUUID()), { cause: Cause.squash(cause) })
}

/** Runs an operation to a Promise that rejects with a `MarketProblemError` (a 500 for what is not a market error). */
export const runOperation = <A, E, R>(
  runtime: ManagedRuntime.ManagedRuntime<R, unknown>,
  effect: Effect.Effect<A, E, R>
): Promise<A> =>
  runtime.runPromiseExit(effect).then((exit) => {
    if (Exit.isSuccess(exit)) return exit.value
    throw toProblemError(exit.cause)
  })

/**
 * Options of `createMarket`: the storage (and, for the procurement service over HTTP, a supply
 * provider) beside the market's settings (`MarketSettings`), which are decoded before anything
 * opens: one that cannot work rejects `createMarket` with the `ParseError` naming it.
 */
export interface MarketOptions extends MarketSettingsInput {
  /** The storage backend: `sqlite("market.db")`, `memory()`, `redis(url)`, or any `Layer<Storage>`. */
  readonly storage: Layer.Layer<Storage, StorageError>
  /**
   * The supply provider procurement sells through (`simulatedProviderLayer()`, or your own): with
   * one, a handler mounting this market serves `/supply` as the standalone server does.
   */
  readonly supply?: Layer.Layer<SupplyProvider, never, Storage>
}

/** A market opened in this process: the Promise API, and the Effect runtime its calls run in, which `nodeHandler` and `fetchHandler` serve. */
export type LocalMarket = Market & {
  /** The market's services over its storage; `close()` disposes it. */
  readonly runtime: MarketRuntime
}

/** The in-memory store: a fresh, empty market per `createMarket`; for tests and trials. */
export const memory = (): Layer.Layer<Storage> => memoryLayer

/**
 * Opens a market in this process. Resolves once storage is open and migrated; rejects with the
 * storage's error otherwise, and before opening anything with the `ParseError` of settings that
 * cannot work.
 *
 * @example
 * const market = await createMarket({ storage: sqlite("market.db") })
 * const page = await market.rental.prices.latest({ gpu_canonical_name: ["h100-sxm"] }, { token })
 */
export const createMarket = async ({ storage, supply, ...input }: MarketOptions): Promise<LocalMarket> => {
  const settings = decodeMarketSettings(input)
  const runtime: MarketRuntime = ManagedRuntime.make(marketRuntimeLayer(settings, supply === undefined ? { storage } : { storage, supply }))
  const origin = requestOrigin(settings.baseUrl ?? "http://localhost")
  const opened = await runtime.runPromiseExit(makeOperations)
  if (Exit.isFailure(opened)) {
    await runtime.dispose()
    throw toProblemError(opened.cause)
  }
  const operations = opened.value
  const market = buildMarket({
    call: (entry, query, { token }) => runOperation(runtime, operations.read(entry, query, token, origin)),
    next: (entry, next, { token }) => runOperation(runtime, operations.read(entry, next.query_params, token, origin)),
    write: (name, args) => runOperation(runtime, operations.write(name, args)),
    export: async (entry, query, { token }) => {
      const exported = await runOperation(runtime, operations.export(entry, query, token, origin))
      const rt = await runtime.runtime()
      const asProblems = <A>(stream: Stream.Stream<A, StorageUnavailable>) => Stream.mapError(stream, (e) => toProblemError(Cause.fail(e)))
      return {
        dataType: exported.dataType,
        watermark: exported.watermark,
        rows: () => Stream.toAsyncIterableRuntime(asProblems(exported.rows), rt),
        bytes: (format) => {
          if (!exportFormats.includes(format)) throw new TypeError(`format must be one of ${exportFormats.join(", ")}`)
          return Stream.toAsyncIterableRuntime(asProblems(encodeExport(format, exported)), rt)
        },
        estimate: () => runOperation(runtime, estimateExport(exported))
      }
    },
    events: (query, { token, lastEventId }) => (async function* (): AsyncGenerator<FeedMessage> {
      const items = await runOperation(runtime, operations.subscribe(query, token, lastEventId))
      const messages: Stream.Stream<FeedMessage> = Stream.filterMap(items, (item) => (item._tag === "idle" ? Option.none() : Option.some(feedMessage(item))))
      yield* Stream.toAsyncIterableRuntime(messages, await runtime.runtime())
    })(),
    close: () => runtime.dispose()
  })
  return Object.assign(market, { runtime })
}
