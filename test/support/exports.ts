import { assert } from "@effect/vitest"
import { type ExportColumn, exportColumns, type DataType, parseDateTime } from "@gpu-market/core"
import { parseCsvText } from "@gpu-market/core/adapters"
import { parquetReadObjects } from "hyparquet"
import { compressors } from "hyparquet-compressors"

/**
 * Reading an export's file back, each format with a reader other than its writer (Parquet with
 * hyparquet), into what the rows look like there, so a test compares a file with paged rows.
 */

const utf8 = new TextDecoder()

/** One file's bytes, joined. */
export const joined = (parts: ReadonlyArray<Uint8Array>): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

/** A row's value as a CSV field holds it once parsed: text as is, a number as JSON prints it, null as nothing. */
const csvText = (value: unknown): string =>
  value === null ? "" : typeof value === "string" ? value : typeof value === "object" ? JSON.stringify(value) : String(value)

/** Asserts that a CSV file holds the header of `dataType`'s fields and exactly `rows`, in order. */
export const assertCsvHolds = (dataType: DataType, bytes: Uint8Array, rows: ReadonlyArray<Readonly<Record<string, unknown>>>) => {
  const text = utf8.decode(bytes)
  const names = exportColumns(dataType).map((c) => c.name)
  assert.isTrue(text.length === 0 || text.endsWith("\r\n"), "every CSV line ends with CRLF")
  const records = parseCsvText(text).map((r) => {
    if (r instanceof Error) throw r
    return r.fields
  })
  assert.deepStrictEqual(records[0], names)
  assert.deepStrictEqual(records.slice(1), rows.map((row) => names.map((n) => csvText(row[n]))))
}

/** Asserts that a JSON Lines file holds exactly `rows`, in order, as the API serialises them. */
export const assertJsonlHolds = (bytes: Uint8Array, rows: ReadonlyArray<unknown>) => {
  const text = utf8.decode(bytes)
  assert.strictEqual(text, rows.map((r) => JSON.stringify(r) + "\n").join(""))
}

/** A Parquet value as a row holds it: an instant in the stored form, an integer as a number, JSON text as its value. */
const fromParquet = (column: ExportColumn, value: unknown, original: unknown): unknown => {
  if (value === null || value === undefined) return null
  if (column.instant) {
    // hyparquet reads a timestamp as a Date, to the millisecond: the file must hold the row's instant to the microsecond.
    assert.instanceOf(value, Date)
    assert.strictEqual((value as Date).getTime(), Math.floor(parseDateTime(original as string)! / 1000))
    return original
  }
  if (typeof value === "bigint") return Number(value)
  if (column.kind === "list") return typeof value === "string" ? JSON.parse(value) : value
  return value
}

/** Asserts that a Parquet file, read by hyparquet, holds exactly `rows` with typed columns. */
export const assertParquetHolds = async (dataType: DataType, bytes: Uint8Array, rows: ReadonlyArray<Readonly<Record<string, unknown>>>) => {
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer
  const read = await parquetReadObjects({ file, compressors })
  const columns = exportColumns(dataType)
  assert.strictEqual(read.length, rows.length)
  read.forEach((r, i) => {
    const row = rows[i]!
    const back = Object.fromEntries(columns.map((c) => [c.name, fromParquet(c, r[c.name], row[c.name])]))
    assert.deepStrictEqual(back, { ...row })
  })
}
