import { assert, describe, it } from "@effect/vitest"
import { RentalPriceObservation } from "@gpu-market/core"
import fc from "fast-check"
import { createHash } from "node:crypto"
import { createReadStream, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createInterface } from "node:readline"
import { csvRows, jsonLines, type Read, type RowReader, scanFile } from "../src/read"

/**
 * Reading an import file: lines numbered as `readline` numbers them (the line numbers a
 * resumable import records), blank lines skipped, and a first pass whose row count is the
 * number of rows the reader yields, whatever the chunk boundaries.
 */

const dir = mkdtempSync(join(tmpdir(), "gpu-market-read-"))
let files = 0
const file = (text: string) => {
  const path = join(dir, `f${files++}`)
  writeFileSync(path, text)
  return path
}

const all = async (next: RowReader) => {
  const out: Array<Read> = []
  for (let rows = await next(); rows !== undefined; rows = await next()) out.push(...rows)
  return out
}

const viaReadline = async (path: string) => {
  const out: Array<{ line: number; text: string }> = []
  let line = 0
  for await (const text of createInterface({ input: createReadStream(path, "utf8"), crlfDelay: Infinity })) {
    line++
    if (text.trim() !== "") out.push({ line, text })
  }
  return out
}

describe("import file reading", () => {
  it("JSON Lines: lines as readline numbers them, blank ones skipped, counted alike by the first pass", async () => {
    const piece = fc.constantFrom("{\"a\":1}", "[2]", "\"é\"", "{", "", " ", "\t", "\u00a0", "\n", "\r\n", "\r", "\r\r\n", "\n\n")
    await fc.assert(fc.asyncProperty(fc.array(piece, { maxLength: 30 }), fc.integer({ min: 1, max: 7 }), async (pieces, chunkBytes) => {
      const text = pieces.join("")
      const path = file(text)
      const expected = (await viaReadline(path)).map(({ line, text }) => {
        try {
          return { line, value: JSON.parse(text) }
        } catch (e) {
          return { line, reason: "not_json" as const, error: `not JSON: ${(e as Error).message}` }
        }
      })
      assert.deepStrictEqual(await all(jsonLines(path, chunkBytes)), expected, JSON.stringify(text))
      const scan = await scanFile(path, "jsonl", chunkBytes)
      assert.strictEqual(scan.rows, expected.length)
      assert.strictEqual(scan.hash, createHash("sha256").update(text).digest("hex"))
    }), { numRuns: 300 })
  })

  it("CSV: the first pass counts the records after the header, quoted line breaks inside them", async () => {
    const header = "vendor,region,gpu_count,vendor_gpu_name"
    const text = `${header}\r\nacme,us-east,8,"H100\r\nSXM"\r\n\r\nacme,eu-west,lots,H100\r\n"acme","ap\nsouth",1,"say ""hi"""\r\nbroken"quote,x,1,y`
    for (const chunkBytes of [1, 3, 1 << 20]) {
      const path = file(text)
      const rows = await all(csvRows(path, RentalPriceObservation, chunkBytes))
      assert.deepStrictEqual(rows, [
        { line: 2, value: { vendor: "acme", region: "us-east", gpu_count: 8, vendor_gpu_name: "H100\r\nSXM" } },
        { line: 5, value: { vendor: "acme", region: "eu-west", gpu_count: "lots", vendor_gpu_name: "H100" } },
        { line: 6, value: { vendor: "acme", region: "ap\nsouth", gpu_count: 1, vendor_gpu_name: "say \"hi\"" } },
        { line: 8, reason: "not_csv", error: "not valid CSV: a quote inside an unquoted field; quote the whole field and double the quote" }
      ])
      assert.strictEqual((await scanFile(path, "csv", chunkBytes)).rows, rows.length)
    }
  })
})
