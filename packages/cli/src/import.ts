import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import {
  AdministeredValue, type BulkLoad, FxRateRecord, GpuCatalogRecord, HardwarePriceIngest, HardwarePriceObservation, importReport, type ImportReport, IndexIngest,
  InvalidRecords, judged, LlmTokenPriceIngest, notTheFormat, LlmTokenPriceObservation, MIN_IMPORT_BATCH, type Quarantined, type QuarantineRule, ReferenceDataIngest,
  refusedRecords, type Rejection, RentalPriceIngest, RentalPriceObservation, sniffFormat, type StorageUnavailable, TransactionDeal, TransactionIngest, writeRejectionReason,
  describeCounts
} from "@gpu-market/core"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { open } from "node:fs/promises"
import { setFlagsFromString } from "node:v8"
import type * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type { ProgressMark } from "@gpu-market/core/storage"
import { formatOptions, importFormat, isPublicFormat, PUBLIC_FORMATS } from "./formats.js"
import { finishImport, importReportOptions, resolvePolicy } from "./import-report.js"
import { oneOf } from "./checked.js"
import { described } from "./help.js"
import { UsageError } from "./output.js"
import { makeProgress } from "./progress.js"
import { csvRows, jsonLines, scanFile } from "./read.js"
import { storageOptions } from "./options.js"
import { marketOn } from "./storage.js"

/**
 * `gpu-market import <file> --type …`: rows of one data type from JSON Lines or CSV, streamed
 * through the type's write path in batches. A batch is atomic, so a batch with bad rows is
 * retried without them: every good row is stored, every bad one rejected (or quarantined) with
 * its line and reason.
 *
 * Each batch's write also records how far the file got (a `ProgressMark` named by the type and
 * the file's SHA-256), in the same transaction as the batch's rows: an import run again on the
 * same store, after a kill or to completion, skips the lines an earlier run stored.
 */

/** The importable types: the write path of each and the schema of one input row. */
type Writers = RentalPriceIngest | HardwarePriceIngest | LlmTokenPriceIngest | TransactionIngest | IndexIngest | ReferenceDataIngest

/**
 * What a write said of the rows it accepted: those that changed nothing (the price already in
 * force, or a repeat), and the pieces of hardware text that were no vocabulary term, per field.
 */
interface Unwritten {
  readonly unchanged: number
  readonly duplicate: number
  readonly droppedTerms?: Readonly<Record<string, number>>
}

interface ImportType {
  readonly schema: Schema.Schema.AnyNoContext
  /** Writes rows and, in the same transaction, the progress mark; returns how many of them changed nothing. */
  readonly write: (rows: ReadonlyArray<unknown>, mark: ProgressMark) => Effect.Effect<Unwritten, InvalidRecords | StorageUnavailable, Writers>
  readonly mark: (name: string) => Effect.Effect<Option.Option<string>, StorageUnavailable, Writers>
  /** For the life of the scope, an import of about `rows` rows: its batch size, and the load's end to run after the last batch. */
  readonly load: (rows: number) => Effect.Effect<BulkLoad, StorageUnavailable, Writers | Scope.Scope>
}

// A type whose write path offers a bulk load sets its own batch (on SQLite a batch of rental
// prices is one transaction of tens of thousands of rows).
const plainLoad: ImportType["load"] = () => Effect.succeed({ batch: MIN_IMPORT_BATCH, end: Effect.void })

const NOTHING_UNWRITTEN: Unwritten = { unchanged: 0, duplicate: 0 }

/** What a versioned write path's summary says changed nothing. */
const versioned = (s: { readonly unchanged: number; readonly duplicates: number }): Unwritten => ({ unchanged: s.unchanged, duplicate: s.duplicates })

/** A type's write path as an import uses it: its write with a mark, what its summary says changed nothing, and its marks. */
const importType = <I extends Writers, S>(
  schema: Schema.Schema.AnyNoContext,
  service: Effect.Effect<I, never, I>,
  write: (ingest: I, rows: ReadonlyArray<unknown>, mark: ProgressMark) => Effect.Effect<S, InvalidRecords | StorageUnavailable>,
  mark: (ingest: I) => (name: string) => Effect.Effect<Option.Option<string>, StorageUnavailable>,
  unwritten: (summary: S) => Unwritten = () => NOTHING_UNWRITTEN,
  load: ImportType["load"] = plainLoad
): ImportType => ({
  schema,
  write: (rows, m) => Effect.flatMap(service, (i) => Effect.map(write(i, rows, m), unwritten)),
  mark: (name) => Effect.flatMap(service, (i) => mark(i)(name)),
  load
})

const TYPES: Record<"rental" | "hardware" | "llm" | "transactions" | "indexes" | "fx" | "gpus", ImportType> = {
  rental: importType(
    RentalPriceObservation, RentalPriceIngest, (i, rows, mark) => i.ingest(rows, { mark }), (i) => i.mark, versioned,
    (rows) => Effect.flatMap(RentalPriceIngest, (i) => i.bulkLoad(rows))
  ),
  hardware: importType(
    HardwarePriceObservation, HardwarePriceIngest, (i, rows, mark) => i.ingest(rows, { mark }), (i) => i.mark,
    (s) => ({ unchanged: 0, duplicate: 0, droppedTerms: s.droppedTerms })
  ),
  llm: importType(LlmTokenPriceObservation, LlmTokenPriceIngest, (i, rows, mark) => i.ingest(rows, { mark }), (i) => i.mark, versioned),
  transactions: importType(TransactionDeal, TransactionIngest, (i, rows, mark) => i.record(rows, { mark }), (i) => i.mark, (s) => ({ unchanged: 0, duplicate: s.duplicates })),
  indexes: importType(AdministeredValue, IndexIngest, (i, rows, mark) => i.publish(rows, { mark }), (i) => i.mark),
  fx: importType(FxRateRecord, ReferenceDataIngest, (i, rows, mark) => i.fxRates(rows, { mark }), (i) => i.mark),
  gpus: importType(GpuCatalogRecord, ReferenceDataIngest, (i, rows, mark) => i.gpus(rows, { mark }), (i) => i.mark)
}

/** The data types a file of rows can hold, as `--type` and a sources file's `type` name them. */
export const ROW_TYPES = ["rental", "hardware", "transactions", "llm", "indexes", "fx", "gpus"] as const satisfies ReadonlyArray<keyof typeof TYPES>
export type TypeName = keyof typeof TYPES

/** An import that storage trouble stopped: the trouble, and what the import had stored by then. */
export class ImportStopped extends Data.TaggedError("ImportStopped")<{ readonly message: string; readonly cause: StorageUnavailable }> {}

/** What a row import did: what became of every row it read (core's `ImportReport`), and where it resumed. */
export interface RowImportReport extends ImportReport {
  /** The last line an earlier run of the same file stored through: this run skipped the lines up to it. */
  readonly resumedAfter: number | null
  /** Hardware: pieces of text in the descriptive fields that were no vocabulary term, per field; not stored. */
  readonly droppedTerms: Readonly<Record<string, number>>
}

/**
 * Streams a file of `type` rows through its write path; bad rows are rejected (or quarantined,
 * when a rule of `quarantine` expects them), good ones stored. A first pass hashes the file
 * (naming its progress mark) and counts its rows, so the progress display counts rows; it reaches
 * the total only once the last row is written.
 */
export const importFile = (path: string, type: TypeName, format: "jsonl" | "csv", quarantine: ReadonlyArray<QuarantineRule> = []) =>
  Effect.scoped(Effect.gen(function* () {
    const { schema, write, mark, load } = TYPES[type]
    const scan = yield* Effect.promise(() => scanFile(path, format))
    const markName = `import:${type}:${scan.hash}`
    const resumedAfter = Option.getOrNull(Option.map(yield* mark(markName), Number))
    const { batch: batchSize, end } = yield* load(Math.max(0, scan.rows - (resumedAfter ?? 0)))
    const next = format === "csv" ? csvRows(path, schema) : jsonLines(path)
    const label = `importing ${type}`
    const progress = makeProgress(process.stderr, "rows")
    const rejections: Array<Rejection> = []
    const quarantined: Array<Quarantined> = []
    const judge = (rejection: Rejection, row: unknown) => {
      const outcome = judged(quarantine, rejection, typeof row === "object" && row !== null ? row as Readonly<Record<string, unknown>> : {})
      if ("quarantined" in outcome) quarantined.push(outcome.quarantined)
      else rejections.push(outcome.rejection)
    }
    let accepted = 0
    let unchanged = 0
    let duplicate = 0
    const droppedTerms: Record<string, number> = {}
    // Rows taken from the file (skipped ones of a resumed import too), all of them written or rejected.
    let done = 0
    const shown = (n: number) => Math.min(n, Math.max(0, scan.rows - 1))

    /** Writes a batch, and marks the file done through `through` with its last write. */
    const submit = (batch: ReadonlyArray<{ readonly line: number; readonly value: unknown }>, through: number) =>
      Effect.gen(function* () {
        let pending = batch
        while (pending.length > 0) {
          const result = yield* Effect.either(write(pending.map((r) => r.value), { name: markName, value: String(through) }))
          if (result._tag === "Right") {
            accepted += pending.length
            unchanged += result.right.unchanged
            duplicate += result.right.duplicate
            for (const [field, n] of Object.entries(result.right.droppedTerms ?? {})) droppedTerms[field] = (droppedTerms[field] ?? 0) + n
            return
          }
          const error = result.left
          if (!(error instanceof InvalidRecords)) return yield* Effect.fail(error)
          const bad = refusedRecords(error, pending.length)
          for (const [i, message] of bad) judge({ line: pending[i]!.line, reason: writeRejectionReason(message), message }, pending[i]!.value)
          pending = pending.filter((_, i) => !bad.has(i))
        }
      })

    const reportSoFar = (): RowImportReport => ({
      ...importReport({ stored: accepted - unchanged - duplicate, unchanged, duplicate, skipped: {}, rejections, quarantined }),
      resumedAfter,
      droppedTerms
    })
    // The last line a write stored through: what an import run again resumes after.
    let storedThrough = resumedAfter ?? 0
    yield* progress.update(label, 0, scan.rows)
    let batch: Array<{ line: number; value: unknown }> = []
    let line = 0
    const writeAll = Effect.gen(function* () {
      for (let rows = yield* Effect.promise(next); rows !== undefined; rows = yield* Effect.promise(next)) {
        for (const row of rows) {
          line = row.line
          done++
          if (resumedAfter !== null && line <= resumedAfter) continue
          if ("error" in row) judge({ line, reason: row.reason, message: row.error }, undefined)
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
        : `${e.detail}. Stored before it: ${describeCounts(reportSoFar().counts)}, through line ${storedThrough}; the import run again resumes after line ${storedThrough}`,
      cause: e
    }))
    yield* Effect.catchTag(end, "StorageUnavailable", (e) => new ImportStopped({
      message: `${e.detail}. Every row is stored (${describeCounts(reportSoFar().counts)}), but the indexes the import held back are not built yet: the next open of the file builds them`,
      cause: e
    }))
    yield* progress.update(label, done, done)
    yield* progress.finish
    return reportSoFar()
  }))

/** Bytes of a file's start a row import looks at to tell a file in another format. */
const HEAD_BYTES = 64 * 1024

/**
 * Refuses, as a usage error, a file of rows whose start shows another format (a SkyPilot
 * catalog or LiteLLM's table given with `--type`, CSV read as JSON Lines): every line of it would
 * be rejected for what is a mistake of the command line.
 */
const checkRowFormat = (path: string, format: "jsonl" | "csv") =>
  Effect.gen(function* () {
    const head = yield* Effect.promise(async () => {
      const file = await open(path)
      try {
        const { buffer, bytesRead } = await file.read(Buffer.alloc(HEAD_BYTES), 0, HEAD_BYTES, 0)
        return buffer.toString("utf8", 0, bytesRead)
      } finally {
        await file.close()
      }
    })
    const looks = sniffFormat(head)
    if (looks !== undefined && looks !== format) {
      return yield* new UsageError({ message: notTheFormat(format, undefined, head) })
    }
  })

const formatOf = (path: string, given: Option.Option<"jsonl" | "csv">) =>
  Option.getOrElse(given, () => (/\.csv$/i.test(path) ? "csv" as const : "jsonl" as const))

const isRowFormat = (format: string): format is "jsonl" | "csv" => !isPublicFormat(format)

/**
 * How far V8 lets the heap of an import's process grow past what stayed live at its last full
 * collection, percent (V8's `--heap-growing-percent`; by default it picks up to 300). An import's
 * batch lives across many young collections, so its garbage is promoted and waits for the next
 * full collection: with V8's default, a streamed SkyPilot import's heap grew to four times what
 * stayed live (BENCHMARKS.md, (k)).
 */
const IMPORT_HEAP_GROWING_PERCENT = 50

/** `gpu-market import`. */
export const importCommand = Command.make("import", {
  file: Args.file({ name: "file", exists: "yes" }).pipe(Args.withDescription("a .jsonl or .csv file of rows, a SkyPilot vms.csv or LiteLLM's table")),
  type: oneOf("type", "type", ROW_TYPES).pipe(
    Options.withDescription(`the rows' type: ${ROW_TYPES.join(", ")}`),
    Options.optional
  ),
  format: oneOf("format", "format", ["jsonl", "csv", ...PUBLIC_FORMATS] as const).pipe(
    Options.withDescription(`${["jsonl", "csv", ...PUBLIC_FORMATS].join(", ")}; default by the file's extension`),
    Options.optional
  ),
  ...formatOptions,
  ...importReportOptions,
  ...storageOptions
}, (o) =>
  Effect.gen(function* () {
    // Read by V8 at each full collection, so it applies from the next one on.
    setFlagsFromString(`--heap-growing-percent=${IMPORT_HEAP_GROWING_PERCENT}`)
    const policy = yield* resolvePolicy(o)
    const format = Option.getOrUndefined(o.format)
    const run = Effect.gen(function* () {
      if (format !== undefined && isPublicFormat(format)) return yield* importFormat(o.file, format, o, policy.quarantine)
      const type = yield* Option.match(o.type, { onNone: () => new UsageError({ message: "--type is required, unless --format is skypilot or litellm" }), onSome: Effect.succeed })
      const rowFormat = formatOf(o.file, Option.filter(o.format, isRowFormat))
      yield* checkRowFormat(o.file, rowFormat)
      const report = yield* importFile(o.file, type, rowFormat, policy.quarantine)
      const dropped = Object.entries(report.droppedTerms).filter(([, n]) => n > 0)
      return {
        report,
        extra: [
          ...type !== "hardware" ? [] : [
            `dropped terms ${dropped.reduce((n, [, c]) => n + c, 0)}${dropped.length === 0 ? "" : ` (${dropped.map(([field, n]) => `${field} ${n}`).join(", ")})`}: ` +
            "descriptive text that is no term of the hardware vocabulary, not stored"
          ],
          ...report.resumedAfter === null ? [] : [`resumed after line ${report.resumedAfter}: an earlier import of this file went that far (it reported the rows it rejected)`]
        ]
      }
    })
    const { report, extra } = yield* Effect.provide(run, marketOn(o, { bulk: true }, policy.bounds))
    yield* finishImport(report, o, extra)
  })
).pipe(Command.withDescription(described(
  `Import a file of rows, streamed through the write path, or a SkyPilot or LiteLLM file.
It prints what became of every entry, rejections by line. --format skypilot needs --vendor.
Exit 0 when all were stored or accounted for, 1 when any was rejected, 2 for a bad command line.`,
  "gpu-market import prices.csv --type rental --db ./data/market.db",
  "gpu-market import vms.csv --format skypilot --vendor lambda --snapshot"
)))
