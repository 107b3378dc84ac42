/**
 * A streaming CSV reader (RFC 4180): comma-separated fields, double-quoted fields that may hold
 * commas, quotes (`""`) and line breaks, CRLF or LF line ends. Written here because no CSV
 * parser is among the project's dependencies and the format is small enough to get exactly right.
 */

/** One CSV record and the line it starts on (1-based). */
export interface CsvRecord {
  readonly line: number
  readonly fields: ReadonlyArray<string>
}

/** Thrown for a record that is not valid CSV (an unterminated or misplaced quote). */
export class CsvSyntaxError extends Error {
  constructor(readonly line: number, message: string) {
    super(message)
  }
}

/** Parses CSV text arriving in chunks into records. Blank lines are skipped. */
export async function* parseCsv(chunks: AsyncIterable<string>): AsyncGenerator<CsvRecord | CsvSyntaxError> {
  let fields: Array<string> = []
  let field = ""
  let quoted = false // inside a quoted field
  let wasQuoted = false // the current field was quoted (only a separator may follow the closing quote)
  let pendingQuote = false // saw a quote inside a quoted field: a second one is a literal quote
  let line = 1
  let start = 1
  let broken: string | undefined
  const endField = () => {
    fields.push(field)
    field = ""
    wasQuoted = false
  }
  const endRecord = function* (): Generator<CsvRecord | CsvSyntaxError> {
    endField()
    const blank = fields.length === 1 && fields[0] === ""
    if (broken !== undefined) yield new CsvSyntaxError(start, broken)
    else if (!blank) yield { line: start, fields }
    fields = []
    broken = undefined
  }
  let cr = false
  for await (const chunk of chunks) {
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
        yield* endRecord()
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
  }
  if (pendingQuote) {
    quoted = false
    wasQuoted = true
  }
  if (quoted) {
    yield new CsvSyntaxError(start, "a quoted field is never closed")
    return
  }
  if (field !== "" || fields.length > 0 || wasQuoted) yield* endRecord()
}
