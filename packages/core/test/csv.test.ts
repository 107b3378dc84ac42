import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { csvReader, CsvSyntaxError } from "../src/ingest/formats/csv"

/** The CSV reader: RFC 4180 fields, line numbers of records, and the same records however the text is chunked. */

const parse = (chunks: ReadonlyArray<string>) => {
  const reader = csvReader()
  const out = [...chunks.flatMap((chunk) => reader.push(chunk)), ...reader.end()]
  return out.map((r) => (r instanceof CsvSyntaxError ? { line: r.line, error: r.message } : { line: r.line, fields: r.fields }))
}

/** `text` cut at `cuts` (positions, any order). */
const cut = (text: string, cuts: ReadonlyArray<number>) => {
  const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b)
  return [...at, text.length].map((end, i) => text.slice(i === 0 ? 0 : at[i - 1], end))
}

const quote = (field: string) => (/[",\r\n]/.test(field) || field === "" ? `"${field.replace(/"/g, "\"\"")}"` : field)

describe("CSV reader", () => {
  it("reads back what RFC 4180 writes, with each record's first line, however the text is chunked", () => {
    const field = fc.stringMatching(/^[a-z ,"\r\n]{0,6}$/)
    fc.assert(fc.property(
      fc.array(fc.array(field, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 6 }),
      fc.constantFrom("\n", "\r\n", "\r"),
      fc.array(fc.nat(), { maxLength: 5 }),
      (records, eol, cuts) => {
        // A record of one empty field is a blank line, which the reader skips.
        const kept = records.filter((r) => !(r.length === 1 && r[0] === ""))
        const text = records.map((r) => r.map((f) => (r.length === 1 && f === "" ? "" : quote(f))).join(",")).join(eol) + eol
        let line = 1
        const expected: Array<{ line: number; fields: ReadonlyArray<string> }> = []
        for (const r of records) {
          if (!(r.length === 1 && r[0] === "")) expected.push({ line, fields: r })
          line += 1 + r.map((f) => f.match(/\n/g)?.length ?? 0).reduce((a, b) => a + b, 0)
        }
        assert.strictEqual(expected.length, kept.length)
        assert.deepStrictEqual(parse(cut(text, cuts)), expected, JSON.stringify(text))
      }
    ), { numRuns: 1_000 })
  })

  it("reports a misplaced or unclosed quote with the line its record starts on, and reads on", () => {
    assert.deepStrictEqual(parse(["a,b\nx\"y,z\n\"ok\",\"\"\"q\"\"\"\n\"ab\"c,d\n"]), [
      { line: 1, fields: ["a", "b"] },
      { line: 2, error: "a quote inside an unquoted field; quote the whole field and double the quote" },
      { line: 3, fields: ["ok", "\"q\""] },
      { line: 4, error: "text after a closing quote; only a comma or a line end may follow it" }
    ])
    assert.deepStrictEqual(parse(["a\n\n\"b\nc"]), [
      { line: 1, fields: ["a"] },
      { line: 3, error: "a quoted field is never closed; the lines after line 3 are read on their own" },
      { line: 4, fields: ["c"] }
    ])
    assert.deepStrictEqual(parse(["a,", "b"]), [{ line: 1, fields: ["a", "b"] }])
  })

  it("a quote never closed costs its own record only: every line after the one it opened on is read as written, however the text is chunked", () => {
    const rows = Array.from({ length: 8 }, (_, i) => `v,s${i + 1},2.${i + 1}`)
    const after = ["v,s10,298.75", "v,\"s11, quoted\",2.5", "v,\"say \"\"hi\"\"\",1", "v,\"two\nlines\",3"]
    for (const eol of ["\n", "\r\n"]) {
      const text = ["vendor,sku,price", ...rows, "v,x,\"s9,1", ...after].join(eol) + eol
      fc.assert(fc.property(fc.array(fc.nat(), { maxLength: 6 }), (cuts) => {
        const records = parse(cut(text, cuts))
        assert.deepStrictEqual(records.slice(9), [
          { line: 10, error: "text after a closing quote; only a comma or a line end may follow it; the lines after line 10 are read on their own" },
          { line: 11, fields: ["v", "s10", "298.75"] },
          { line: 12, fields: ["v", "s11, quoted", "2.5"] },
          { line: 13, fields: ["v", "say \"hi\"", "1"] },
          { line: 14, fields: ["v", "two\nlines", "3"] }
        ], JSON.stringify(cut(text, cuts)))
      }), { numRuns: 200 })
    }
  })
})
