import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schedule from "effect/Schedule"
import { InvalidRecords, type RecordIssue } from "../errors.js"
import { unavailableWrite } from "../market/storage.js"
import { formatInstant, parseDateTime } from "../query/time.js"
import { MAX_ROWS_PER_WRITE, StorageConflict, StorageError } from "../storage/contract.js"
import type { PagePlan } from "../storage/plan.js"

/** The refusal of a whole batch, naming the first of its problems. */
export const invalidRecords = (errors: ReadonlyArray<RecordIssue>): InvalidRecords =>
  new InvalidRecords({
    detail: `${errors.length} problem(s); nothing was stored. First: record ${errors[0]!.index}: ${errors[0]!.message}`,
    errors
  })

/**
 * Re-plans a read-then-apply when another writer moved a row in between (a `StorageConflict`),
 * a few times; a storage failure, or a conflict that outlasts them, becomes `StorageUnavailable`.
 * A change applied in chunks re-plans from what its earlier chunks stored: sending an observation
 * again is a no-op, so the batch completes as planned.
 */
export const atomically = <A, E, R>(
  readThenApply: Effect.Effect<A, E | StorageError | StorageConflict, R>
) =>
  readThenApply.pipe(
    Effect.retry({ while: (e) => (e as { _tag?: string })._tag === "StorageConflict", schedule: Schedule.recurs(5) }),
    Effect.catchIf(
      (e): e is StorageError | StorageConflict => e instanceof StorageError || e instanceof StorageConflict,
      (e) => Effect.fail(unavailableWrite({ operation: e._tag === "StorageError" ? e.operation : e.detail }))
    )
  )

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

/**
 * A versioned change in chunks of at most `MAX_ROWS_PER_WRITE` rows (closes and opens), each a
 * change of its own: every priced thing's closes and opens stay in one chunk, so each chunk
 * keeps the store's rule of one current row per priced thing, and a reader never sees a thing
 * with two current rows or none. `baseOfClosed` names the priced thing of a closed row's key.
 */
export const chunkVersionChanges = <C extends { readonly valid_to: string }, Row>(
  close: ReadonlyArray<C>,
  open: ReadonlyArray<Row>,
  baseOfClosed: (c: C) => string,
  baseOf: (row: Row) => string
): Array<{ readonly close: ReadonlyArray<C>; readonly open: ReadonlyArray<Row> }> => {
  const byBase = new Map<string, { close: Array<C>; open: Array<Row> }>()
  const of = (base: string) => {
    let group = byBase.get(base)
    if (group === undefined) byBase.set(base, group = { close: [], open: [] })
    return group
  }
  for (const c of close) of(baseOfClosed(c)).close.push(c)
  for (const r of open) of(baseOf(r)).open.push(r)
  const chunks: Array<{ close: Array<C>; open: Array<Row> }> = []
  let chunk = { close: [] as Array<C>, open: [] as Array<Row> }
  for (const group of byBase.values()) {
    const size = chunk.close.length + chunk.open.length
    if (size > 0 && size + group.close.length + group.open.length > MAX_ROWS_PER_WRITE) {
      chunks.push(chunk)
      chunk = { close: [], open: [] }
    }
    chunk.close.push(...group.close)
    chunk.open.push(...group.open)
  }
  if (chunk.close.length + chunk.open.length > 0) chunks.push(chunk)
  return chunks
}

/**
 * Closes the current rows of the priced things `bases` name at `at` (a withdrawal), in chunks:
 * unknown keys are ignored, and an instant not after a row's start refuses the whole withdrawal.
 * Returns how many rows closed.
 */
export const withdrawVersions = <Row extends Versioned, E, R>(
  bases: ReadonlyArray<string>,
  at: string,
  current: (bases: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<Row>, E | StorageError, R>,
  close: (rows: ReadonlyArray<Row>, valid_to: string) => Effect.Effect<void, E | StorageError | StorageConflict, R>
) => {
  const micros = parseDateTime(at)
  if (micros === undefined) return Effect.fail(invalidRecords([{ index: 0, message: "at: expected an ISO 8601 datetime" }]))
  const valid_to = formatInstant(micros)
  return Effect.gen(function* () {
    const rows = yield* current(bases)
    const late = rows.find((r) => r.valid_from >= valid_to)
    if (late !== undefined) return yield* Effect.fail(invalidRecords([{ index: 0, message: `at is not after the price in force since ${late.valid_from}` }]))
    for (const chunk of chunksOf(rows)) yield* close(chunk, valid_to)
    return rows.length
  }).pipe(atomically)
}

/** What one ingest of versioned prices did. */
export interface IngestSummary {
  readonly received: number
  readonly opened: number
  readonly closed: number
  readonly unchanged: number
}

/** One valid observation of a versioned price: its batch index, instant and base key. */
export interface Timed<O> {
  readonly index: number
  readonly observation: O
  readonly at: string
  readonly base: string
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
    const micros = parseDateTime(observation.extracted_at)
    if (micros === undefined) issues.push({ index, message: "extracted_at: expected an ISO 8601 datetime" })
    else out.push({ index, observation, at: formatInstant(micros), base: baseKey(observation) })
  })
  return issues.length > 0 ? Either.left(invalidRecords(issues)) : Either.right(out)
}

/** How one versioned price type keys, compares and opens its rows. */
export interface VersionRules<O, Row> {
  /** The row's own key (one per version). */
  readonly key: (row: Row) => string
  /** The key of the priced thing, shared by its versions. */
  readonly base: (row: Row) => string
  readonly samePrice: (row: Row, o: O) => boolean
  /** The row an observation opens at `at`. */
  readonly open: (o: O, at: string, base: string) => Row
}

/** A versioned row: in force from `valid_from` until `valid_to` (null: still in force). */
type Versioned = { readonly valid_from: string; readonly valid_to: string | null }

/**
 * The observations that are not after the current row of their priced thing: each is either
 * already stored (the version in force at its instant has its price) or cannot be placed. Their
 * base keys and instants, for `versionsInForce` to read.
 */
export const staleObservations = <O, Row extends Versioned>(
  decoded: ReadonlyArray<Timed<O>>,
  current: ReadonlyArray<Row>,
  rules: VersionRules<O, Row>
): ReadonlyArray<Timed<O>> => {
  const live = new Map<string, Row>(current.map((r) => [rules.base(r), r]))
  return decoded.filter((d) => {
    const now = live.get(d.base)
    return now !== undefined && d.at <= now.valid_from && !rules.samePrice(now, d.observation)
  })
}

/** The stored version of a priced thing in force at an instant, if one was read. */
export type InForce<Row> = (base: string, at: string) => Row | undefined

/**
 * The stored version of each stale observation's priced thing in force at its instant, read one
 * point at a time through the store's page (the base key pins a handful of versions on every
 * backend). Stale observations are rare: a batch sent again, or a resumed import or seed.
 */
export const versionsInForce = <O, Row extends Versioned, E, R>(
  stale: ReadonlyArray<Timed<O>>,
  baseField: string,
  page: (plan: PagePlan) => Effect.Effect<ReadonlyArray<Row>, E, R>
): Effect.Effect<InForce<Row>, E, R> =>
  Effect.map(
    Effect.forEach(stale, ({ base, at }) =>
      Effect.map(page({
        scope: { _tag: "asOf", at },
        predicates: [{ op: "eq", field: baseField, value: base }],
        sort: { by: "valid_from", order: "desc" },
        after: undefined,
        limit: 1
      }), ([row]) => [`${base}\u0000${at}`, row] as const)),
    (found) => {
      const byPoint = new Map(found)
      return (base, at) => byPoint.get(`${base}\u0000${at}`)
    }
  )

/**
 * Turns validated observations into a change against the current rows. Observations of one
 * priced thing apply in time order; an unchanged price touches nothing; a changed one closes
 * the current row at the observation's time and opens a new one. An observation not after the
 * current row is already stored when the version `inForce` at its instant has its price, and
 * is unchanged: sending a batch again is a no-op. Otherwise it
 * cannot be placed and refuses the batch. `close` names stored rows by their key.
 */
export const planVersions = <O, Row extends Versioned>(
  decoded: ReadonlyArray<Timed<O>>,
  current: ReadonlyArray<Row>,
  rules: VersionRules<O, Row>,
  inForce: InForce<Row> = () => undefined
): Either.Either<
  {
    readonly close: ReadonlyArray<{ readonly key: string; readonly valid_to: string }>
    readonly open: ReadonlyArray<Row>
    readonly summary: IngestSummary
  },
  InvalidRecords
> => {
  const live = new Map<string, Row>(current.map((r) => [rules.base(r), r]))
  const stored = new Set(current.map(rules.key))
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
    if (now !== undefined && at <= now.valid_from) {
      const then = inForce(base, at)
      if (then !== undefined && rules.samePrice(then, o)) {
        unchanged++
        continue
      }
      issues.push({ index, message: `extracted_at ${at} is not after the price in force since ${now.valid_from}` })
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
    close,
    open: [...opened.values()],
    summary: { received: decoded.length, opened: opened.size, closed, unchanged }
  })
}
