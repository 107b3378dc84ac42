import { compress, init as initZstd } from "@bokuweb/zstd-wasm"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"
import * as Stream from "effect/Stream"
import { ByteWriter, ParquetWriter } from "hyparquet-writer"
import type { DataType } from "../auth/principal.js"
import { parseDateTime } from "../query/time.js"
import { HardwarePriceRow } from "../schema/hardware-price.js"
import { IndexValueRow } from "../schema/indexes.js"
import { LlmTokenPriceRow } from "../schema/llm-token-price.js"
import { RentalPriceRow } from "../schema/rental-price.js"
import { TransactionRow } from "../schema/transaction.js"
import { type FieldDef, fieldsOf, type RowSchema } from "../storage/table.js"
import type { RowExport } from "./rows.js"

/**
 * The file formats of an export, each written from the rows as the API serialises them: CSV
 * (RFC 4180), JSON Lines (each line a row's JSON) and Parquet (typed columns, zstd).
 */

/** A file format of an export. */
export type ExportFormat = "csv" | "jsonl" | "parquet"

/**
 * The version of the columns an export writes (`exportColumns`): a file of another version may
 * name, type or order them differently. Raised whenever a type's row changes.
 */
export const EXPORT_SCHEMA_VERSION = 1

/** Every export format, in the order the docs list them. */
export const exportFormats: ReadonlyArray<ExportFormat> = ["csv", "jsonl", "parquet"]

/** Each format's media type and file extension. */
export const exportMedia: Readonly<Record<ExportFormat, { readonly mediaType: string; readonly extension: string }>> = {
  csv: { mediaType: "text/csv; charset=utf-8", extension: "csv" },
  jsonl: { mediaType: "application/x-ndjson", extension: "jsonl" },
  parquet: { mediaType: "application/vnd.apache.parquet", extension: "parquet" }
}

/** One column of an export: a row field, its kind, and whether it holds an instant (`valid_from`). */
export interface ExportColumn extends FieldDef {
  /** The stored fixed-width instant (`StoredInstant`): a Parquet timestamp, in microseconds. */
  readonly instant: boolean
}

const isStoredInstant = (ast: AST.AST): boolean =>
  ast._tag === "Union"
    ? ast.types.some(isStoredInstant)
    : Option.exists(AST.getBrandAnnotation(ast), (brands) => brands.includes("StoredInstant"))

const columnsOf = (row: RowSchema): ReadonlyArray<ExportColumn> =>
  fieldsOf(row).map((field) => {
    const schema = row.fields[field.name]
    return { ...field, instant: Schema.isSchema(schema) && isStoredInstant(Schema.typeSchema(schema).ast) }
  })

const columnsByType: Readonly<Record<DataType, ReadonlyArray<ExportColumn>>> = {
  gpu_rental_prices: columnsOf(RentalPriceRow),
  gpu_hardware_prices: columnsOf(HardwarePriceRow),
  gpu_rental_transactions: columnsOf(TransactionRow),
  gpu_rental_indexes: columnsOf(IndexValueRow.from),
  llm_token_prices: columnsOf(LlmTokenPriceRow)
}

/** The columns of a data type's export: the API's row fields, in the order rows serialise them. */
export const exportColumns = (dataType: DataType): ReadonlyArray<ExportColumn> => columnsByType[dataType]

const utf8 = new TextEncoder()

const NEEDS_QUOTES = /[",\r\n]/

/**
 * One CSV field: text as it is (quoted, its quotes doubled, when it holds a comma, a quote or a
 * line break), a number as JSON prints it, a boolean as `true`/`false`, a list as its JSON, and
 * null as nothing.
 */
const csvField = (value: unknown): string => {
  if (value === null || value === undefined) return ""
  const text = typeof value === "string" ? value : typeof value === "object" ? JSON.stringify(value) : String(value)
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll("\"", "\"\"")}"` : text
}

const csvLine = (names: ReadonlyArray<string>, row: Readonly<Record<string, unknown>>): string => {
  let line = ""
  for (let i = 0; i < names.length; i++) line += (i === 0 ? "" : ",") + csvField(row[names[i]!])
  return line + "\r\n"
}

type Rows = Iterable<Readonly<Record<string, unknown>>>

/** The text of CSV and JSON Lines: what comes before the rows, and the lines of some rows. */
interface TextFormat {
  readonly head: string
  readonly lines: (rows: Rows) => string
}

/** CSV: a header of the API's field names, then one line per row, lines ending CRLF (RFC 4180). */
const csv = (columns: ReadonlyArray<ExportColumn>): TextFormat => {
  const names = columns.map((c) => c.name)
  return {
    head: names.join(",") + "\r\n",
    lines: (rows) => {
      let text = ""
      for (const row of rows) text += csvLine(names, row)
      return text
    }
  }
}

/** JSON Lines: each row's JSON, as a page's `data` holds it, on a line of its own. */
const jsonl: TextFormat = {
  head: "",
  lines: (rows) => {
    let text = ""
    for (const row of rows) text += JSON.stringify(row) + "\n"
    return text
  }
}

const textStream = <E>(format: TextFormat, rows: Stream.Stream<Readonly<Record<string, unknown>>, E>): Stream.Stream<Uint8Array, E> =>
  Stream.concat(
    format.head === "" ? Stream.empty : Stream.succeed(utf8.encode(format.head)),
    Stream.mapChunks(rows, (chunk) => Chunk.of(utf8.encode(format.lines(chunk))))
  )

/** Rows of a Parquet row group: a group's columns are held whole until it is written. */
export const PARQUET_ROW_GROUP = 25_000

/** The zstd level of a Parquet export: zstd's default, a good ratio at a speed near snappy's. */
const ZSTD_LEVEL = 3

/** The zstd compressor's WebAssembly module, instantiated once per process, on the first Parquet export. */
const zstdReady = Effect.runSync(Effect.cached(Effect.promise(() => initZstd())))

type ParquetType = { readonly type: "BOOLEAN" | "INT64" | "DOUBLE" | "BYTE_ARRAY" } & Readonly<Record<string, unknown>>

/** A column's Parquet type: booleans, 64-bit integers, doubles, timestamps (UTC, microseconds), UTF-8 text, and lists as JSON. */
const parquetType = (c: ExportColumn): ParquetType => {
  if (c.instant) return { type: "INT64", logical_type: { type: "TIMESTAMP", isAdjustedToUTC: true, unit: "MICROS" } }
  switch (c.kind) {
    case "boolean": return { type: "BOOLEAN" }
    case "numeric": return c.integer ? { type: "INT64" } : { type: "DOUBLE" }
    case "list": return { type: "BYTE_ARRAY", converted_type: "JSON" }
    case "text": return { type: "BYTE_ARRAY", converted_type: "UTF8" }
  }
}

/** A value of a column as the Parquet writer takes it. */
const parquetValue = (c: ExportColumn, value: unknown): unknown => {
  if (value === null || value === undefined) return null
  if (c.instant) return BigInt(parseDateTime(value as string)!)
  if (c.kind === "numeric" && c.integer) return BigInt(value as number)
  if (c.kind === "list") return JSON.stringify(value)
  return value
}

/**
 * Parquet: one row group per `PARQUET_ROW_GROUP` rows, each handed on as soon as it is written,
 * so only one group is ever held; the footer after the last. Columns are zstd-compressed, and
 * the file's key-value metadata carries `extra` (the watermark, say).
 */
const parquet = <E>(
  columns: ReadonlyArray<ExportColumn>,
  rows: Stream.Stream<Readonly<Record<string, unknown>>, E>,
  extra: Readonly<Record<string, string>>
): Stream.Stream<Uint8Array, E> =>
  Stream.unwrap(Effect.map(zstdReady, () => {
    const out = new ByteWriter()
    const writer = new ParquetWriter({
      writer: out,
      schema: [
        { name: "root", num_children: columns.length },
        ...columns.map((c) => ({ name: c.name, repetition_type: c.nullable ? "OPTIONAL" as const : "REQUIRED" as const, ...parquetType(c) }))
      ],
      codec: "ZSTD",
      compressors: { ZSTD: (bytes) => compress(bytes, ZSTD_LEVEL) },
      kvMetadata: Object.entries(extra).map(([key, value]) => ({ key, value })),
      createdBy: "gpu-market"
    })
    // What the writer wrote since the last call, copied out, its buffer then reused: the writer's
    // offsets count every byte of the file, its buffer only those not yet handed on.
    const drain = () => {
      const bytes = out.getBytes().slice()
      out.index = 0
      return bytes
    }
    const group = (chunk: Chunk.Chunk<Readonly<Record<string, unknown>>>) => {
      const batch = Chunk.toReadonlyArray(chunk)
      // Synchronous: the writer returns a promise only for a sink with a `flush`, which `out` has not.
      void writer.write({
        columnData: columns.map((c) => ({ name: c.name, data: batch.map((row) => parquetValue(c, row[c.name])) })),
        rowGroupSize: batch.length
      })
      return Chunk.of(drain())
    }
    return Stream.concat(
      Stream.mapChunks(Stream.rechunk(rows, PARQUET_ROW_GROUP), (chunk) => Chunk.isEmpty(chunk) ? Chunk.empty() : group(chunk)),
      Stream.sync(() => {
        void writer.finish()
        return drain()
      })
    )
  }))

/** What a file says of the export it holds, where its format has a place for it (Parquet's key-value metadata). */
const metadataOf = (exported: Pick<RowExport<unknown>, "endpointPath" | "watermark">): Readonly<Record<string, string>> => ({
  "gpu-market.endpoint": exported.endpointPath,
  "gpu-market.watermark": exported.watermark
})

/** An export's rows as the bytes of a file of `format`, streamed as the rows are read. */
export const encodeExport = <E>(format: ExportFormat, exported: RowExport<Readonly<Record<string, unknown>>, E>): Stream.Stream<Uint8Array, E> => {
  const columns = exportColumns(exported.dataType)
  switch (format) {
    case "csv": return textStream(csv(columns), exported.rows)
    case "jsonl": return textStream(jsonl, exported.rows)
    case "parquet": return parquet(columns, exported.rows, metadataOf(exported))
  }
}

/** What an export would hold, measured without writing it: its rows, and its bytes in each format. */
export interface ExportEstimate {
  readonly rows: number
  /**
   * Bytes of the file in each format. CSV and JSON Lines are exact at the watermark; Parquet is
   * the size of the export's first row group (up to `PARQUET_ROW_GROUP` rows, written as a file)
   * scaled to every row, so exact for an export of one group and a guide beyond.
   */
  readonly bytes: Readonly<Record<ExportFormat, number>>
}

/** Counts the rows of an export and the bytes each format would write, holding at most one Parquet row group. */
export const estimateExport = <E>(exported: RowExport<Readonly<Record<string, unknown>>, E>): Effect.Effect<ExportEstimate, E> =>
  Effect.gen(function* () {
    const columns = exportColumns(exported.dataType)
    const text = { csv: csv(columns), jsonl }
    const sample: Array<Readonly<Record<string, unknown>>> = []
    const sizes = yield* Stream.runFold(Stream.chunks(exported.rows), { rows: 0, csv: Buffer.byteLength(text.csv.head), jsonl: 0 }, (acc, chunk) => {
      const room = PARQUET_ROW_GROUP - sample.length
      if (room > 0) sample.push(...Chunk.toReadonlyArray(Chunk.take(chunk, room)))
      return {
        rows: acc.rows + chunk.length,
        csv: acc.csv + Buffer.byteLength(text.csv.lines(chunk)),
        jsonl: acc.jsonl + Buffer.byteLength(text.jsonl.lines(chunk))
      }
    })
    const sampleBytes = yield* Stream.runFold(parquet(columns, Stream.fromIterable(sample), metadataOf(exported)), 0, (n, bytes) => n + bytes.length)
    const parquetBytes = sample.length === 0 || sizes.rows === sample.length ? sampleBytes : Math.round(sampleBytes * sizes.rows / sample.length)
    return { rows: sizes.rows, bytes: { csv: sizes.csv, jsonl: sizes.jsonl, parquet: parquetBytes } }
  })
