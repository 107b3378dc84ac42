// Child process of bench/export.ts, run by plain `node` on the built packages (not tsx, whose
// loader and compiled module graph would be counted in the peak RSS too). One export of section
// (t), alone in this process so its peak RSS is its own: the whole rental history of the bench
// market written to `out` as `format`, through the core (`RentalPrices.export` and
// `encodeExport`), or (`bare`) by better-sqlite3's `.iterate()` writing the same lines. Prints
// `{ rows, bytes, ms, maxRssBytes }` as JSON.
//
//   node bench/export-child.mjs core|bare csv|jsonl|parquet <db> <out>
import { encodeExport, exportColumns, marketLayer, RentalPrices, requestOrigin } from "@gpu-market/core"
import { layer as sqliteLayer } from "@gpu-market/storage-sqlite"
import Database from "better-sqlite3"
import { Effect, Layer, ManagedRuntime, Stream } from "effect"
import * as fs from "node:fs"
import { performance } from "node:perf_hooks"

const [how, format, db, out] = process.argv.slice(2)
const WINDOW = { start: "2000-01-01", end: "2100-01-01" }
// The bench principal of core-bench.ts: full rental access, a limit it never reaches.
const principal = {
  id: "bench",
  name: "benchmark",
  grants: { gpu_rental_prices: { history: { _tag: "unrestricted" } } },
  indices: "all",
  legacy_custom_index: false,
  procurement: false,
  rate_limit_per_minute: 1_000_000_000
}

const fd = fs.openSync(out, "w")
let bytes = 0
const write = (chunk) => {
  fs.writeSync(fd, chunk)
  bytes += chunk.length
}
const started = performance.now()
let rows = 0
if (how === "core") {
  const runtime = ManagedRuntime.make(marketLayer.pipe(Layer.provide(sqliteLayer({ filename: db }))))
  await runtime.runPromise(Effect.gen(function* () {
    const exported = yield* (yield* RentalPrices).export("history", { principal, query: WINDOW, origin: requestOrigin("http://127.0.0.1") })
    const counted = Stream.tap(exported.rows, () => Effect.sync(() => rows++))
    yield* Stream.runForEach(encodeExport(format, { ...exported, rows: counted }), (chunk) => Effect.sync(() => write(chunk)))
  }))
  await runtime.dispose()
} else {
  // The same rows in the same order, each written as the same line, with nothing in between.
  const names = exportColumns("gpu_rental_prices").map((c) => c.name)
  const sqlite = new Database(db, { readonly: true })
  const statement = sqlite.prepare(`SELECT ${names.join(", ")} FROM rental_prices WHERE valid_from >= ? AND valid_from < ? ORDER BY valid_from DESC, product_key DESC`)
  const encoder = new TextEncoder()
  const quote = (v) => {
    if (v === null) return ""
    const text = String(v)
    return /[",\r\n]/.test(text) ? `"${text.replaceAll("\"", "\"\"")}"` : text
  }
  let text = format === "csv" ? names.join(",") + "\r\n" : ""
  for (const row of statement.iterate("2000-01-01T00:00:00.000000Z", "2100-01-01T00:00:00.000000Z")) {
    rows++
    text += format === "csv" ? names.map((n) => quote(row[n])).join(",") + "\r\n" : JSON.stringify(row) + "\n"
    if (text.length > 1 << 20) {
      write(encoder.encode(text))
      text = ""
    }
  }
  write(encoder.encode(text))
  sqlite.close()
}
fs.closeSync(fd)
console.log(JSON.stringify({ rows, bytes, ms: performance.now() - started, maxRssBytes: process.resourceUsage().maxRSS * 1024 }))
