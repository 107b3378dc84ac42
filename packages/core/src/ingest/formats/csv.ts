/**
 * A CSV reader (RFC 4180): comma-separated fields, double-quoted fields that may hold commas,
 * quotes (`""`) and line breaks, CRLF or LF line ends. Written here because no CSV parser is
 * among the project's dependencies and the format is small enough to get exactly right. It is
 * fed text in chunks, so a stream and a whole file are read by the same rules.
 */

/** One CSV record and the line it starts on (1-based). */
export interface CsvRecord {
  readonly line: number
  readonly fields: ReadonlyArray<string>
}

/** A record that is not valid CSV (an unterminated or misplaced quote), and the line it starts on. */
export class CsvSyntaxError extends Error {
  constructor(readonly line: number, message: string) {
    super(message)
  }
}

/** A CSV reader: `push` each chunk of text, then `end`; each returns the records it completed. Blank lines are skipped. */
export interface CsvReader {
  readonly push: (chunk: string) => Array<CsvRecord | CsvSyntaxError>
  readonly end: () => Array<CsvRecord | CsvSyntaxError>
}

const COMMA = 44
const QUOTE = 34
const LF = 10
const CR = 13

/**
 * A new CSV reader, its first line numbered `firstLine`. Runs of plain text and the inside of
 * quoted fields are taken a slice at a time rather than a character at a time: a large import
 * reads every byte. A record that spans lines (a quoted field with a line break) and turns out
 * broken (a quote never closed, text after a closing quote) is a syntax error of the line it
 * starts on, and the lines after the first break are read again on their own: one stray quote
 * costs its own line, never the rows below it. Only such records keep their raw text.
 */
export const csvReader = (firstLine = 1): CsvReader => {
  let fields: Array<string> = []
  let field = ""
  let quoted = false // inside a quoted field
  let wasQuoted = false // the current field was quoted (only a separator may follow the closing quote)
  let pendingQuote = false // saw a quote inside a quoted field: a second one is a literal quote
  let cr = false // the last record ended with CR: a LF right after it belongs to that line end
  let line = firstLine
  let start = firstLine
  let broken: string | undefined
  // The record's raw text after its first line break inside quotes, and the line that text starts on.
  let tail: string | undefined
  let tailLine = 0
  const endField = () => {
    fields.push(field)
    field = ""
    wasQuoted = false
  }
  /** The error of a broken record and, when it spans lines, the records of the lines after its first. */
  const brokenRecord = (out: Array<CsvRecord | CsvSyntaxError>, message: string) => {
    if (tail === undefined) {
      out.push(new CsvSyntaxError(start, message))
      return
    }
    out.push(new CsvSyntaxError(start, `${message}; the lines after line ${tailLine - 1} are read on their own`))
    const rest = csvReader(tailLine)
    out.push(...rest.push(tail), ...rest.end())
  }
  const endRecord = (out: Array<CsvRecord | CsvSyntaxError>) => {
    endField()
    const blank = fields.length === 1 && fields[0] === ""
    if (broken !== undefined) brokenRecord(out, broken)
    else if (!blank) out.push({ line: start, fields })
    fields = []
    broken = undefined
    tail = undefined
  }
  const push = (chunk: string) => {
    const out: Array<CsvRecord | CsvSyntaxError> = []
    const n = chunk.length
    let i = 0
    while (i < n) {
      if (cr) {
        cr = false
        if (chunk.charCodeAt(i) === LF) {
          i++
          continue
        }
      }
      if (pendingQuote) {
        pendingQuote = false
        if (chunk.charCodeAt(i) === QUOTE) {
          field += "\""
          if (tail !== undefined) tail += "\""
          i++
          continue
        }
        quoted = false
        wasQuoted = true
      }
      if (quoted) {
        const q = chunk.indexOf("\"", i)
        const end = q === -1 ? n : q
        const through = q === -1 ? n : q + 1
        let lf = chunk.indexOf("\n", i)
        if (tail !== undefined) tail += chunk.slice(i, through)
        else if (lf !== -1 && lf < end) {
          tailLine = line + 1
          tail = chunk.slice(lf + 1, through)
        }
        for (; lf !== -1 && lf < end; lf = chunk.indexOf("\n", lf + 1)) line++
        field += chunk.slice(i, end)
        pendingQuote = q !== -1
        i = through
        continue
      }
      let j = i
      for (let c = chunk.charCodeAt(j); j < n && c !== COMMA && c !== LF && c !== CR && c !== QUOTE; c = chunk.charCodeAt(++j));
      if (j > i) {
        if (wasQuoted) broken ??= "text after a closing quote; only a comma or a line end may follow it"
        else field += chunk.slice(i, j)
        if (tail !== undefined) tail += chunk.slice(i, j)
        i = j
        if (i === n) break
      }
      const c = chunk.charCodeAt(i++)
      if (c !== LF && c !== CR && tail !== undefined) tail += chunk[i - 1]
      if (c === COMMA) endField()
      else if (c === QUOTE) {
        if (field === "" && !wasQuoted) quoted = true
        else broken ??= "a quote inside an unquoted field; quote the whole field and double the quote"
      } else {
        endRecord(out)
        cr = c === CR
        line++
        start = line
      }
    }
    return out
  }
  const end = () => {
    const out: Array<CsvRecord | CsvSyntaxError> = []
    if (pendingQuote) {
      quoted = false
      wasQuoted = true
    }
    if (quoted) brokenRecord(out, "a quoted field is never closed")
    else if (field !== "" || fields.length > 0 || wasQuoted) endRecord(out)
    return out
  }
  return { push, end }
}

/** The records of a whole CSV text, in order. */
export const parseCsvText = (text: string): Array<CsvRecord | CsvSyntaxError> => {
  const reader = csvReader()
  return [...reader.push(text), ...reader.end()]
}
