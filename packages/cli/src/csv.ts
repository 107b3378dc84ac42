import { type CsvRecord, csvReader, CsvSyntaxError } from "@gpu-market/core/adapters"

export { type CsvRecord, CsvSyntaxError }

/** Parses CSV text arriving in chunks into records (core's RFC 4180 reader). Blank lines are skipped. */
export async function* parseCsv(chunks: AsyncIterable<string>): AsyncGenerator<CsvRecord | CsvSyntaxError> {
  const reader = csvReader()
  for await (const chunk of chunks) yield* reader.push(chunk)
  yield* reader.end()
}
