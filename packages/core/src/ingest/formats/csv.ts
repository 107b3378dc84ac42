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

/** A new CSV reader. */
export const csvReader = (): CsvReader => {
  let fields: Array<string> = []
  let field = ""
  let quoted = false // inside a quoted field
  let wasQuoted = false // the current field was quoted (only a separator may follow the closing quote)
  let pendingQuote = false // saw a quote inside a quoted field: a second one is a literal quote
  let line = 1
  let start = 1
  let broken: string | undefined
  let cr = false
  const endField = () => {
    fields.push(field)
    field = ""
    wasQuoted = false
  }
  const endRecord = (out: Array<CsvRecord | CsvSyntaxError>) => {
    endField()
    const blank = fields.length === 1 && fields[0] === ""
    if (broken !== undefined) out.push(new CsvSyntaxError(start, broken))
    else if (!blank) out.push({ line: start, fields })
    fields = []
    broken = undefined
  }
  const push = (chunk: string) => {
    const out: Array<CsvRecord | CsvSyntaxError> = []
    for (const ch of chunk) {
      if (cr) {
        cr = false
        if (ch === "\n") continue
      }
      if (pendingQuote) {
        pendingQuote = false
        if (ch === "\"") {
          field += "\""
          continue
        }
        quoted = false
        wasQuoted = true
      }
      if (quoted) {
        if (ch === "\"") pendingQuote = true
        else {
          field += ch
          if (ch === "\n") line++
        }
        continue
      }
      if (ch === ",") endField()
      else if (ch === "\n" || ch === "\r") {
        endRecord(out)
        cr = ch === "\r"
        line++
        start = line
      } else if (ch === "\"") {
        if (field === "" && !wasQuoted) quoted = true
        else broken ??= "a quote inside an unquoted field; quote the whole field and double the quote"
      } else if (wasQuoted) {
        broken ??= "text after a closing quote; only a comma or a line end may follow it"
      } else field += ch
    }
    return out
  }
  const end = () => {
    const out: Array<CsvRecord | CsvSyntaxError> = []
    if (pendingQuote) {
      quoted = false
      wasQuoted = true
    }
    if (quoted) out.push(new CsvSyntaxError(start, "a quoted field is never closed"))
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
