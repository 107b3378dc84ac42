import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { InvalidRecords, type StorageUnavailable, type ValidationFailed, validationFailed } from "../../errors.js"
import { nowMicros, unavailable } from "../../market/storage.js"
import { formatInstant, parseDateTime } from "../../query/time.js"
import { VendorSlug } from "../../schema/rental-price.js"
import { LlmTokenPriceStore } from "../../storage/llm-token-prices.js"
import { RentalPriceStore } from "../../storage/contract.js"
import type { PagePlan, Predicate } from "../../storage/plan.js"
import type { StorageError } from "../../storage/errors.js"
import type { Versioned } from "../../storage/versions.js"
import { decodeLlmObservations, LlmTokenPriceIngest } from "../llm-token-prices.js"
import { type BulkLoad, MIN_IMPORT_BATCH, RentalPriceIngest } from "../rental-prices.js"
import { type IngestSummary, sumSummaries } from "../versions.js"
import type { Conversion, Converted } from "./conversion.js"
import { csvReader, type CsvRecord, CsvSyntaxError } from "./csv.js"
import { productListings } from "./listings.js"
import { fromLitellm, LITELLM_SOURCE } from "./litellm.js"
import {
  describePlace, type FileFormat, importReport, type ImportReport, judged, notTheFormat, type Quarantined, type QuarantineRule, type Rejection,
  type SourcePlace, writeRejectionReason
} from "./report.js"
import { skypilotConverter, type SkypilotObservation } from "./skypilot.js"

/**
 * Imports of the public formats: a file's text is converted (`fromSkypilot`, `fromLitellm`) and
 * written through the type's write path. The write path refuses a batch with a bad record whole,
 * so the batch is written again without the records it names: every good observation is stored
 * and every refused one reported with its place in the file. An import may declare itself a
 * snapshot: the vendor's (SkyPilot) or the source's (LiteLLM) complete catalog at its instant,
 * so what it no longer lists is withdrawn then.
 */

/** What every format import takes. */
export interface FormatImportOptions {
  /** The instant the file describes, ISO 8601 (default: now): every observation's `extracted_at`, and a snapshot's withdrawal instant. */
  readonly observedAt?: string
  /**
   * The file is the complete catalog at `observedAt`: products of its vendor (SkyPilot) or prices
   * of its source (LiteLLM) in force before then and missing from it are withdrawn at that instant.
   */
  readonly snapshot?: boolean
  /** Rejections these rules expect are quarantined: reported, not stored, and not a failure (`ImportPolicy.quarantine`). */
  readonly quarantine?: ReadonlyArray<QuarantineRule>
  /**
   * With `snapshot`: the largest share (0 to 1) of the current products a snapshot may withdraw.
   * A snapshot that would withdraw more is refused whole before anything is written, as
   * `ValidationFailed` on the parameter `max_withdrawal`: a half-published catalog must not empty
   * the market. Default: no limit.
   */
  readonly maxWithdrawal?: number
}

/** Options of a SkyPilot import. */
export interface SkypilotImportOptions extends FormatImportOptions {
  /** The vendor slug of the rows; also the SkyPilot cloud whose conventions apply (`runpod`, `vast`, …). */
  readonly vendor: string
}

/** Options of a SkyPilot import read as it arrives (`FormatImport.skypilotStream`). */
export interface SkypilotStreamOptions extends SkypilotImportOptions {
  /** About how many observations the file yields (a GPU row, two), when known: the write path prepares a bulk load of them (`RentalPriceIngest.bulkLoad`). */
  readonly observations?: number
  /** Observations written at a time (default: the bulk load's batch when `observations` is given, else `MIN_IMPORT_BATCH`). */
  readonly batch?: number
  /** Told after each batch is written how many rows of the file (records after the header) are read: progress. */
  readonly onRows?: (rows: number) => Effect.Effect<void>
}

/**
 * What a format import did: what became of every entry of the file (`ImportReport`, the same
 * counts the CLI prints), the write's own summary, and a snapshot's withdrawals.
 */
export interface FormatImportSummary<S extends IngestSummary = IngestSummary> extends ImportReport {
  /** The instant of the import, as stored. */
  readonly observedAt: string
  /** What the write of the observations that were not refused did. */
  readonly written: S
  /** Rows a snapshot withdrew; null when the import was not a snapshot. */
  readonly withdrawn: number | null
}

const isVendorSlug = Schema.is(VendorSlug)

/** Characters of a file's start kept to name the format it looks like, should it be no SkyPilot catalog (`notTheFormat`). */
const HEAD_CHARS = 64 * 1024

/** Rows a snapshot reads per page of the current rows it compares with the file. */
const SNAPSHOT_PAGE = 1_000

/** The instant of an import: `observedAt` as stored, or now. */
const instantOf = (observedAt: string | undefined): Effect.Effect<string, ValidationFailed> => {
  if (observedAt === undefined) return Effect.map(nowMicros, formatInstant)
  const micros = parseDateTime(observedAt)
  return micros === undefined
    ? Effect.fail(validationFailed([{ parameter: "observed_at", message: "expected an ISO 8601 datetime" }]))
    : Effect.succeed(formatInstant(micros))
}

/** A refusal's message with the batch positions it names (`records 3 and 7`) as places in the file. */
const inFileTerms = (message: string, batch: ReadonlyArray<SourcePlace>): string =>
  message.replace(/\brecords? (\d+(?:, \d+)*(?: and \d+)?)/g, (written, list: string) => {
    const places = list.split(/, | and /).map((i) => batch[Number(i)])
    if (places.some((p) => p === undefined)) return written
    const named = places.map((p) => describePlace(p!))
    return named.length === 1 ? named[0]! : `${named.slice(0, -1).join(", ")} and ${named[named.length - 1]}`
  })

/**
 * The records of a batch of `size` a write path's refusal names, each with its messages joined;
 * a refusal that names no record of the batch refuses all of it.
 */
export const refusedRecords = (error: InvalidRecords, size: number): Map<number, string> => {
  const bad = new Map<number, string>()
  for (const issue of error.errors) {
    if (issue.index >= 0 && issue.index < size) bad.set(issue.index, bad.has(issue.index) ? `${bad.get(issue.index)}; ${issue.message}` : issue.message)
  }
  if (bad.size === 0) for (let i = 0; i < size; i++) bad.set(i, error.detail)
  return bad
}

/**
 * Writes converted observations, again without those a refusal names until a write is accepted.
 * Records a message names by batch position are named by their place in the file; a refusal a
 * quarantine rule expects is quarantined rather than rejected. Returns the last write's summary
 * and what was refused.
 */
export const writeAccepting = <O, S extends IngestSummary>(
  converted: ReadonlyArray<Converted<O>>,
  write: (observations: ReadonlyArray<O>) => Effect.Effect<S, InvalidRecords | StorageUnavailable>,
  rules: ReadonlyArray<QuarantineRule>
): Effect.Effect<{ readonly written: S; readonly rejections: Array<Rejection>; readonly quarantined: Array<Quarantined> }, StorageUnavailable> =>
  Effect.gen(function* () {
    const rejections: Array<Rejection> = []
    const quarantined: Array<Quarantined> = []
    let pending = converted
    while (true) {
      const result = yield* Effect.either(write(pending.map((c) => c.observation)))
      if (Either.isRight(result)) return { written: result.right, rejections, quarantined }
      const error = result.left
      if (!(error instanceof InvalidRecords)) return yield* Effect.fail(error)
      const bad = refusedRecords(error, pending.length)
      for (const [i, message] of bad) {
        const { line, key, observation } = pending[i]!
        const rejection: Rejection = { line, ...(key === undefined ? {} : { key }), reason: writeRejectionReason(message), message: inFileTerms(message, pending) }
        const outcome = judged(rules, rejection, observation as Readonly<Record<string, unknown>>)
        if ("quarantined" in outcome) quarantined.push(outcome.quarantined)
        else rejections.push(outcome.rejection)
      }
      pending = pending.filter((_, i) => !bad.has(i))
    }
  })

/**
 * The base keys of the current rows `predicate` selects that started before `at`, read page by
 * page (keyset on `field`, which the predicate fixes, and the row key).
 */
const currentBefore = <Row extends Versioned>(
  page: (plan: PagePlan) => Effect.Effect<ReadonlyArray<Row>, StorageError>,
  predicate: Predicate & { readonly op: "in" },
  keys: { readonly key: (row: Row) => string; readonly base: (row: Row) => string },
  at: string
): Effect.Effect<Array<string>, StorageUnavailable> =>
  Effect.gen(function* () {
    const bases: Array<string> = []
    let after: PagePlan["after"] = undefined
    while (true) {
      const rows: ReadonlyArray<Row> = yield* Effect.mapError(
        page({ scope: { _tag: "latest" }, predicates: [predicate], sort: { by: predicate.field, order: "asc" }, after, limit: SNAPSHOT_PAGE }),
        unavailable
      )
      for (const row of rows) if (row.valid_from < at) bases.push(keys.base(row))
      if (rows.length < SNAPSHOT_PAGE) return bases
      after = { value: predicate.values[0]!, tie: keys.key(rows[rows.length - 1]!) }
    }
  })

/** The base key of each observation that decodes, by the write path's own rules. */
const baseKeysOf = <O>(
  converted: ReadonlyArray<Converted<O>>,
  decode: (input: ReadonlyArray<unknown>) => Either.Either<ReadonlyArray<{ readonly base: string }>, InvalidRecords>
): Set<string> => {
  const bases = new Set<string>()
  for (const c of converted) {
    const decoded = decode([c.observation])
    if (Either.isRight(decoded)) for (const d of decoded.right) bases.add(d.base)
  }
  return bases
}

/** Fails when a snapshot would withdraw more than `limit` (a share) of the `current` products: it is held back. */
const withinWithdrawalLimit = (missing: number, current: number, limit: number | undefined): Effect.Effect<void, ValidationFailed> =>
  limit === undefined || missing <= limit * current
    ? Effect.void
    : Effect.fail(validationFailed([{
      parameter: "max_withdrawal",
      message: `the snapshot would withdraw ${missing} of ${current} current products, more than ${Math.round(limit * 100)}%`
    }]))

/** Public-format imports through the market's write paths. */
export class FormatImport extends Effect.Service<FormatImport>()("Market/FormatImport", {
  effect: Effect.gen(function* () {
    const rentalIngest = yield* RentalPriceIngest
    const llmIngest = yield* LlmTokenPriceIngest
    const rentalStore = yield* RentalPriceStore
    const llmStore = yield* LlmTokenPriceStore

    /**
     * Writes a conversion and, for a snapshot, withdraws what the file no longer lists: the current
     * products `current` names that started before the instant and that no observation of the
     * file (refused ones included) is of. A text that is not in the format at all is refused
     * whole, naming the format it looks like, before anything is written or withdrawn.
     */
    const run = <O, S extends IngestSummary>(
      source: { readonly format: FileFormat; readonly text: string; readonly conversion: Conversion<O> },
      at: string,
      options: FormatImportOptions,
      write: (observations: ReadonlyArray<O>) => Effect.Effect<S, InvalidRecords | StorageUnavailable>,
      snapshot: {
        readonly current: Effect.Effect<Array<string>, StorageUnavailable>
        readonly listed: Effect.Effect<Set<string>, StorageUnavailable>
        readonly withdraw: (bases: ReadonlyArray<string>) => Effect.Effect<number, InvalidRecords | StorageUnavailable>
      } | undefined
    ) =>
      Effect.gen(function* () {
        const { format, text, conversion } = source
        if (conversion.unrecognised !== undefined) {
          return yield* Effect.fail(validationFailed([{ parameter: "format", message: notTheFormat(format, conversion.unrecognised, text) }]))
        }
        const rules = options.quarantine ?? []
        // What a snapshot withdraws is what the store holds before the instant, so it is known before the write.
        let missing: ReadonlyArray<string> | undefined
        if (snapshot !== undefined) {
          const listed = yield* snapshot.listed
          const current = yield* snapshot.current
          missing = current.filter((base) => !listed.has(base))
          yield* withinWithdrawalLimit(missing.length, current.length, options.maxWithdrawal)
        }
        const { written, rejections, quarantined } = yield* writeAccepting(conversion.observations, write, rules)
        // Only rows that started before the instant are withdrawn: refused only if another writer moved one since.
        const withdrawn = snapshot === undefined || missing === undefined ? null : yield* snapshot.withdraw(missing)
        // What the converter could not read is judged by the rules too, by its LiteLLM key.
        for (const issue of conversion.issues) {
          const outcome = judged(rules, issue, {})
          if ("quarantined" in outcome) quarantined.push(outcome.quarantined)
          else rejections.push(outcome.rejection)
        }
        const summary: FormatImportSummary<S> = {
          ...importReport({
            stored: written.received - written.unchanged - written.duplicates, unchanged: written.unchanged, duplicate: written.duplicates,
            skipped: conversion.skipped, rejections, quarantined
          }),
          observedAt: at, written, withdrawn
        }
        return summary
      })

    /**
     * Imports a SkyPilot `vms.csv` of one vendor, read as it arrives: on-demand and spot prices
     * per instance-hour (`skypilotConverter`), written a batch at a time, so memory holds a batch
     * and a few facts per product, not the file. The header is the first record: a file that is no
     * SkyPilot catalog is refused before anything is written. A product listed again in a later
     * batch than its first listing is not written again: with the first listing's price it is a
     * duplicate, with another both listings are named in a `conflicting_price` rejection of the
     * later one (the first, written with its batch, stays stored). A snapshot withdraws the
     * vendor's products the file does not list, once the whole file is written.
     */
    const skypilotStream = (text: Stream.Stream<string>, options: SkypilotStreamOptions) =>
      Effect.scoped(Effect.gen(function* () {
        if (!isVendorSlug(options.vendor)) {
          return yield* Effect.fail(validationFailed([{ parameter: "vendor", message: "expected a vendor slug: lower-case letters, digits, '.', '_' and '-'" }]))
        }
        const at = yield* instantOf(options.observedAt)
        const rules = options.quarantine ?? []
        // A bulk load starts once the header has shown a SkyPilot catalog, and only for a file whose size is told.
        let load: BulkLoad | undefined
        const started = Effect.gen(function* () {
          load ??= options.observations === undefined ? { batch: MIN_IMPORT_BATCH, end: Effect.void } : yield* rentalIngest.bulkLoad(options.observations)
          return load
        })
        const converter = skypilotConverter({ vendor: options.vendor, observedAt: at })
        const reader = csvReader()
        const onRows = options.onRows ?? (() => Effect.void)
        const listings = productListings(options.observations)
        const rejections: Array<Rejection> = []
        const quarantined: Array<Quarantined> = []
        const skipped: Record<string, number> = {}
        const listed = new Set<string>()
        let written: IngestSummary = { received: 0, opened: 0, closed: 0, unchanged: 0, duplicates: 0 }
        let head: string | undefined
        let rows = 0
        let batch: Array<Converted<SkypilotObservation>> = []
        let keys: Array<string> = []
        let header = true
        const judge = (rejection: Rejection, fields: Readonly<Record<string, unknown>>) => {
          const outcome = judged(rules, rejection, fields)
          if ("quarantined" in outcome) quarantined.push(outcome.quarantined)
          else rejections.push(outcome.rejection)
        }
        const flush = Effect.gen(function* () {
          if (batch.length === 0) return
          const pending = batch
          const pendingKeys = keys
          batch = []
          keys = []
          const outcome = yield* writeAccepting(pending, (observations) => rentalIngest.ingest(observations), rules)
          written = sumSummaries(written, outcome.written)
          rejections.push(...outcome.rejections)
          quarantined.push(...outcome.quarantined)
          listings.written(pending, pendingKeys, [...outcome.rejections, ...outcome.quarantined])
          if (options.snapshot === true) for (const base of yield* rentalIngest.baseKeys(pending.map((c) => c.observation))) listed.add(base)
          yield* onRows(rows)
        })
        const read = (records: ReadonlyArray<CsvRecord | CsvSyntaxError>) =>
          Effect.gen(function* () {
            const conversion = converter.convert(records)
            if (conversion.unrecognised !== undefined) {
              return yield* Effect.fail(validationFailed([{ parameter: "format", message: notTheFormat("skypilot", conversion.unrecognised, head ?? "") }]))
            }
            // The bulk load starts with the first records after a catalog's header, whatever the batch.
            const loaded = records.length === 0 ? undefined : yield* started
            const batchSize = options.batch ?? loaded?.batch ?? Number.POSITIVE_INFINITY
            for (const [reason, n] of Object.entries(conversion.skipped)) skipped[reason] = (skipped[reason] ?? 0) + n
            // What the converter could not read is judged by the rules too.
            for (const issue of conversion.issues) judge(issue, {})
            for (const c of conversion.observations) {
              const key = listings.key(c)
              const earlier = listings.earlier(key, c)
              if (earlier === undefined) {
                batch.push(c)
                keys.push(key)
                if (batch.length >= batchSize) yield* flush
              } else if (earlier.samePrice && earlier.stored) written = { ...written, received: written.received + 1, duplicates: written.duplicates + 1 }
              else {
                const message = `two prices for one product at ${at}: line ${earlier.line} and line ${c.line}` +
                  (earlier.stored ? `; line ${earlier.line}, written with an earlier batch, stays stored` : "")
                judge({ line: c.line, reason: writeRejectionReason(message), message }, { ...c.observation })
              }
            }
            rows += records.length - (header && records.length > 0 ? 1 : 0)
            if (records.length > 0) header = false
          })
        yield* Stream.runForEach(text, (chunk) => {
          const text = head === undefined && chunk.startsWith("\uFEFF") ? chunk.slice(1) : chunk
          head ??= text.slice(0, HEAD_CHARS)
          return read(reader.push(text))
        })
        yield* read(reader.end())
        const empty = converter.end()
        if (empty !== undefined) return yield* Effect.fail(validationFailed([{ parameter: "format", message: notTheFormat("skypilot", empty, head ?? "") }]))
        // What a snapshot withdraws is what the store holds before the instant, which the writes at the instant do not change.
        const current = options.snapshot !== true ? undefined : yield* currentBefore(rentalStore.page,
          { op: "in", field: "vendor", values: [options.vendor] }, { key: (r) => r.product_key, base: (r) => r.base_product_key }, at)
        if (current !== undefined && options.maxWithdrawal !== undefined) {
          // Checked before the last batch is written: a file read as one batch (`skypilot`) then changes nothing when held back.
          const last = new Set(yield* rentalIngest.baseKeys(batch.map((c) => c.observation)))
          const missing = current.filter((base) => !listed.has(base) && !last.has(base)).length
          yield* withinWithdrawalLimit(missing, current.length, options.maxWithdrawal)
        }
        yield* flush
        if (load !== undefined) yield* load.end
        // Only rows that started before the instant are withdrawn: refused only if another writer moved one since.
        const withdrawn = current === undefined ? null : yield* rentalIngest.withdraw(current.filter((base) => !listed.has(base)), at)
        const summary: FormatImportSummary = {
          ...importReport({
            stored: written.received - written.unchanged - written.duplicates, unchanged: written.unchanged, duplicate: written.duplicates,
            skipped, rejections, quarantined
          }),
          observedAt: at, written, withdrawn
        }
        return summary
      })).pipe(Effect.withSpan("FormatImport.skypilotStream"))

    /**
     * Imports the text of a SkyPilot `vms.csv` of one vendor: `skypilotStream` of the text as one
     * chunk, written as one batch (the text is in memory already), so repeats and conflicting
     * listings are told apart across the whole file.
     */
    const skypilot = (text: string, options: SkypilotImportOptions) =>
      skypilotStream(Stream.make(text), { ...options, batch: Number.POSITIVE_INFINITY }).pipe(Effect.withSpan("FormatImport.skypilot"))

    /**
     * Imports LiteLLM's `model_prices_and_context_window.json`: every per-token price of every
     * entry, per serving provider (`fromLitellm`). A snapshot withdraws the `litellm` source's
     * prices it does not list.
     */
    const litellm = Effect.fn("FormatImport.litellm")(function* (text: string, options: FormatImportOptions = {}) {
      const at = yield* instantOf(options.observedAt)
      const conversion = fromLitellm(text, { observedAt: at })
      return yield* run({ format: "litellm", text, conversion }, at, options, (rows) => llmIngest.ingest(rows), options.snapshot !== true ? undefined : {
        current: currentBefore(llmStore.page, { op: "in", field: "source", values: [LITELLM_SOURCE] },
          { key: (r) => r.price_key, base: (r) => r.base_price_key }, at),
        listed: Effect.sync(() => baseKeysOf(conversion.observations, decodeLlmObservations)),
        withdraw: (bases) => llmIngest.withdraw(bases, at)
      })
    })

    return { skypilot, skypilotStream, litellm } as const
  })
}) {}
