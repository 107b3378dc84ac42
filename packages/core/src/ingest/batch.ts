import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import { InvalidRecords, type RecordIssue, type StorageUnavailable } from "../errors.js"
import { countNow, ingestRows } from "../metrics.js"
import { unavailable, unavailableWrite } from "../market/storage.js"
import { formatInstant, parseDateTime } from "../query/time.js"
import { MAX_ROWS_PER_WRITE, StorageError } from "../storage/contract.js"
import type { ProgressMark, ReadMark } from "../storage/marks.js"

/** The refusal of a whole batch, naming the first of its problems. */
export const invalidRecords = (errors: ReadonlyArray<RecordIssue>): InvalidRecords =>
  new InvalidRecords({
    detail: `${errors.length} problem(s); nothing was stored. First: record ${errors[0]!.index}: ${errors[0]!.message}`,
    errors
  })

/**
 * A write path's call counted in `gpu_market_ingest_rows_total` under `type`, as a pipeable of
 * `Effect.fn` (it gets the call's records): every record accepted when the call succeeds, the
 * records a refusal names rejected when it is refused. Storage trouble counts neither way.
 */
export const countedIngest = (type: string) =>
<A, E, R>(write: Effect.Effect<A, E, R>, records: ReadonlyArray<unknown>): Effect.Effect<A, E, R> =>
  Effect.tapBoth(write, {
    onSuccess: () => Effect.sync(() => countNow(ingestRows, { type, outcome: "accepted" }, records.length)),
    onFailure: (e) =>
      e instanceof InvalidRecords
        ? Effect.sync(() => countNow(ingestRows, { type, outcome: "rejected" }, new Set(e.errors.map((i) => i.index)).size))
        : Effect.void
  })

/** Refuses a batch with `issues` (in record order), if it has any. */
export const refuseIf = (issues: ReadonlyArray<RecordIssue>): Effect.Effect<void, InvalidRecords> =>
  issues.length > 0 ? Effect.fail(invalidRecords([...issues].sort((a, b) => a.index - b.index))) : Effect.void

/** One atomic write of a batch: its rows, and the progress mark written with them, if any. */
export interface MarkedChunk<A> {
  readonly rows: ReadonlyArray<A>
  readonly mark: ProgressMark | undefined
}

/**
 * A batch's chunks with the mark each writes: the last carries `mark`, and a batch of no rows
 * is one empty chunk carrying it, so the mark is written whatever the batch held.
 */
export const markedChunks = <A>(chunks: ReadonlyArray<ReadonlyArray<A>>, mark: ProgressMark | undefined): Array<MarkedChunk<A>> => {
  const all = chunks.length === 0 && mark !== undefined ? [[]] : chunks
  return all.map((rows, i) => ({ rows, mark: i === all.length - 1 ? mark : undefined }))
}

/** A store's progress marks as a write path offers them: storage trouble is `StorageUnavailable`. */
export const markReader = (read: ReadMark) => (name: string): Effect.Effect<Option.Option<string>, StorageUnavailable> =>
  Effect.mapError(read(name), unavailable)

/** A write's storage trouble as its caller sees it: `StorageUnavailable`, saying what sending it again does. */
export const writeFailure = <A, E, R>(write: Effect.Effect<A, E | StorageError, R>): Effect.Effect<A, Exclude<E, StorageError> | StorageUnavailable, R> =>
  Effect.catchIf(write, (e): e is StorageError => e instanceof StorageError, (e) => Effect.fail(unavailableWrite(e)))

/**
 * Decodes each record of a batch, in order. Every decode problem is an issue with the record's
 * index (an excess property reads "unknown field"); `onValid` sees each record that decodes and
 * may add issues of its own. Returns all the issues, in record order.
 */
export const decodeRecords = <A>(
  input: ReadonlyArray<unknown>,
  decode: (u: unknown) => Either.Either<A, ParseResult.ParseError>,
  onValid: (value: A, index: number, issues: Array<RecordIssue>) => void
): Array<RecordIssue> => {
  const issues: Array<RecordIssue> = []
  input.forEach((item, index) => {
    const d = decode(item)
    if (Either.isRight(d)) onValid(d.right, index, issues)
    else {
      for (const i of ParseResult.ArrayFormatter.formatErrorSync(d.left)) {
        issues.push({ index, message: `${i.path.join(".") || "record"}: ${i._tag === "Unexpected" ? "unknown field" : i.message}` })
      }
    }
  })
  return issues
}

/** Index values one storage write carries at most: a value is one small row with two index entries. */
export const INDEX_VALUES_PER_WRITE = 1_000

/** `items` in consecutive chunks of at most `size`. */
export const chunksOf = <A>(items: ReadonlyArray<A>, size = MAX_ROWS_PER_WRITE): Array<ReadonlyArray<A>> => {
  const out: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}

/** One valid observation of a versioned price: its batch index, instant and base key. */
export interface Timed<O> {
  readonly index: number
  readonly observation: O
  readonly at: string
  readonly base: string
}

// The instant last read: the observations of a snapshot share one `extracted_at`, which an import
// parsed and formatted again for each of a million rows.
let lastInstant: { readonly text: string; readonly instant: string | undefined } | undefined

/** The instant `extracted_at` names, as stored; or an issue of record `index`. */
export const instantOf = (extractedAt: string, index: number, issues: Array<RecordIssue>): string | undefined => {
  if (lastInstant?.text !== extractedAt) {
    const micros = parseDateTime(extractedAt)
    lastInstant = { text: extractedAt, instant: micros === undefined ? undefined : formatInstant(micros) }
  }
  if (lastInstant.instant === undefined) issues.push({ index, message: "extracted_at: expected an ISO 8601 datetime" })
  return lastInstant.instant
}

/**
 * Validates a batch of price observations, each stamped with `extracted_at`; every bad record
 * is reported with its index. `baseKey` names the priced thing an observation is of.
 */
export const decodeTimed = <O extends { readonly extracted_at: string }>(
  input: ReadonlyArray<unknown>,
  decode: (u: unknown) => Either.Either<O, ParseResult.ParseError>,
  baseKey: (o: O) => string
): Either.Either<ReadonlyArray<Timed<O>>, InvalidRecords> => {
  const out: Array<Timed<O>> = []
  const issues = decodeRecords(input, decode, (observation, index, issues) => {
    const at = instantOf(observation.extracted_at, index, issues)
    if (at !== undefined) out.push({ index, observation, at, base: baseKey(observation) })
  })
  return issues.length > 0 ? Either.left(invalidRecords(issues)) : Either.right(out)
}
