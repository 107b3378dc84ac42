import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { InvalidRecords, type RecordIssue, type StorageUnavailable } from "../errors.js"
import { formatInstant, parseDateTime } from "../query/time.js"
import { MAX_ROWS_PER_WRITE } from "../storage/contract.js"
import type { StorageError } from "../storage/errors.js"
import { type ProgressMark, withMark } from "../storage/marks.js"
import type {
  Decision, PeerRead, TransactVersions, VersionChanges, VersionKeys, Versioned, VersionPoint, VersionView
} from "../storage/versions.js"
import { chunksOf, invalidRecords, type MarkedChunk, markedChunks, type Timed, writeFailure } from "./batch.js"

/** How one versioned price type keys, compares, opens and names its rows. */
export interface VersionRules<O, Row> extends VersionKeys<Row> {
  readonly samePrice: (row: Row, o: O) => boolean
  /** The row an observation opens at `at`; its key names the observation's price at that instant. */
  readonly open: (o: O, at: string, base: string) => Row
  /** A row's price as a refusal quotes it. */
  readonly price: (row: Row) => string
}

/** What one ingest of versioned prices did. */
export const IngestSummary = Schema.Struct({
  received: Schema.Number,
  opened: Schema.Number,
  closed: Schema.Number,
  /** Observations of a price already in force: nothing to write. */
  unchanged: Schema.Number,
  /**
   * Observations of a priced thing at an instant already observed, with the same price: a
   * repeat in the batch, or of a stored row (a batch sent again). Nothing to write.
   */
  duplicates: Schema.Number
})
export type IngestSummary = typeof IngestSummary.Type

/** A plan: the change to write, and what it does. */
export interface VersionPlan<Row> {
  readonly changes: VersionChanges<Row>
  readonly summary: IngestSummary
}

/** `records 3 and 7`, `records 3, 5 and 7`. */
const recordList = (indexes: ReadonlyArray<number>): string =>
  `records ${indexes.slice(0, -1).join(", ")} and ${indexes[indexes.length - 1]}`

/**
 * The observations of a batch that are not repeats: of several observations of one priced thing
 * at one instant, the first when they all have one price (the others are `duplicates`), none
 * when they disagree (each is refused, naming them all).
 */
const firstOfEachInstant = <O, Row>(
  decoded: ReadonlyArray<Timed<O>>,
  rules: VersionRules<O, Row>,
  issues: Array<RecordIssue>
): { readonly kept: Array<Timed<O>>; readonly duplicates: number } => {
  // Grouped by priced thing first: a batch mostly observes each once, which needs no key per
  // instant (an import of a million rows built two million of them).
  const byBase = new Map<string, Timed<O> | Array<Timed<O>>>()
  for (const d of decoded) {
    const seen = byBase.get(d.base)
    if (seen === undefined) byBase.set(d.base, d)
    else if (Array.isArray(seen)) seen.push(d)
    else byBase.set(d.base, [seen, d])
  }
  const instantsOf = new Map<string, Map<string, Array<Timed<O>>>>()
  const groupOf = (d: Timed<O>, all: ReadonlyArray<Timed<O>>): Array<Timed<O>> => {
    let instants = instantsOf.get(d.base)
    if (instants === undefined) {
      instants = new Map()
      for (const e of all) {
        const group = instants.get(e.at)
        if (group === undefined) instants.set(e.at, [e])
        else group.push(e)
      }
      instantsOf.set(d.base, instants)
    }
    return instants.get(d.at)!
  }
  const kept: Array<Timed<O>> = []
  let duplicates = 0
  // In the order of each group's first observation.
  for (const d of decoded) {
    const seen = byBase.get(d.base)!
    if (!Array.isArray(seen)) {
      kept.push(d)
      continue
    }
    const group = groupOf(d, seen)
    const [first, ...rest] = group
    if (first !== d) continue
    if (rest.length === 0) {
      kept.push(first)
      continue
    }
    const prices = new Set(group.map((g) => rules.key(rules.open(g.observation, g.at, g.base))))
    if (prices.size === 1) {
      kept.push(first)
      duplicates += rest.length
      continue
    }
    const indexes = group.map((g) => g.index).sort((a, b) => a - b)
    const count = prices.size === 2 ? "two" : String(prices.size)
    for (const index of indexes) issues.push({ index, message: `${count} prices for one product at ${first.at}: ${recordList(indexes)}` })
  }
  return { kept, duplicates }
}

/**
 * The refusals of observations of one priced thing at one instant with different prices, as
 * `planVersions` refuses them: pure, so a write path reports them with its other problems.
 */
export const conflictingPrices = <O, Row>(decoded: ReadonlyArray<Timed<O>>, rules: VersionRules<O, Row>): Array<RecordIssue> => {
  const issues: Array<RecordIssue> = []
  firstOfEachInstant(decoded, rules, issues)
  return issues
}

/**
 * Turns validated observations into a change against the rows a step read. Observations of one
 * priced thing apply in time order; an unchanged price touches nothing; a changed one closes
 * the current row at the observation's time and opens a new one. Observations of one priced
 * thing at one instant are one observation when they agree (the rest count as `duplicates`) and
 * are all refused when they do not. An observation at the instant a stored version of its
 * priced thing starts is a duplicate with that version's price, and refused with another. An
 * observation not after the current row, or before the end of a withdrawn priced thing's last
 * version, is already stored when the version in force at its instant has its price, and is
 * unchanged: sending a batch again is a no-op. Otherwise it cannot be placed (history is never
 * rewritten) and refuses the batch. An observation of a withdrawn priced thing from the end of
 * its last version on lists it again.
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
  const { kept, duplicates: repeats } = firstOfEachInstant(decoded, rules, issues)
  let duplicates = repeats
  let unchanged = 0
  let closed = 0
  const ordered = kept.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.index - b.index))
  for (const { index, observation: o, at, base } of ordered) {
    const now = live.get(base)
    const last = now === undefined ? ended.get(base) : undefined
    const stale = (now !== undefined && at <= now.valid_from) || (last !== undefined && at < last.valid_to!)
    // The version in force at the observation's instant: the current one, unless it is stale.
    const then = stale ? view.inForce(base, at) : now
    if (then !== undefined && then.valid_from === at) {
      if (rules.samePrice(then, o)) duplicates++
      else issues.push({ index, message: `another price for this product at ${at} is already stored: ${rules.price(then)}` })
      continue
    }
    if (then !== undefined && rules.samePrice(then, o)) {
      unchanged++
      continue
    }
    if (stale) {
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
    summary: { received: decoded.length, opened: opened.size, closed, unchanged, duplicates }
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

/**
 * How a versioned type with peers (`VersionKeys.peers`) completes a change inside its step: given
 * the change planned on the step's view and the peers it read (`peerReadOf`), the change to
 * write, its opened rows completed and stored peers restated (LLM outlier flags). Pure.
 */
export type Judge<Row> = (changes: VersionChanges<Row>, view: VersionView<Row>) => VersionChanges<Row>

/**
 * The peers a change needs read: the versions of the peer values of the rows it opens or closes,
 * in force from the earliest instant it changes on. None for a change that changes nothing, or
 * a type without peers.
 */
export const peerReadOf = <Row extends Versioned>(
  changes: VersionChanges<Row>,
  view: VersionView<Row>,
  keys: VersionKeys<Row>
): PeerRead | undefined => {
  const peers = keys.peers
  if (peers === undefined) return undefined
  const current = new Map(view.current.map((r) => [keys.key(r), r]))
  const values = new Set<string>()
  let from: string | undefined
  const moves = (row: Row, at: string) => {
    values.add(peers.of(row))
    if (from === undefined || at < from) from = at
  }
  for (const r of changes.open) moves(r, r.valid_from)
  for (const c of changes.close) {
    const row = current.get(c.key)
    if (row !== undefined) moves(row, c.valid_to)
  }
  return from === undefined ? undefined : { values: [...values], from }
}

/** Priced things one read-only check of a large batch reads at once. */
const POINTS_PER_CHECK = 20 * MAX_ROWS_PER_WRITE

const NO_CHANGES: VersionChanges<never> = { close: [], open: [] }

const pointsOf = <O>(chunk: ReadonlyArray<Timed<O>>): Array<VersionPoint> => chunk.map(({ base, at }) => ({ base, at }))

/** Two summaries of one ingest's writes as one. */
export const sumSummaries = (a: IngestSummary, b: IngestSummary): IngestSummary => ({
  received: a.received + b.received,
  opened: a.opened + b.opened,
  closed: a.closed + b.closed,
  unchanged: a.unchanged + b.unchanged,
  duplicates: a.duplicates + b.duplicates
})

/**
 * Plans a large batch against the store as it stands, in read-only steps, before anything is
 * written: the batch is refused whole, with every problem, or passes.
 */
const checkWhole = <O, Row extends Versioned>(
  transact: TransactVersions<Row>,
  decoded: ReadonlyArray<Timed<O>>,
  rules: VersionRules<O, Row>
): Effect.Effect<void, InvalidRecords | StorageError> =>
  Effect.flatMap(
    Effect.forEach(chunkObservations(decoded, POINTS_PER_CHECK), (chunk) =>
      transact(pointsOf(chunk), (view) =>
        Either.right({ changes: NO_CHANGES, result: planVersions(chunk, view, rules) }))),
    (plans) => {
      const issues = plans.flatMap((p) => (Either.isLeft(p) ? p.left.errors : []))
      return issues.length > 0 ? Effect.fail(invalidRecords(issues.sort((a, b) => a.index - b.index))) : Effect.void
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
 * With `judge`, a step whose change changes something also reads the peers it touches
 * (`peerReadOf`) and writes the change `judge` completes, restated peers included, in the same
 * atomic step. `mark` is written by the last chunk's step, with its rows, even when nothing
 * changed. `rowsPerWrite` is the store's bound on one write, when it allows more than
 * `MAX_ROWS_PER_WRITE`. Returns what the batch did, the rows it opened and the rows it
 * restated, as written.
 */
export const writeVersions = <O, Row extends Versioned>(
  transact: TransactVersions<Row>,
  decoded: ReadonlyArray<Timed<O>>,
  rules: VersionRules<O, Row>,
  options: {
    readonly judge?: Judge<Row> | undefined
    readonly mark?: ProgressMark | undefined
    /** Rows one `transact` may write (`chunkObservations`); default `MAX_ROWS_PER_WRITE`. */
    readonly rowsPerWrite?: number | undefined
  } = {}
): Effect.Effect<VersionWrite<Row>, InvalidRecords | StorageUnavailable> => {
  const { judge, mark } = options
  const chunks = markedChunks(chunkObservations(decoded, options.rowsPerWrite), mark)
  const writeChunk = ({ rows, mark }: MarkedChunk<Timed<O>>) => {
    const plan = (view: VersionView<Row>) => planVersions(rows, view, rules)
    return transact(
      pointsOf(rows),
      (view) =>
        Either.map(plan(view), ({ changes, summary }): Decision<VersionChanges<Row>, VersionWrite<Row>> => {
          const done = judge === undefined ? changes : judge(changes, view)
          return { changes: { ...done, ...withMark(mark) }, result: { summary, opened: done.open, restated: done.restate ?? [] } }
        }),
      judge === undefined ? undefined : (view) => Either.match(plan(view), {
        onLeft: () => undefined,
        onRight: ({ changes }) => peerReadOf(changes, view, rules)
      })
    )
  }
  const writeAll = Effect.suspend(() => {
    const opened: Array<Row> = []
    const restated: Array<Row> = []
    const empty: IngestSummary = { received: 0, opened: 0, closed: 0, unchanged: 0, duplicates: 0 }
    return Effect.map(
      Effect.reduce(chunks, empty, (total, chunk, i) =>
        Effect.map(
          Effect.mapError(writeChunk(chunk), (e) => (i > 0 && e instanceof InvalidRecords ? partlyStored(e) : e)),
          (w) => {
            for (const row of w.opened) opened.push(row)
            for (const row of w.restated) restated.push(row)
            return sumSummaries(total, w.summary)
          }
        )),
      (summary): VersionWrite<Row> => ({ summary, opened, restated })
    )
  })
  const planned = chunks.length <= 1 ? writeAll : Effect.zipRight(checkWhole(transact, decoded, rules), writeAll)
  return writeFailure(planned)
}

/** What one write of versioned observations did, and the rows it opened and restated as written, in write order. */
export interface VersionWrite<Row> {
  readonly summary: IngestSummary
  readonly opened: ReadonlyArray<Row>
  readonly restated: ReadonlyArray<Row>
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
 * refuses the whole withdrawal before anything closes. `mark` is written with the last chunk;
 * with `judge`, each chunk restates the peers whose market it changed (see `writeVersions`).
 * Returns how many rows closed.
 */
export const withdrawVersions = <Row extends Versioned>(
  transact: TransactVersions<Row>,
  bases: ReadonlyArray<string>,
  at: string,
  keys: VersionKeys<Row>,
  mark?: ProgressMark,
  judge?: Judge<Row>
): Effect.Effect<number, InvalidRecords | StorageUnavailable> => {
  const micros = parseDateTime(at)
  if (micros === undefined) return Effect.fail(invalidRecords([{ index: 0, message: "at: expected an ISO 8601 datetime" }]))
  const valid_to = formatInstant(micros)
  const points = [...new Set(bases)].map((base) => ({ base, at: valid_to }))
  const late = (current: ReadonlyArray<Row>) => current.find((r) => r.valid_from >= valid_to)
  const refusal = (row: Row) => invalidRecords([{ index: 0, message: `at is not after the price in force since ${row.valid_from}` }])
  const closing = (current: ReadonlyArray<Row>): VersionChanges<Row> => ({ close: current.map((r) => ({ key: keys.key(r), valid_to })), open: [] })
  const close = ({ rows, mark }: MarkedChunk<VersionPoint>) =>
    transact(
      rows,
      (view) => {
        const row = late(view.current)
        if (row !== undefined) return Either.left(refusal(row))
        const changes = closing(view.current)
        return Either.right({ changes: { ...(judge === undefined ? changes : judge(changes, view)), ...withMark(mark) }, result: view.current.length })
      },
      judge === undefined ? undefined : (view) => (late(view.current) === undefined ? peerReadOf(closing(view.current), view, keys) : undefined)
    )
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
