import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { InvalidRecords, type RecordIssue, type StorageUnavailable } from "../errors.js"
import { formatInstant, parseDateTime } from "../query/time.js"
import { MAX_ROWS_PER_WRITE } from "../storage/contract.js"
import type { StorageError } from "../storage/errors.js"
import { type ProgressMark, withMark } from "../storage/marks.js"
import type {
  Decision, TransactVersions, VersionChanges, VersionKeys, Versioned, VersionPoint, VersionView
} from "../storage/versions.js"
import { chunksOf, invalidRecords, type MarkedChunk, markedChunks, type Timed, writeFailure } from "./batch.js"

/** How one versioned price type keys, compares and opens its rows. */
export interface VersionRules<O, Row> extends VersionKeys<Row> {
  readonly samePrice: (row: Row, o: O) => boolean
  /** The row an observation opens at `at`. */
  readonly open: (o: O, at: string, base: string) => Row
}

/** What one ingest of versioned prices did. */
export interface IngestSummary {
  readonly received: number
  readonly opened: number
  readonly closed: number
  readonly unchanged: number
}

/** A plan: the change to write, and what it does. */
export interface VersionPlan<Row> {
  readonly changes: VersionChanges<Row>
  readonly summary: IngestSummary
}

/**
 * Turns validated observations into a change against the rows a step read. Observations of one
 * priced thing apply in time order; an unchanged price touches nothing; a changed one closes
 * the current row at the observation's time and opens a new one. An observation not after the
 * current row, or before the end of a withdrawn priced thing's last version, is already stored
 * when the version in force at its instant has its price, and is unchanged: sending a batch
 * again is a no-op. Otherwise it cannot be placed (history is never rewritten) and refuses the
 * batch. An observation of a withdrawn priced thing from the end of its last version on lists it
 * again.
 */
export const planVersions = <O, Row extends Versioned>(
  decoded: ReadonlyArray<Timed<O>>,
  view: VersionView<Row>,
  rules: VersionRules<O, Row>
): Either.Either<VersionPlan<Row>, InvalidRecords> => {
  const live = new Map<string, Row>(view.current.map((r) => [rules.base(r), r]))
  const ended = new Map<string, Row>(view.withdrawn.map((r) => [rules.base(r), r]))
  const stored = new Set(view.current.map(rules.key))
  const opened = new Map<string, Row>()
  const close: Array<{ key: string; valid_to: string }> = []
  const issues: Array<RecordIssue> = []
  let unchanged = 0
  let closed = 0
  const ordered = [...decoded].sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.index - b.index))
  for (const { index, observation: o, at, base } of ordered) {
    const now = live.get(base)
    if (now !== undefined && rules.samePrice(now, o)) {
      unchanged++
      continue
    }
    const last = now === undefined ? ended.get(base) : undefined
    if ((now !== undefined && at <= now.valid_from) || (last !== undefined && at < last.valid_to!)) {
      const then = view.inForce(base, at)
      if (then !== undefined && rules.samePrice(then, o)) {
        unchanged++
        continue
      }
      issues.push({
        index,
        message: now !== undefined
          ? `extracted_at ${at} is not after the price in force since ${now.valid_from}`
          : `extracted_at ${at} is before the withdrawal at ${last!.valid_to}`
      })
      continue
    }
    if (now !== undefined) {
      closed++
      if (stored.has(rules.key(now))) close.push({ key: rules.key(now), valid_to: at })
      else opened.set(rules.key(now), { ...now, valid_to: at })
    }
    const row = rules.open(o, at, base)
    opened.set(rules.key(row), row)
    live.set(base, row)
  }
  if (issues.length > 0) return Either.left(invalidRecords(issues.sort((a, b) => a.index - b.index)))
  return Either.right({
    changes: { close, open: [...opened.values()] },
    summary: { received: decoded.length, opened: opened.size, closed, unchanged }
  })
}

/**
 * Observations in chunks of whole priced things, each writing at most about `rows` rows (an
 * observation opens at most one row, and a priced thing closes at most one stored row): every
 * chunk keeps the rule of one current row per priced thing on its own, so a reader never sees a
 * priced thing with two current rows or none. One priced thing observed more often than that
 * is a chunk of its own.
 */
export const chunkObservations = <O>(
  decoded: ReadonlyArray<Timed<O>>,
  rows = MAX_ROWS_PER_WRITE
): Array<ReadonlyArray<Timed<O>>> => {
  const byBase = new Map<string, Array<Timed<O>>>()
  for (const d of decoded) {
    const group = byBase.get(d.base)
    if (group === undefined) byBase.set(d.base, [d])
    else group.push(d)
  }
  const chunks: Array<ReadonlyArray<Timed<O>>> = []
  let chunk: Array<Timed<O>> = []
  let size = 0
  for (const group of byBase.values()) {
    if (size > 0 && size + group.length + 1 > rows) {
      chunks.push(chunk)
      chunk = []
      size = 0
    }
    chunk.push(...group)
    size += group.length + 1
  }
  if (chunk.length > 0) chunks.push(chunk)
  return chunks
}

/** Priced things one read-only check of a large batch reads at once. */
const POINTS_PER_CHECK = 20 * MAX_ROWS_PER_WRITE

const NO_CHANGES: VersionChanges<never> = { close: [], open: [] }

const pointsOf = <O>(chunk: ReadonlyArray<Timed<O>>): Array<VersionPoint> => chunk.map(({ base, at }) => ({ base, at }))

const sumSummaries = (a: IngestSummary, b: IngestSummary): IngestSummary => ({
  received: a.received + b.received,
  opened: a.opened + b.opened,
  closed: a.closed + b.closed,
  unchanged: a.unchanged + b.unchanged
})

/**
 * Plans a large batch against the store as it stands, in read-only steps, before anything is
 * written: the batch is refused whole, with every problem, or its planned changes are returned.
 */
const checkWhole = <O, Row extends Versioned>(
  transact: TransactVersions<Row>,
  decoded: ReadonlyArray<Timed<O>>,
  rules: VersionRules<O, Row>
): Effect.Effect<VersionChanges<Row>, InvalidRecords | StorageError> =>
  Effect.flatMap(
    Effect.forEach(chunkObservations(decoded, POINTS_PER_CHECK), (chunk) =>
      transact(pointsOf(chunk), (view) =>
        Either.right({ changes: NO_CHANGES, result: planVersions(chunk, view, rules) }))),
    (plans) => {
      const issues = plans.flatMap((p) => (Either.isLeft(p) ? p.left.errors : []))
      if (issues.length > 0) return Effect.fail(invalidRecords(issues.sort((a, b) => a.index - b.index)))
      const changes = plans.flatMap((p) => (Either.isRight(p) ? [p.right.changes] : []))
      return Effect.succeed({ close: changes.flatMap((c) => c.close), open: changes.flatMap((c) => c.open) })
    }
  )

/**
 * Writes a batch of observations of a versioned price type. Each chunk of whole priced things
 * (`chunkObservations`) is planned and written in one `transact`, on the rows as they stand
 * inside it, so a concurrent writer can never make it lose an update. A batch of one chunk is
 * refused or written whole. A larger one is first planned in read-only steps, so a batch with
 * an observation that cannot be placed is refused before anything is written; then each chunk
 * is written whole or not at all, and a failure part-way leaves earlier chunks stored: sending
 * the batch again completes it, as observations already stored are no-ops.
 *
 * `finish` sees the change of the whole batch, as planned before writing, and returns how to
 * complete each opened row (flagging outliers, say); it makes even a one-chunk batch plan first.
 * `mark` is written by the last chunk's step, with its rows, even when nothing changed.
 * `rowsPerWrite` is the store's bound on one write, when it allows more than `MAX_ROWS_PER_WRITE`.
 * Returns what the batch did and the rows it opened, as written.
 */
export const writeVersions = <O, Row extends Versioned, E = never>(
  transact: TransactVersions<Row>,
  decoded: ReadonlyArray<Timed<O>>,
  rules: VersionRules<O, Row>,
  options: {
    readonly finish?: (changes: VersionChanges<Row>) => Effect.Effect<(row: Row) => Row, E | StorageError>
    readonly mark?: ProgressMark | undefined
    /** Rows one `transact` may write (`chunkObservations`); default `MAX_ROWS_PER_WRITE`. */
    readonly rowsPerWrite?: number | undefined
  } = {}
): Effect.Effect<VersionWrite<Row>, InvalidRecords | Exclude<E, StorageError> | StorageUnavailable> => {
  const { finish, mark } = options
  const chunks = markedChunks(chunkObservations(decoded, options.rowsPerWrite), mark)
  const writeChunk = (complete: (row: Row) => Row) => ({ rows, mark }: MarkedChunk<Timed<O>>) =>
    transact(pointsOf(rows), (view: VersionView<Row>) =>
      Either.map(planVersions(rows, view, rules), ({ changes, summary }): Decision<VersionChanges<Row>, VersionWrite<Row>> => {
        const open = changes.open.map(complete)
        return { changes: { close: changes.close, open, ...withMark(mark) }, result: { summary, opened: open } }
      }))
  const writeAll = (complete: (row: Row) => Row) =>
    Effect.suspend(() => {
      const opened: Array<Row> = []
      const empty: IngestSummary = { received: 0, opened: 0, closed: 0, unchanged: 0 }
      return Effect.map(
        Effect.reduce(chunks, empty, (total, chunk, i) =>
          Effect.map(
            Effect.mapError(writeChunk(complete)(chunk), (e) => (i > 0 && e instanceof InvalidRecords ? partlyStored(e) : e)),
            (w) => {
              for (const row of w.opened) opened.push(row)
              return sumSummaries(total, w.summary)
            }
          )),
        (summary): VersionWrite<Row> => ({ summary, opened })
      )
    })
  const planned = chunks.length <= 1 && finish === undefined
    ? writeAll((row) => row)
    : Effect.flatMap(checkWhole(transact, decoded, rules), (changes) =>
      Effect.flatMap(finish === undefined ? Effect.succeed((row: Row) => row) : finish(changes), writeAll))
  return writeFailure(planned)
}

/** What one write of versioned observations did, and the rows it opened as written. */
export interface VersionWrite<Row> {
  readonly summary: IngestSummary
  readonly opened: ReadonlyArray<Row>
}

/**
 * A refusal of a later chunk, after earlier ones were written: another writer moved a priced
 * thing between the batch's check and its write. Says so, instead of "nothing was stored".
 */
const partlyStored = (e: InvalidRecords): InvalidRecords =>
  new InvalidRecords({
    detail: `${e.errors.length} problem(s); the chunks before this one were stored. First: record ${e.errors[0]!.index}: ${e.errors[0]!.message}`,
    errors: e.errors
  })

/**
 * Closes the current rows of the priced things `bases` name at `at` (a withdrawal), in chunks
 * of whole priced things: unknown keys are ignored, and an instant not after a row's start
 * refuses the whole withdrawal before anything closes. `mark` is written with the last chunk.
 * Returns how many rows closed.
 */
export const withdrawVersions = <Row extends Versioned>(
  transact: TransactVersions<Row>,
  bases: ReadonlyArray<string>,
  at: string,
  keys: VersionKeys<Row>,
  mark?: ProgressMark
): Effect.Effect<number, InvalidRecords | StorageUnavailable> => {
  const micros = parseDateTime(at)
  if (micros === undefined) return Effect.fail(invalidRecords([{ index: 0, message: "at: expected an ISO 8601 datetime" }]))
  const valid_to = formatInstant(micros)
  const points = [...new Set(bases)].map((base) => ({ base, at: valid_to }))
  const late = (current: ReadonlyArray<Row>) => current.find((r) => r.valid_from >= valid_to)
  const refusal = (row: Row) => invalidRecords([{ index: 0, message: `at is not after the price in force since ${row.valid_from}` }])
  const close = ({ rows, mark }: MarkedChunk<VersionPoint>) =>
    transact(rows, ({ current }) => {
      const row = late(current)
      if (row !== undefined) return Either.left(refusal(row))
      const changes = { close: current.map((r) => ({ key: keys.key(r), valid_to })), open: [], ...withMark(mark) }
      return Either.right({ changes, result: current.length })
    })
  const chunks = markedChunks(chunksOf(points), mark)
  const check = chunks.length <= 1
    ? Effect.void
    : Effect.forEach(chunksOf(points, POINTS_PER_CHECK), (chunk) =>
      transact(chunk, ({ current }) => {
        const row = late(current)
        return row === undefined ? Either.right({ changes: NO_CHANGES, result: undefined }) : Either.left(refusal(row))
      }), { discard: true })
  const closed = Effect.zipRight(check, Effect.reduce(chunks, 0, (n, chunk) => Effect.map(close(chunk), (m) => n + m)))
  return writeFailure(closed)
}
