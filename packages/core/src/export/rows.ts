import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { DataType } from "../auth/principal.js"
import { StorageUnavailable } from "../errors.js"
import type { MarketError } from "../errors.js"
import { unavailable } from "../market/storage.js"
import { type PageRun, pageRows, planQuery, selectsNothing } from "../query/collection.js"
import type { StorageError } from "../storage/contract.js"
import type { PagePlan, Position } from "../storage/plan.js"

/**
 * An export: every row of a paged query, read from one state of the store, which the change
 * feed's event id at that state names (the watermark). The rows are those walking `meta.next`
 * of the same query returns while the store stays at that state, in that order, value for value.
 */

/** Rows an export reads from the store at a time, unless its `page_size` asks for another number. */
export const EXPORT_BATCH = 5_000

/** Requests an export counts as against the caller's rate limit (the request that asked for it included). */
export const EXPORT_REQUESTS = 10

/** Times an export tries to read a watermark that agrees with its type's data version before it gives up. */
const WATERMARK_TRIES = 5

/** What an export reads: a page run without the page cache, and the head of the change feed's log. */
export type ExportRun<Row> = Omit<PageRun<Row>, "cache" | "entitled"> & {
  /** The position after the newest event of the change feed's log (`EventLogStore.head`). */
  readonly head: Effect.Effect<string, StorageError>
}

/** The rows of one export and the state of the store they were read from. */
export interface RowExport<Row, E = StorageUnavailable> {
  readonly dataType: DataType
  /** The endpoint's path, e.g. `/v2/gpu/rental/prices/history`. */
  readonly endpointPath: string
  /**
   * The change feed's event id at the state the rows were read from: following the feed from it
   * (`Last-Event-ID`) delivers every later change of the type, and none the rows already hold.
   */
  readonly watermark: string
  /** What storage executes, without the keyset position: the request as decoded and checked. */
  readonly plan: Omit<PagePlan, "after" | "limit">
  /**
   * The rows, read a batch at a time. Should the type be written while they are read, the
   * stream fails with `StorageUnavailable` after the rows of the state it started from, so a
   * consumer never takes a mix of two states for one: run the export again.
   */
  readonly rows: Stream.Stream<Row, E>
}

const changed = (watermark: string) => new StorageUnavailable({
  detail: `the rows changed while they were exported at watermark ${watermark}; run the export again`
})

/**
 * The watermark of the state the type's version `version` names: the log's head read between two
 * reads of the version that agree. Every write changes a type's version in the atomic step that
 * logs its events, and a version once replaced never comes back, so no write of the type fell
 * between them, and the head names exactly the state the version does.
 */
const consistentStart = (run: Pick<ExportRun<never>, "version" | "head">): Effect.Effect<{ readonly version: string; readonly watermark: string }, StorageUnavailable> =>
  Effect.gen(function* () {
    const version = Effect.mapError(run.version, unavailable)
    for (let i = 0; i < WATERMARK_TRIES; i++) {
      const before = yield* version
      const watermark = yield* Effect.mapError(run.head, unavailable)
      if ((yield* version) === before) return { version: before, watermark }
    }
    return yield* Effect.fail(new StorageUnavailable({
      detail: `the rows are being written too often to find one state to export (${WATERMARK_TRIES} tries); run the export again`
    }))
  })

/**
 * Plans an export as `runPage` plans a page (the same decoding, entitlements, floors and windows;
 * a `page_token` exports from where it stands), reads its watermark, and streams its rows in
 * keyset batches. After each batch the type's version is read again: unchanged, the batch was
 * read from the export's state; changed, the stream fails (`RowExport.rows`).
 */
export const runExport = <Row extends Readonly<Record<string, unknown>>>(
  run: ExportRun<Row>
): Effect.Effect<RowExport<Row>, MarketError> =>
  Effect.gen(function* () {
    // The terms a search resolves to are read as page 1 of a walk reads them, before its rows.
    const { state, endpointPath, pageSize } = yield* planQuery(run, Effect.succeed(undefined))
    const size = pageSize ?? EXPORT_BATCH
    const start = yield* consistentStart(run)
    const plan = { scope: state.scope, predicates: state.predicates, sort: state.sort }
    const batch = (after: Position | undefined) =>
      Effect.gen(function* () {
        const rows = yield* Effect.mapError(run.page({ ...plan, after, limit: size + 1 }), unavailable)
        const now = yield* Effect.mapError(run.version, unavailable)
        if (now !== start.version) return yield* Effect.fail(changed(start.watermark))
        const { data, last } = pageRows(rows, size, plan.sort.by, run.collection.tieBreaker)
        return [Chunk.unsafeFromArray(data), Option.fromNullable(last)] as const
      })
    const rows = selectsNothing(plan.predicates)
      ? Stream.empty
      : Stream.paginateChunkEffect(state.after, batch)
    return { dataType: run.collection.dataType, endpointPath, watermark: start.watermark, plan, rows }
  })
