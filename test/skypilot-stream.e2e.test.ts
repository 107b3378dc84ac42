import { afterAll, assert, describe, it } from "@effect/vitest"
import { createMarket, FormatImport, type FormatImportSummary, marketLayer, type Market, type PrincipalInput, type RentalPrice, type SkypilotStreamOptions } from "@gpu-market/core"
import { layer as sqliteLayer, sqlite } from "@gpu-market/storage-sqlite"
import { Effect, Layer, Stream } from "effect"
import { execFile } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { writeSkypilotCatalog } from "../bench/skypilot-catalog"
import { tempDb } from "./support/adapters"
import { SKYPILOT_CLOUDS, SKYPILOT_EXPECTED } from "./support/formats"

/**
 * A SkyPilot catalog streamed in batches smaller than the file (`FormatImport.skypilotStream`)
 * imports as the whole file in one batch does: the same report and the same stored rows, repeats
 * across batches counted as repeats. A conflicting listing whose two rows fall in different
 * batches is still refused. The CLI streams a large one in bounded memory, with its progress.
 */

const REAL = join(import.meta.dirname, "fixtures/real/skypilot")
const AT = "2026-07-01T00:00:00Z"
const READER: PrincipalInput = {
  id: "reader", name: "reader", grants: { gpu_rental_prices: { history: { _tag: "unrestricted" } } }, indices: [],
  legacy_custom_index: false, procurement: false, rate_limit_per_minute: 100_000
}

const catalog = (cloud: string) => readFileSync(join(REAL, `${cloud}-vms.csv`), "utf8")

/** The text in chunks of `size` characters, as a file arrives. */
const chunked = (text: string, size: number) =>
  Stream.fromIterable(Array.from({ length: Math.ceil(text.length / size) }, (_, i) => text.slice(i * size, (i + 1) * size)))

/** Streams each (text, options) into the SQLite file `db`, in order. */
const streamInto = (db: string, imports: ReadonlyArray<readonly [string, SkypilotStreamOptions]>) =>
  Effect.runPromise(Effect.provide(
    Effect.forEach(imports, ([text, options]) => Effect.flatMap(FormatImport, (f) => f.skypilotStream(chunked(text, 4096), options))),
    marketLayer.pipe(Layer.provideMerge(sqliteLayer({ filename: db })))
  ))

const markets: Array<Market> = []
afterAll(() => Promise.all(markets.map((m) => m.close())))

/** The current rows of `vendor` in the SQLite file `db`, by product key. */
const storedRows = async (db: string, vendor: string): Promise<Array<RentalPrice>> => {
  const market = await createMarket({ storage: sqlite(db) })
  markets.push(market)
  await market.tokens.create(READER, "reader")
  const rows: Array<RentalPrice> = []
  for await (const row of market.rental.prices.latest.rows({ vendor: [vendor], page_size: 1000 }, { token: "reader" })) rows.push(row)
  return rows.sort((a, b) => (a.product_key < b.product_key ? -1 : 1))
}

/** A summary as the tests compare it: what became of every entry, and the lines rejected. */
const outcome = (s: FormatImportSummary) => ({ counts: s.counts, rejectedLines: s.rejections.map((r) => r.line) })

describe("SkyPilot catalogs streamed in batches smaller than the file", () => {
  it("import every real catalog with the report and the rows of the whole file in one batch", async () => {
    for (const cloud of SKYPILOT_CLOUDS) {
      const streamed = tempDb(`skypilot-stream-${cloud}`)
      const whole = tempDb(`skypilot-whole-${cloud}`)
      // 16 observations a batch: every catalog spans batches (runpod's, 250 of them).
      const [s] = await streamInto(streamed, [[catalog(cloud), { vendor: cloud, observedAt: AT, batch: 16 }]])
      const [w] = await Effect.runPromise(Effect.provide(
        Effect.forEach([catalog(cloud)], (text) => Effect.flatMap(FormatImport, (f) => f.skypilot(text, { vendor: cloud, observedAt: AT }))),
        marketLayer.pipe(Layer.provideMerge(sqliteLayer({ filename: whole })))
      ))
      const e = SKYPILOT_EXPECTED[cloud]
      assert.deepStrictEqual(outcome(s!), { counts: e.counts, rejectedLines: [...e.rejectedLines] }, cloud)
      assert.deepStrictEqual(outcome(s!), outcome(w!), cloud)
      assert.deepStrictEqual(s!.written, w!.written, cloud)
      assert.deepStrictEqual(await storedRows(streamed, cloud), await storedRows(whole, cloud), cloud)
    }
  }, 300_000)

  it("count a repeat in a later batch of a price already in force as a repeat, as one batch does", async () => {
    // runpod lists 14 products twice at one price (its zones); a day later every price is in force.
    const text = catalog("runpod")
    const next = { vendor: "runpod", observedAt: "2026-07-02T00:00:00Z" }
    const [, streamed] = await streamInto(tempDb("skypilot-stream-repeat"), [[text, { vendor: "runpod", observedAt: AT }], [text, { ...next, batch: 16 }]])
    const [, whole] = await streamInto(tempDb("skypilot-whole-repeat"), [[text, { vendor: "runpod", observedAt: AT }], [text, next]])
    const stored = SKYPILOT_EXPECTED.runpod.counts.stored
    assert.deepInclude(streamed!.counts, { stored: 0, unchanged: stored, duplicate: 14 })
    assert.deepStrictEqual(streamed!.counts, whole!.counts)
  }, 120_000)

  it("refuse the later of two listings at two prices in different batches, naming both lines; the first, already written, stays stored", async () => {
    // primeintellect lists runpod__2xH100_80GB__48__502 at 5.9968 (line 102) and at 5.3968 (line 104):
    // its 101st and 103rd observations, so batches of 101 put them apart.
    const db = tempDb("skypilot-stream-conflict")
    const [s] = await streamInto(db, [[catalog("primeintellect"), { vendor: "primeintellect", observedAt: AT, batch: 101 }]])
    const e = SKYPILOT_EXPECTED.primeintellect.counts
    assert.deepStrictEqual(s!.counts, { ...e, stored: e.stored + 1, rejected: { conflicting_price: 1 } })
    assert.deepStrictEqual(s!.rejections.map((r) => [r.line, r.reason]), [[104, "conflicting_price"]])
    assert.include(s!.rejections[0]!.message, "two prices for one product at 2026-07-01T00:00:00.000000Z: line 102 and line 104")
    const listed = (await storedRows(db, "primeintellect")).filter((r) => r.instance_type === "runpod__2xH100_80GB__48__502")
    assert.deepStrictEqual(listed.map((r) => r.raw_price), [5.9968])
  }, 120_000)

  it("tell 16,000 repeats and conflicts in later batches apart from new products, however many products came before", async () => {
    // 8,000 GPU rows (16,000 products) listed twice: every tenth row of the second copy at another price.
    const dir = mkdtempSync(join(tmpdir(), "skypilot-stream-repeats-"))
    try {
      writeSkypilotCatalog(join(dir, "vms.csv"), 8_000)
      const [header, ...rows] = readFileSync(join(dir, "vms.csv"), "utf8").trim().split("\n")
      const changed = rows.map((row, i) => (i % 10 === 0 ? row.replace(/,([\d.]+),(\w+-\w+-\d+),/, (_, price: string, region: string) => `,${Number(price) + 1},${region},`) : row))
      const text = [header, ...rows, ...changed].join("\n")
      const [s] = await streamInto(join(dir, "market.db"), [[text, { vendor: "lambda", observedAt: AT, batch: 1_000 }]])
      assert.deepInclude(s!.counts, { read: 32_000, stored: 16_000, duplicate: 15_200, rejected: { conflicting_price: 800 } })
      // Row 1 is line 2 of the file; its second listing, line 8,002.
      assert.include(s!.rejections[0]!.message, "line 2 and line 8002; line 2, written with an earlier batch, stays stored")
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 300_000)
})

describe("gpu-market import --format skypilot of a large generated catalog", () => {
  const dir = mkdtempSync(join(tmpdir(), "skypilot-stream-memory-"))
  // Writes the process's peak RSS (KiB) on stderr as it exits.
  const peak = join(dir, "peak.mjs")
  writeFileSync(peak, "process.on('exit', () => process.stderr.write(`peak ${process.resourceUsage().maxRSS}\\n`))\n")
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  /** Imports a generated catalog of `rows` GPU rows into a fresh SQLite file: its stdout, progress lines and peak RSS in MiB. */
  const importRows = (rows: number) => {
    const file = join(dir, `${rows}.csv`)
    writeSkypilotCatalog(file, rows)
    const args = ["--import", peak, join(import.meta.dirname, "../packages/cli/bin/gpu-market.js"), "import", file, "--format", "skypilot", "--vendor", "lambda", "--db", join(dir, `${rows}.db`)]
    return new Promise<{ readonly stdout: string; readonly progress: ReadonlyArray<string>; readonly peakMib: number }>((resolve, reject) => {
      execFile(process.execPath, args, { env: { ...process.env, NO_COLOR: "1", GPU_MARKET_REDIS_URL: "" }, timeout: 600_000 }, (error, stdout, stderr) => {
        if (error !== null) return reject(new Error(`${error.message}: ${stderr}`))
        const lines = stderr.split("\n")
        resolve({ stdout, progress: lines.filter((l) => l.startsWith("importing skypilot: ")), peakMib: Number(/^peak (\d+)$/m.exec(stderr)![1]) / 1024 })
      })
    })
  }

  it("streams 100,000 GPU rows in bounded memory, printing a progress line per tenth", async () => {
    const { stdout, progress, peakMib } = await importRows(100_000)
    assert.strictEqual(stdout.split("\n")[0], "read 200000: stored 200000, unchanged 0, duplicate 0, skipped 0, quarantined 0, rejected 0")
    // Read whole and written as one batch, this file needs over 1 GiB (BENCHMARKS.md, (k)). Streamed, the
    // bound is the write path's: a batch of 25,000 observations, the heap V8 lets grow by half past what
    // stays live, and SQLite's bulk-load page cache (128 MiB); a million rows stay under 512 MiB.
    assert.isBelow(peakMib, 448, `peak RSS ${peakMib.toFixed(0)} MiB`)
    const done = progress.map((l) => Number(/^importing skypilot: ([\d,]+)\/100,000 rows/.exec(l)![1]!.replace(/,/g, "")))
    assert.strictEqual(done[0], 0)
    assert.strictEqual(done.at(-1), 100_000)
    assert.isAtLeast(done.length, 4)
    assert.deepStrictEqual(done, [...done].sort((a, b) => a - b))
  }, 900_000)
})
