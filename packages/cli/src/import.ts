import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import {
  AdministeredValue, HardwarePriceIngest, HardwarePriceObservation, IndexIngest, LlmTokenPriceIngest, InvalidRecords, LlmTokenPriceObservation, RentalPriceIngest, RentalPriceObservation, type StorageUnavailable, TransactionDeal, TransactionIngest
} from "@gpu-market/core"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Schema from "effect/Schema"
import type { ProgressMark } from "@gpu-market/core/storage"
import { createHash } from "node:crypto"
import { createReadStream, statSync } from "node:fs"
import { createInterface } from "node:readline"
import { parseCsv, CsvSyntaxError } from "./csv.js"
import { makeProgress } from "./progress.js"
import { csvObject, fieldKinds } from "./records.js"
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

/** Rows per write batch: big enough to amortise a commit, small enough to stream. */
const BATCH = 500

/** The importable types: the write path of each and the schema of one input row. */
type Writers = RentalPriceIngest | HardwarePriceIngest | LlmTokenPriceIngest | TransactionIngest | IndexIngest

interface ImportType {
  readonly schema: Schema.Schema.AnyNoContext
  /** Writes rows and, in the same transaction, the progress mark. */
  readonly write: (rows: ReadonlyArray<unknown>, mark: ProgressMark) => Effect.Effect<unknown, InvalidRecords | StorageUnavailable, Writers>
  readonly mark: (name: string) => Effect.Effect<Option.Option<string>, StorageUnavailable, Writers>
}

/** A type's write path as an import uses it: its write with a mark, and its marks. */
const importType = <I extends Writers>(
  schema: Schema.Schema.AnyNoContext,
  service: Effect.Effect<I, never, I>,
  write: (ingest: I, rows: ReadonlyArray<unknown>, mark: ProgressMark) => Effect.Effect<unknown, InvalidRecords | StorageUnavailable>,
  mark: (ingest: I) => (name: string) => Effect.Effect<Option.Option<string>, StorageUnavailable>
): ImportType => ({
  schema,
  write: (rows, m) => Effect.flatMap(service, (i) => write(i, rows, m)),
  mark: (name) => Effect.flatMap(service, (i) => mark(i)(name))
})

const TYPES: Record<"rental" | "hardware" | "llm" | "transactions" | "indexes", ImportType> = {
  rental: importType(RentalPriceObservation, RentalPriceIngest, (i, rows, mark) => i.ingest(rows, { mark }), (i) => i.mark),
  hardware: importType(HardwarePriceObservation, HardwarePriceIngest, (i, rows, mark) => i.ingest(rows, { mark }), (i) => i.mark),
  llm: importType(LlmTokenPriceObservation, LlmTokenPriceIngest, (i, rows, mark) => i.ingest(rows, { mark }), (i) => i.mark),
  transactions: importType(TransactionDeal, TransactionIngest, (i, rows, mark) => i.record(rows, { mark }), (i) => i.mark),
  indexes: importType(AdministeredValue, IndexIngest, (i, rows, mark) => i.publish(rows, { mark }), (i) => i.mark)
}

type TypeName = keyof typeof TYPES

/** A row read from the file, or why it could not be read. */
type Read = { readonly line: number; readonly value: unknown } | { readonly line: number; readonly error: string }

async function* jsonLines(path: string): AsyncGenerator<Read> {
  let line = 0
  for await (const text of createInterface({ input: createReadStream(path, "utf8"), crlfDelay: Infinity })) {
    line++
    if (text.trim() === "") continue
    try {
      yield { line, value: JSON.parse(text) }
    } catch (e) {
      yield { line, error: `not JSON: ${(e as Error).message}` }
    }
  }
}

async function* csvRows(path: string, schema: Schema.Schema.AnyNoContext): AsyncGenerator<Read> {
  const kinds = fieldKinds(schema)
  let header: ReadonlyArray<string> | undefined
  for await (const record of parseCsv(createReadStream(path, "utf8"))) {
    if (record instanceof CsvSyntaxError) {
      yield { line: record.line, error: `not valid CSV: ${record.message}` }
      continue
    }
    if (header === undefined) {
      header = record.fields.map((f) => f.trim())
      continue
    }
    const value = csvObject(header, record.fields, kinds)
    yield typeof value === "string" ? { line: record.line, error: value } : { line: record.line, value }
  }
}

/** What an import did. */
export interface ImportSummary {
  readonly accepted: number
  readonly rejected: ReadonlyArray<{ readonly line: number; readonly message: string }>
  /** The last line an earlier run of the same file stored through: this run skipped the lines up to it. */
  readonly resumedAfter: number | null
}

/** The SHA-256 of a file's bytes: an import's progress belongs to the file, wherever it lies. */
const fileHash = (path: string): Promise<string> =>
  new Promise((resolve, reject) => {
    const hash = createHash("sha256")
    createReadStream(path).on("data", (chunk) => hash.update(chunk)).on("error", reject).on("end", () => resolve(hash.digest("hex")))
  })

/** Streams a file of `type` rows through its write path; bad rows are reported, good ones stored. */
export const importFile = (path: string, type: TypeName, format: "jsonl" | "csv") =>
  Effect.gen(function* () {
    const { schema, write, mark } = TYPES[type]
    const markName = `import:${type}:${yield* Effect.promise(() => fileHash(path))}`
    const resumedAfter = Option.getOrNull(Option.map(yield* mark(markName), Number))
    const rows = format === "csv" ? csvRows(path, schema) : jsonLines(path)
    const size = statSync(path).size
    const progress = makeProgress()
    const rejected: Array<{ line: number; message: string }> = []
    let accepted = 0
    let read = 0

    /** Writes a batch, and marks the file done through `through` with its last write. */
    const submit = (batch: ReadonlyArray<{ readonly line: number; readonly value: unknown }>, through: number) =>
      Effect.gen(function* () {
        let pending = batch
        while (pending.length > 0) {
          const rows = pending.map((r) => r.value)
          const result = yield* Effect.either(write(rows, { name: markName, value: String(through) }))
          if (result._tag === "Right") {
            accepted += pending.length
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

    let batch: Array<{ line: number; value: unknown }> = []
    let line = 0
    const iterator = rows[Symbol.asyncIterator]()
    while (true) {
      const next = yield* Effect.promise(() => iterator.next())
      if (next.done === true) break
      const row = next.value
      line = row.line
      if (resumedAfter !== null && line <= resumedAfter) continue
      read++
      if ("error" in row) rejected.push({ line, message: row.error })
      else batch.push(row)
      if (batch.length >= BATCH) {
        yield* submit(batch, line)
        batch = []
        yield* progress.update(`importing ${type}`, Math.min(size, Math.round(size * 0.99)), size)
      }
    }
    if (batch.length > 0) yield* submit(batch, line)
    yield* progress.update(`importing ${type}`, size, size)
    yield* progress.finish
    const summary: ImportSummary = { accepted, rejected: rejected.sort((a, b) => a.line - b.line), resumedAfter }
    return { ...summary, read }
  })

const formatOf = (path: string, given: Option.Option<"jsonl" | "csv">) =>
  Option.getOrElse(given, () => (/\.csv$/i.test(path) ? "csv" as const : "jsonl" as const))

/** `gpu-market import`. */
export const importCommand = Command.make("import", {
  file: Args.file({ name: "file", exists: "yes" }).pipe(Args.withDescription("the JSON Lines (.jsonl) or CSV (.csv) file to import")),
  type: Options.choice("type", ["rental", "hardware", "transactions", "llm", "indexes"] as const).pipe(
    Options.withDescription("data type of the rows: rental (price observations), hardware (listing observations), transactions (deals), llm (token price observations), indexes (administered index values)")
  ),
  format: Options.choice("format", ["jsonl", "csv"] as const).pipe(
    Options.withDescription("file format; default from the extension (.csv is CSV, anything else JSON Lines)"),
    Options.optional
  ),
  ...storageOptions
}, (o) =>
  Effect.gen(function* () {
    const result = yield* importFile(o.file, o.type, formatOf(o.file, o.format))
    const lines = [`accepted ${result.accepted}, rejected ${result.rejected.length}`]
    if (result.resumedAfter !== null) {
      lines.push(`resumed after line ${result.resumedAfter}: an earlier import of this file went that far (it reported the rows it rejected)`)
    }
    for (const r of result.rejected) lines.push(`  line ${r.line}: ${r.message}`)
    yield* Console.log(lines.join("\n"))
    if (result.rejected.length > 0) process.exitCode = 1
  }).pipe(Effect.provide(marketOn(o, { bulk: true })))
).pipe(Command.withDescription("Import rows of one data type through the write path, streamed, with a summary of rejected rows (exit 1 when any)."))
