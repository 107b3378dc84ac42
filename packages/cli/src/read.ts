import { createHash } from "node:crypto"
import { createReadStream } from "node:fs"
import type * as Schema from "effect/Schema"
import { csvReader, type CsvRecord, CsvSyntaxError } from "@gpu-market/core/adapters"
import { csvObject, fieldKinds } from "./records.js"

/**
 * Reading an import file: its rows a chunk at a time, and a first pass that hashes it and
 * counts its rows, so progress can count rows. Both split lines alike, as `readline` did: `\n`,
 * `\r\n` or a lone `\r` ends a line, so the line numbers resumable imports record keep meaning
 * the same lines.
 */

const LF = 10
const CR = 13

/** Bytes read at a time: large enough that reading costs little per row, small enough to stream. */
const CHUNK_BYTES = 1 << 20

/** Splits bytes arriving in chunks into lines, calling `line` with each (line ends left out). */
const lineSplitter = (line: (bytes: Buffer, start: number, end: number) => void) => {
  let carry: Buffer | undefined
  let afterCr = false
  return {
    push: (chunk: Buffer) => {
      const bytes = carry === undefined ? chunk : Buffer.concat([carry, chunk])
      carry = undefined
      let pos = afterCr && bytes[0] === LF ? 1 : 0
      afterCr = false
      let lf = bytes.indexOf(LF, pos)
      let cr = bytes.indexOf(CR, pos)
      while (lf !== -1 || cr !== -1) {
        if (cr !== -1 && (lf === -1 || cr < lf)) {
          line(bytes, pos, cr)
          pos = cr + 1
          if (pos === bytes.length) afterCr = true
          else if (bytes[pos] === LF) pos++
          if (lf !== -1 && lf < pos) lf = bytes.indexOf(LF, pos)
          cr = bytes.indexOf(CR, pos)
        } else {
          line(bytes, pos, lf)
          pos = lf + 1
          lf = bytes.indexOf(LF, pos)
        }
      }
      if (pos < bytes.length) carry = bytes.subarray(pos)
    },
    end: () => {
      if (carry !== undefined) line(carry, 0, carry.length)
      carry = undefined
    }
  }
}

/** Whether a line holds nothing but white space (`String.prototype.trim`'s), looking at its bytes first. */
const isBlank = (bytes: Buffer, start: number, end: number): boolean => {
  for (let i = start; i < end; i++) {
    const b = bytes[i]!
    if (b === 0x20 || b === 0x09 || b === 0x0b || b === 0x0c) continue
    return b < 0x80 ? false : bytes.toString("utf8", start, end).trim() === ""
  }
  return true
}

/** A file's chunks, one at a time. */
const chunks = (path: string, bytes: number): AsyncIterator<Buffer> =>
  createReadStream(path, { highWaterMark: bytes })[Symbol.asyncIterator]()

/** What the first pass over an import file found. */
export interface FileScan {
  /** SHA-256 of the file's bytes, hex: an import's progress belongs to the file, wherever it lies. */
  readonly hash: string
  /** Rows the file holds: non-blank lines of JSON Lines, records of CSV after the header. */
  readonly rows: number
}

/**
 * Counts CSV records without parsing them: line ends outside quotes that end a non-empty line.
 * A record of only `""` is counted though the parser skips it; progress never overshoots for it.
 */
const csvRecordCounter = () => {
  let records = 0
  let quoted = false
  let filled = false
  let afterCr = false
  return {
    push: (bytes: Buffer) => {
      for (let i = 0; i < bytes.length; i++) {
        const b = bytes[i]!
        if (afterCr) {
          afterCr = false
          if (b === LF) continue
        }
        if (b === 0x22) quoted = !quoted
        else if (!quoted && (b === LF || b === CR)) {
          if (filled) records++
          filled = false
          afterCr = b === CR
          continue
        }
        filled = true
      }
    },
    end: () => records + (filled ? 1 : 0)
  }
}

/** Hashes a file and counts its rows, in one pass. */
export const scanFile = async (path: string, format: "jsonl" | "csv", chunkBytes = CHUNK_BYTES): Promise<FileScan> => {
  const hash = createHash("sha256")
  let rows = 0
  const lines = lineSplitter((bytes, start, end) => {
    if (!isBlank(bytes, start, end)) rows++
  })
  const csv = csvRecordCounter()
  const it = chunks(path, chunkBytes)
  for (let next = await it.next(); next.done !== true; next = await it.next()) {
    hash.update(next.value)
    if (format === "csv") csv.push(next.value)
    else lines.push(next.value)
  }
  lines.end()
  return { hash: hash.digest("hex"), rows: format === "csv" ? Math.max(0, csv.end() - 1) : rows }
}

/** A row read from a file, or why it could not be read. */
export type Read =
  | { readonly line: number; readonly value: unknown }
  | { readonly line: number; readonly reason: "not_json" | "not_csv" | "field_count"; readonly error: string }

/** The rows of a file, a chunk's worth per call; `undefined` once the file is done. */
export type RowReader = () => Promise<ReadonlyArray<Read> | undefined>

/** The rows of a JSON Lines file; blank lines are skipped. */
export const jsonLines = (path: string, chunkBytes = CHUNK_BYTES): RowReader => {
  const it = chunks(path, chunkBytes)
  let line = 0
  let out: Array<Read> = []
  const lines = lineSplitter((bytes, start, end) => {
    line++
    if (isBlank(bytes, start, end)) return
    try {
      out.push({ line, value: JSON.parse(bytes.toString("utf8", start, end)) })
    } catch (e) {
      out.push({ line, reason: "not_json", error: `not JSON: ${(e as Error).message}` })
    }
  })
  let done = false
  return async () => {
    if (done) return undefined
    out = []
    const next = await it.next()
    if (next.done === true) {
      lines.end()
      done = true
    } else lines.push(next.value)
    return out
  }
}

/** The rows of a CSV file: the first record is the header, and cells are typed by `schema`'s fields. */
export const csvRows = (path: string, schema: Schema.Schema.AnyNoContext, chunkBytes = CHUNK_BYTES): RowReader => {
  const it = createReadStream(path, { encoding: "utf8", highWaterMark: chunkBytes })[Symbol.asyncIterator]() as AsyncIterator<string>
  const reader = csvReader()
  const kinds = fieldKinds(schema)
  let header: ReadonlyArray<string> | undefined
  let done = false
  return async () => {
    if (done) return undefined
    const next = await it.next()
    let records: ReadonlyArray<CsvRecord | CsvSyntaxError>
    if (next.done === true) {
      records = reader.end()
      done = true
    } else records = reader.push(next.value)
    const out: Array<Read> = []
    for (const record of records) {
      if (record instanceof CsvSyntaxError) out.push({ line: record.line, reason: "not_csv", error: `not valid CSV: ${record.message}` })
      else if (header === undefined) header = record.fields.map((f) => f.trim())
      else {
        const value = csvObject(header, record.fields, kinds)
        out.push(typeof value === "string" ? { line: record.line, reason: "field_count", error: value } : { line: record.line, value })
      }
    }
    return out
  }
}
