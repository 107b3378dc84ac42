import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import {
  AdministeredValue, type BulkLoad, FxRateRecord, GpuCatalogRecord, HardwarePriceIngest, HardwarePriceObservation, IndexIngest, LlmTokenPriceIngest, InvalidRecords,
  LlmTokenPriceObservation, MIN_IMPORT_BATCH, ReferenceDataIngest, RentalPriceIngest, RentalPriceObservation, type StorageUnavailable, TransactionDeal, TransactionIngest
} from "@gpu-market/core"
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type { ProgressMark } from "@gpu-market/core/storage"
import { formatOptions, importFormat, isPublicFormat, PUBLIC_FORMATS } from "./formats.js"
import { UsageError } from "./output.js"
import { makeProgress } from "./progress.js"
import { csvRows, jsonLines, scanFile } from "./read.js"
import { storageOptions } from "./options.js"
import { marketOn } from "./storage.js"

/**
 * `gpu-market import <file> --type …`: rows of one data type from JSON Lines or CSV, streamed
 * through the type's write path in batches. A batch is atomic, so a batch with bad rows is
 * retried without them: every good row is stored, every bad one reported with its line.
 *
 * Each batch's write also records how far the file got (a `ProgressMark` named by the type and
 * the file's SHA-256), in the same transaction as the batch's rows: an import run again on the
 * same store, after a kill or to completion, skips the lines an earlier run stored.
 */

/** The importable types: the write path of each and the schema of one input row. */
type Writers = RentalPriceIngest | HardwarePriceIngest | LlmTokenPriceIngest | TransactionIngest | IndexIngest | ReferenceDataIngest

/** What one write of an import counted: rows that repeated one already stored or sent, and pieces of text dropped per field. */
interface WriteCounts {
  readonly duplicates: number
  readonly droppedTerms: Readonly<Record<string, number>>
}

interface ImportType {
  readonly schema: Schema.Schema.AnyNoContext
  /** Writes rows and, in the same transaction, the progress mark; returns what the write counted. */
  readonly write: (rows: ReadonlyArray<unknown>, mark: ProgressMark) => Effect.Effect<WriteCounts, InvalidRecords | StorageUnavailable, Writers>
  readonly mark: (name: string) => Effect.Effect<Option.Option<string>, StorageUnavailable, Writers>
  /** For the life of the scope, an import of about `rows` rows: its batch size, and the load's end to run after the last batch. */
  readonly load: (rows: number) => Effect.Effect<BulkLoad, StorageUnavailable, Writers | Scope.Scope>
}

// A type whose write path offers a bulk load sets its own batch (on SQLite a batch of rental
// prices is one transaction of tens of thousands of rows).
const plainLoad: ImportType["load"] = () => Effect.succeed({ batch: MIN_IMPORT_BATCH, end: Effect.void })

const noCounts = (): WriteCounts => ({ duplicates: 0, droppedTerms: {} })

/** A type's write path as an import uses it: its write with a mark, what its summary counts, and its marks. */
const importType = <I extends Writers, S>(
  schema: Schema.Schema.AnyNoContext,
  service: Effect.Effect<I, never, I>,
  write: (ingest: I, rows: ReadonlyArray<unknown>, mark: ProgressMark) => Effect.Effect<S, InvalidRecords | StorageUnavailable>,
  mark: (ingest: I) => (name: string) => Effect.Effect<Option.Option<string>, StorageUnavailable>,
  counts: (summary: S) => WriteCounts = noCounts,
  load: ImportType["load"] = plainLoad
): ImportType => ({
  schema,
  write: (rows, m) => Effect.flatMap(service, (i) => Effect.map(write(i, rows, m), counts)),
  mark: (name) => Effect.flatMap(service, (i) => mark(i)(name)),
  load
})

const duplicatesOf = (summary: { readonly duplicates: number }): WriteCounts => ({ duplicates: summary.duplicates, droppedTerms: {} })

const TYPES: Record<"rental" | "hardware" | "llm" | "transactions" | "indexes" | "fx" | "gpus", ImportType> = {
  rental: importType(
    RentalPriceObservation, RentalPriceIngest, (i, rows, mark) => i.ingest(rows, { mark }), (i) => i.mark, duplicatesOf,
    (rows) => Effect.flatMap(RentalPriceIngest, (i) => i.bulkLoad(rows))
  ),
  hardware: importType(
    HardwarePriceObservation, HardwarePriceIngest, (i, rows, mark) => i.ingest(rows, { mark }), (i) => i.mark,
    (s) => ({ duplicates: 0, droppedTerms: s.droppedTerms })
  ),
  llm: importType(LlmTokenPriceObservation, LlmTokenPriceIngest, (i, rows, mark) => i.ingest(rows, { mark }), (i) => i.mark, duplicatesOf),
  transactions: importType(TransactionDeal, TransactionIngest, (i, rows, mark) => i.record(rows, { mark }), (i) => i.mark),
  indexes: importType(AdministeredValue, IndexIngest, (i, rows, mark) => i.publish(rows, { mark }), (i) => i.mark),
  fx: importType(FxRateRecord, ReferenceDataIngest, (i, rows, mark) => i.fxRates(rows, { mark }), (i) => i.mark),
  gpus: importType(GpuCatalogRecord, ReferenceDataIngest, (i, rows, mark) => i.gpus(rows, { mark }), (i) => i.mark)
}

type TypeName = keyof typeof TYPES

/** An import that storage trouble stopped: the trouble, and what the import had stored by then. */
export class ImportStopped extends Data.TaggedError("ImportStopped")<{ readonly message: string; readonly cause: StorageUnavailable }> {}

/** What an import did. */
export interface ImportSummary {
  readonly accepted: number
  /** Rows that repeated a row already stored or earlier in the file (same product, instant and price): nothing to store. */
  readonly duplicates: number
  readonly rejected: ReadonlyArray<{ readonly line: number; readonly message: string }>
  /** Hardware: pieces of text in the descriptive fields that were no vocabulary term, per field; not stored. */
  readonly droppedTerms: Readonly<Record<string, number>>
  /** The last line an earlier run of the same file stored through: this run skipped the lines up to it. */
  readonly resumedAfter: number | null
}

/**
 * Streams a file of `type` rows through its write path; bad rows are reported, good ones stored.
 * A first pass hashes the file (naming its progress mark) and counts its rows, so the progress
 * display counts rows; it reaches the total only once the last row is written.
 */
export const importFile = (path: string, type: TypeName, format: "jsonl" | "csv") =>
  Effect.scoped(Effect.gen(function* () {
    const { schema, write, mark, load } = TYPES[type]
    const scan = yield* Effect.promise(() => scanFile(path, format))
    const markName = `import:${type}:${scan.hash}`
    const resumedAfter = Option.getOrNull(Option.map(yield* mark(markName), Number))
    const { batch: batchSize, end } = yield* load(Math.max(0, scan.rows - (resumedAfter ?? 0)))
    const next = format === "csv" ? csvRows(path, schema) : jsonLines(path)
    const label = `importing ${type}`
    const progress = makeProgress(process.stderr, "rows")
    const rejected: Array<{ line: number; message: string }> = []
    let accepted = 0
    let duplicates = 0
    const droppedTerms: Record<string, number> = {}
    let read = 0
    // Rows taken from the file (skipped ones of a resumed import too), all of them written or rejected.
    let done = 0
    const shown = (n: number) => Math.min(n, Math.max(0, scan.rows - 1))

    /** Writes a batch, and marks the file done through `through` with its last write. */
    const submit = (batch: ReadonlyArray<{ readonly line: number; readonly value: unknown }>, through: number) =>
      Effect.gen(function* () {
        let pending = batch
        while (pending.length > 0) {
          const rows = pending.map((r) => r.value)
          const result = yield* Effect.either(write(rows, { name: markName, value: String(through) }))
          if (result._tag === "Right") {
            accepted += pending.length - result.right.duplicates
            duplicates += result.right.duplicates
            for (const [field, n] of Object.entries(result.right.droppedTerms)) droppedTerms[field] = (droppedTerms[field] ?? 0) + n
            return
          }
          const error = result.left
          if (!(error instanceof InvalidRecords)) return yield* Effect.fail(error)
          const bad = new Map<number, string>()
          for (const issue of error.errors) {
            if (issue.index >= 0 && issue.index < pending.length) {
              bad.set(issue.index, bad.has(issue.index) ? `${bad.get(issue.index)}; ${issue.message}` : issue.message)
            }
          }
          // A refusal that names no row of the batch refuses all of it.
          if (bad.size === 0) for (let i = 0; i < pending.length; i++) bad.set(i, error.detail)
          for (const [i, message] of bad) rejected.push({ line: pending[i]!.line, message })
          pending = pending.filter((_, i) => !bad.has(i))
        }
      })

    // The last line a write stored through: what an import run again resumes after.
    let storedThrough = resumedAfter ?? 0
    const counts = () => `accepted ${accepted}, duplicate ${duplicates}, rejected ${rejected.length}`
    yield* progress.update(label, 0, scan.rows)
    let batch: Array<{ line: number; value: unknown }> = []
    let line = 0
    const writeAll = Effect.gen(function* () {
      for (let rows = yield* Effect.promise(next); rows !== undefined; rows = yield* Effect.promise(next)) {
        for (const row of rows) {
          line = row.line
          done++
          if (resumedAfter !== null && line <= resumedAfter) continue
          read++
          if ("error" in row) rejected.push({ line, message: row.error })
          else batch.push(row)
          if (batch.length >= batchSize) {
            yield* submit(batch, line)
            storedThrough = line
            batch = []
            // Below the total until the end, should the first pass have counted a row the reader skips.
            yield* progress.update(label, shown(done), scan.rows)
          }
        }
      }
      if (batch.length > 0) yield* submit(batch, line)
    })
    yield* Effect.catchTag(writeAll, "StorageUnavailable", (e) => new ImportStopped({
      message: storedThrough === 0
        ? `${e.detail}. Nothing of the file was stored before it; the import run again starts from its first line`
        : `${e.detail}. Stored before it: ${counts()}, through line ${storedThrough}; the import run again resumes after line ${storedThrough}`,
      cause: e
    }))
    yield* Effect.catchTag(end, "StorageUnavailable", (e) => new ImportStopped({
      message: `${e.detail}. Every row is stored (${counts()}), but the indexes the import held back are not built yet: the next open of the file builds them`, cause: e
    }))
    yield* progress.update(label, done, done)
    yield* progress.finish
    const summary: ImportSummary = { accepted, duplicates, rejected: rejected.sort((a, b) => a.line - b.line), droppedTerms, resumedAfter }
    return { ...summary, read }
  }))

const formatOf = (path: string, given: Option.Option<"jsonl" | "csv">) =>
  Option.getOrElse(given, () => (/\.csv$/i.test(path) ? "csv" as const : "jsonl" as const))

const isRowFormat = (format: string): format is "jsonl" | "csv" => !isPublicFormat(format)

/** `gpu-market import`. */
export const importCommand = Command.make("import", {
  file: Args.file({ name: "file", exists: "yes" }).pipe(Args.withDescription("the JSON Lines (.jsonl), CSV (.csv), SkyPilot vms.csv or LiteLLM price table file to import")),
  type: Options.choice("type", ["rental", "hardware", "transactions", "llm", "indexes", "fx", "gpus"] as const).pipe(
    Options.withDescription("data type of the rows: rental (price observations), hardware (listing observations), transactions (deals), llm (token price observations), indexes (administered index values), fx (FX rates: currency, date, usd_per_unit), gpus (GPU catalog entries); implied by --format skypilot (rental) and litellm (llm)"),
    Options.optional
  ),
  format: Options.choice("format", ["jsonl", "csv", ...PUBLIC_FORMATS] as const).pipe(
    Options.withDescription("file format; default from the extension (.csv is CSV, anything else JSON Lines); skypilot: a SkyPilot catalog vms.csv (needs --vendor); litellm: LiteLLM's model_prices_and_context_window.json"),
    Options.optional
  ),
  ...formatOptions,
  ...storageOptions
}, (o) =>
  Effect.gen(function* () {
    const format = Option.getOrUndefined(o.format)
    if (format !== undefined && isPublicFormat(format)) return yield* importFormat(o.file, format, o)
    const type = yield* Option.match(o.type, { onNone: () => new UsageError({ message: "--type is required, unless --format is skypilot or litellm" }), onSome: Effect.succeed })
    const result = yield* importFile(o.file, type, formatOf(o.file, Option.filter(o.format, isRowFormat)))
    const dropped = Object.entries(result.droppedTerms).filter(([, n]) => n > 0)
    const lines = [
      `accepted ${result.accepted}, duplicate ${result.duplicates}, rejected ${result.rejected.length}` +
      (type !== "hardware" ? "" : `, dropped terms ${dropped.reduce((n, [, c]) => n + c, 0)}`) +
      (dropped.length === 0 ? "" : ` (${dropped.map(([field, n]) => `${field} ${n}`).join(", ")})`)
    ]
    if (result.resumedAfter !== null) {
      lines.push(`resumed after line ${result.resumedAfter}: an earlier import of this file went that far (it reported the rows it rejected)`)
    }
    for (const r of result.rejected) lines.push(`  line ${r.line}: ${r.message}`)
    yield* Console.log(lines.join("\n"))
    if (result.rejected.length > 0) {
      yield* Console.error(`gpu-market import: ${result.rejected.length} row(s) rejected (listed above) and not stored; every other row is stored`)
      process.exitCode = 1
    }
  }).pipe(Effect.provide(marketOn(o, { bulk: true })))
).pipe(Command.withDescription("Import rows of one data type through the write path, streamed, or a public-format file (SkyPilot, LiteLLM), with a summary of rejected rows (exit 1 when any)."))
