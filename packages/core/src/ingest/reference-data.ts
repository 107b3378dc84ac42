import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { GpuCatalogEntry, type GpuCatalog, makeGpuCatalog, SHIPPED_GPUS } from "../catalog/gpu-catalog.js"
import type { InvalidRecords, StorageUnavailable } from "../errors.js"
import { unavailable, unavailableWrite } from "../market/storage.js"
import { omittableNulls } from "../schema/fields.js"
import { FxRate } from "../schema/fx-rate.js"
import type { MarkedWrite, ProgressMark } from "../storage/marks.js"
import type { StorageError } from "../storage/errors.js"
import { ReferenceDataStore, ReferencePutSummary } from "../storage/reference.js"
import { chunksOf, countedIngest, decodeRecords, invalidRecords, markedChunks, markReader } from "./batch.js"
import { fxTable, type UsdPerUnit } from "./fx.js"

/**
 * Reference data as write paths use it: imported (FX rates, GPU catalog entries) and read once per
 * batch, so every process sharing the store converts and resolves with what was imported last.
 */

/** One FX rate as imported: `{ currency, date, usd_per_unit }`. */
export const FxRateRecord = Schema.Struct(FxRate.fields)
/** One GPU catalog entry as imported; `form_factor` may be left out. */
export const GpuCatalogRecord = Schema.Struct(omittableNulls(GpuCatalogEntry.fields))
export type GpuCatalogRecordInput = Schema.Schema.Encoded<typeof GpuCatalogRecord>

/** What one import of reference data did. */
export const ReferenceIngestSummary = Schema.Struct({ ...ReferencePutSummary.fields, received: Schema.Number })
export type ReferenceIngestSummary = typeof ReferenceIngestSummary.Type

const decodeFx = Schema.decodeUnknownEither(FxRateRecord, { errors: "all", onExcessProperty: "error" })
const decodeGpu = Schema.decodeUnknownEither(GpuCatalogRecord, { errors: "all", onExcessProperty: "error" })
const encodeGpu = Schema.encodeSync(Schema.Struct(GpuCatalogEntry.fields))
const decodeStoredGpu = Schema.decodeUnknownSync(GpuCatalogEntry)

/** Validates a batch whole, then writes it in chunks, each with its part of the summary. */
const putValidated = <A, B>(
  input: ReadonlyArray<unknown>,
  decode: (u: unknown) => Either.Either<A, ParseResult.ParseError>,
  encode: (a: A) => B,
  put: (rows: ReadonlyArray<B>, mark?: ProgressMark) => Effect.Effect<ReferencePutSummary, StorageError>,
  mark: ProgressMark | undefined
): Effect.Effect<ReferenceIngestSummary, InvalidRecords | StorageUnavailable> =>
  Effect.gen(function* () {
    const rows: Array<B> = []
    const issues = decodeRecords(input, decode, (a) => void rows.push(encode(a)))
    if (issues.length > 0) return yield* Effect.fail(invalidRecords(issues))
    let inserted = 0
    let replaced = 0
    for (const chunk of markedChunks(chunksOf(rows), mark)) {
      const done = yield* Effect.mapError(put(chunk.rows, chunk.mark), unavailableWrite)
      inserted += done.inserted
      replaced += done.replaced
    }
    return { received: input.length, inserted, replaced }
  })

/** The write path of reference data: FX rates and the operator's GPU catalog entries. */
export class ReferenceDataIngest extends Effect.Service<ReferenceDataIngest>()("Market/ReferenceDataIngest", {
  effect: Effect.gen(function* () {
    const store = yield* ReferenceDataStore
    return {
      /**
       * Stores FX rates (`FxRateRecord`): a rate of a stored currency and date replaces it.
       * Invalid records refuse the whole batch; `options.mark` is written with the last chunk.
       */
      fxRates: Effect.fn("ReferenceDataIngest.fxRates")((records: ReadonlyArray<unknown>, options: MarkedWrite = {}) =>
        putValidated(records, decodeFx, (r) => r, store.putFxRates, options.mark), countedIngest("fx")),
      /**
       * Stores GPU catalog entries (`GpuCatalogRecord`), added to the shipped catalog: an entry
       * with a stored or shipped slug replaces it, spellings included. Invalid records refuse the
       * whole batch; `options.mark` is written with the last chunk.
       */
      gpus: Effect.fn("ReferenceDataIngest.gpus")((records: ReadonlyArray<unknown>, options: MarkedWrite = {}) =>
        putValidated(records, decodeGpu, encodeGpu, store.putGpus, options.mark), countedIngest("gpus")),
      /** A progress mark written by `fxRates` or `gpus`. */
      mark: markReader(store.mark)
    } as const
  })
}) {}

/** What a write path reads of the reference data for one batch: the GPU catalog, and FX rates. */
export interface ReferenceReader {
  /** The shipped catalog with the operator's entries after it (one with a shipped slug replaces it). */
  readonly catalog: Effect.Effect<GpuCatalog, StorageUnavailable>
  /** USD per unit of every currency on every date of `needs`: only their rates are read. */
  readonly usdPerUnit: (needs: Iterable<{ readonly currency: string; readonly date: string }>) => Effect.Effect<UsdPerUnit, StorageUnavailable>
}

/** The reference data of `store` as write paths read it. */
export const referenceReader = (store: ReferenceDataStore["Type"]): ReferenceReader => ({
  catalog: Effect.mapError(
    Effect.map(store.gpus, (own) => makeGpuCatalog([...SHIPPED_GPUS, ...own.map((e) => decodeStoredGpu(e))])),
    unavailable
  ),
  usdPerUnit: (needs) => {
    const currencies = new Set<string>()
    let from: string | undefined
    let to: string | undefined
    for (const { currency, date } of needs) {
      if (currency === "USD") continue
      currencies.add(currency)
      if (from === undefined || date < from) from = date
      if (to === undefined || date > to) to = date
    }
    if (from === undefined || to === undefined) return Effect.succeed(fxTable([]))
    return Effect.mapBoth(store.fxRates([...currencies].sort(), from, to), { onFailure: unavailable, onSuccess: fxTable })
  }
})
