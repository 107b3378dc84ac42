import { baseProductKey, formatInstant, makeGpuCatalog, resolveGpu, SHIPPED_GPUS, parseDateTime, productKey, type RentalPrice, type RentalPriceObservationInput } from "@gpu-market/core"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { StringDecoder } from "node:string_decoder"
import { pathToFileURL } from "node:url"
import { Worker } from "node:worker_threads"
import { appendKeyedEvents, columnsOf, makeClient, makeRentalPriceStore, migrate, rentalEventRows, rowFromColumns } from "../packages/storage-sqlite/src/internal"
import { GPUS, REGIONS, VENDORS } from "./catalog"
import { writeSkypilotCatalog } from "./skypilot-catalog"
import { DATA_DIR, REPO_ROOT } from "./config"
import { mulberry32, pick, weighted } from "./market"

/**
 * (k) Import throughput through the CLI on SQLite: `gpu-market import <file> --type rental` run
 * as a user runs it (`node packages/cli/bin/gpu-market.js`, its own process) on generated JSON Lines
 * files of rental price observations, each into a SQLite file:
 *
 * - a file of new products (one observation each) into a fresh file: the figure;
 * - the second snapshot of the same products, every price changed, into that file: each row
 *   closes a current row and opens one;
 * - the first fifth of the first file into another fresh file: peak RSS must not grow with the
 *   file (the import streams).
 *
 * Rows per second after start-up are timed from the progress line at 10% (stderr is not a
 * terminal: one line per tenth) to the process's exit, so module loading, the first pass over the
 * file and the first rows are left out, and the last checkpoint, as the file closes, is in. Peak
 * RSS is the child's VmHWM. Meanwhile another connection starts a write (`BEGIN IMMEDIATE`) every
 * 50 ms, as a server's rate-limit counter does, and the longest it waited is reported.
 *
 * Baseline: the same new rows, keys computed beforehand, inserted by a bare better-sqlite3
 * statement into a fresh migrated file with every index, in transactions of as many rows as a
 * rental write holds outside a bulk load (500 products, as the import wrote before it held its
 * serving indexes back), timed alike (from 10% of the rows to the file closed): the same
 * reference from run to run. Runs inside `npm run bench`
 * (`BENCH_ONLY=k` for this line alone), or alone: `npx tsx bench/import.ts` (`BENCH_QUICK=1` for
 * files a tenth the size).
 */

/** Rows per second after start-up the import of new products must reach. */
export const IMPORT_TARGET = 20_000

/** Bump when the generator's output changes, so stale files are never measured. */
const GENERATOR_VERSION = 2
/** Bump when the SkyPilot catalog's generator (`writeSkypilotCatalog`) changes. */
const SKYPILOT_GENERATOR_VERSION = 1
/** Observations per second of the streamed SkyPilot import must reach this share of the floor's rows per second. */
export const SKYPILOT_FLOOR_TARGET = 0.85
/** Peak RSS the streamed SkyPilot import must stay under. */
export const SKYPILOT_RSS_TARGET = 512 * 2 ** 20
/** Every observation of a snapshot is extracted at its instant. */
const SNAPSHOTS = ["2026-01-05T06:00:00Z", "2026-01-06T06:00:00Z"] as const
/** The baseline's checkpoints, as the CLI's imports configured their connection before bulk loads (`SqliteOptions.checkpointPages`). */
const BULK_CHECKPOINT_PAGES = 20_000
const CLI = path.join(REPO_ROOT, "packages/cli/bin/gpu-market.js")
const PROGRESS = /^importing (?:rental|skypilot): ([\d,]+)\/([\d,]+) rows/

export interface ImportConfig {
  readonly quick: boolean
  /** Products in the main file: the figure's rows. */
  readonly rows: number
  /** Products in the small file, for peak RSS against a larger file. */
  readonly smallRows: number
}

export const importConfig = (quick: boolean): ImportConfig =>
  quick ? { quick, rows: 100_000, smallRows: 20_000 } : { quick, rows: 1_000_000, smallRows: 200_000 }

const pickVendor = weighted(VENDORS, (v) => v.weight)
const SHIPPED = makeGpuCatalog(SHIPPED_GPUS)
/** The slug the shipped catalog gives a spelling (the bench catalog's own `a10g` is the catalog's `a10`), else the bench's. */
const slugOf = (spelling: string, gpu: (typeof GPUS)[number]) => resolveGpu(SHIPPED, spelling, gpu.memory)?.gpu_canonical_name ?? gpu.slug
const pickGpu = weighted(GPUS, (g) => g.weight)
const round4 = (n: number) => Math.round(n * 10_000) / 10_000

/**
 * Product `i` as observed in `snapshot`: the same identity in both, and in the second a price 1%
 * to 8% up or down, so every row of the second snapshot is a price change.
 */
export const observation = (i: number, snapshot: 0 | 1): RentalPriceObservationInput => {
  const rng = mulberry32(0x1a2b_3c4d ^ Math.imul(i + 1, 0x9e3779b1))
  const vendor = pickVendor(rng())
  const gpu = pickGpu(rng())
  const region = pick(REGIONS, rng())
  const count = pick(gpu.counts, rng())
  const contract = pick(vendor.contracts, rng())
  const spelling = pick(gpu.spellings, rng())
  const level = 0.9 + 0.2 * rng()
  const change = (rng() < 0.5 ? -1 : 1) * (0.01 + 0.07 * rng())
  const price = round4(gpu.base * vendor.level * level * (contract === "spot" ? 0.55 : contract === "reserved" ? 0.72 : 1) * (snapshot === 0 ? 1 : 1 + change))
  return {
    vendor: vendor.slug, vendor_gpu_name: spelling, vendor_sku: `${vendor.slug}-${gpu.slug}-${count}x-${i.toString(36)}`,
    vendor_region: `${region}-${1 + (i % 3)}`, region, gpu_canonical_name: slugOf(spelling, gpu), gpu_manufacturer: gpu.manufacturer,
    gpu_model: gpu.model, gpu_count: count, gpu_memory_gb: gpu.memory, vcpu: 16 * count, ram_gb: 120 * count, os: "linux",
    form_factor: gpu.formFactor, contract_type: contract, contract_term: contract === "reserved" ? "1 year" : null,
    availability: "available", price_usd_per_gpu_hour: price, raw_price: round4(price * count),
    raw_price_unit: "usd_per_instance_hour", extracted_at: SNAPSHOTS[snapshot]
  }
}

/** The file of the first `rows` products in `snapshot`, written first when missing. */
const ensureFile = (rows: number, snapshot: 0 | 1, log: (line: string) => void): string => {
  const file = path.join(DATA_DIR, `import-v${GENERATOR_VERSION}-${rows}-s${snapshot}.jsonl`)
  if (fs.existsSync(file)) return file
  log(`  writing ${path.relative(REPO_ROOT, file)} (${rows.toLocaleString("en-US")} observations) ...`)
  fs.mkdirSync(DATA_DIR, { recursive: true })
  const partial = `${file}.partial`
  const fd = fs.openSync(partial, "w")
  try {
    let lines: Array<string> = []
    for (let i = 0; i < rows; i++) {
      lines.push(JSON.stringify(observation(i, snapshot)))
      if (lines.length === 10_000 || i === rows - 1) {
        fs.writeSync(fd, `${lines.join("\n")}\n`)
        lines = []
      }
    }
  } finally {
    fs.closeSync(fd)
  }
  fs.renameSync(partial, file)
  return file
}

const removeDb = (file: string) => {
  for (const f of [file, `${file}-wal`, `${file}-shm`]) fs.rmSync(f, { force: true })
}

/** Peak resident set size of a process so far (VmHWM), in bytes; undefined once it is gone or off Linux. */
export const peakRss = (pid: number): number | undefined => {
  try {
    const m = /^VmHWM:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))
    return m === null ? undefined : Number(m[1]) * 1024
  } catch {
    return undefined
  }
}

/** What another writer saw: each of its writes waited this long for the file. */
export interface WriterWaits {
  readonly writes: number
  readonly longestMs: number
  /** Writes that waited over 50 ms. */
  readonly over50: number
}

// A worker, so the bench's own event loop (timestamps of the progress lines) never waits on the file.
const PROBE = `
const { parentPort, workerData } = require("node:worker_threads")
const Database = require(workerData.driver)
const db = new Database(workerData.file, { timeout: 600000 })
const begin = db.prepare("BEGIN IMMEDIATE")
const commit = db.prepare("COMMIT")
const stop = new Int32Array(workerData.stop)
let writes = 0, longestMs = 0, over50 = 0
while (Atomics.load(stop, 0) === 0) {
  const t = performance.now()
  begin.run()
  commit.run()
  const ms = performance.now() - t
  writes++
  if (ms > longestMs) longestMs = ms
  if (ms > 50) over50++
  Atomics.wait(stop, 0, 0, 50)
}
db.close()
parentPort.postMessage({ writes, longestMs, over50 })
`

/** Starts writing to `file` every 50 ms from a worker; the returned function stops it and tells what it saw. */
const probeWriters = (file: string): (() => Promise<WriterWaits>) => {
  const stop = new SharedArrayBuffer(4)
  const driver = createRequire(import.meta.url).resolve("better-sqlite3")
  const worker = new Worker(PROBE, { eval: true, workerData: { file, driver, stop } })
  const result = new Promise<WriterWaits>((resolve, reject) => {
    worker.once("message", resolve)
    worker.once("error", reject)
  })
  return () => {
    Atomics.store(new Int32Array(stop), 0, 1)
    Atomics.notify(new Int32Array(stop), 0)
    return result.finally(() => worker.terminate())
  }
}

/** One run of the CLI import. */
export interface CliRun {
  readonly rows: number
  readonly summary: string
  /** Spawn to exit. */
  readonly seconds: number
  /** Rows per second from the 10% progress line to the exit. */
  readonly rate: number
  readonly peakRssBytes: number | undefined
  readonly writers: WriterWaits
}

/** Runs `gpu-market import file --type rental --db db` (or with `format` instead of `--type rental`) and measures it. */
export const runCli = (file: string, db: string, log: (line: string) => void, format: ReadonlyArray<string> = ["--type", "rental"]): Promise<CliRun> =>
  new Promise((resolve, reject) => {
    const started = performance.now()
    const child = spawn(process.execPath, [CLI, "import", file, ...format, "--db", db], {
      cwd: REPO_ROOT, env: { ...process.env, NO_COLOR: "1", GPU_MARKET_REDIS_URL: "" }, stdio: ["ignore", "pipe", "pipe"]
    })
    const marks: Array<{ readonly at: number; readonly done: number; readonly total: number }> = []
    let stdout = ""
    let stderr = ""
    let pending = ""
    let peak: number | undefined
    let stopProbe: (() => Promise<WriterWaits>) | undefined
    const poll = setInterval(() => {
      const rss = child.pid === undefined ? undefined : peakRss(child.pid)
      if (rss !== undefined) peak = Math.max(peak ?? 0, rss)
    }, 100)
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString()
    })
    child.stderr.on("data", (d: Buffer) => {
      const at = performance.now()
      pending += d.toString()
      const lines = pending.split("\n")
      pending = lines.pop()!
      for (const line of lines) {
        const m = PROGRESS.exec(line)
        if (m === null) {
          stderr += `${line}\n`
          continue
        }
        marks.push({ at, done: Number(m[1]!.replace(/,/g, "")), total: Number(m[2]!.replace(/,/g, "")) })
        log(`    ${line}`)
        // The first line comes once the file is migrated and scanned: another writer may start.
        stopProbe ??= probeWriters(db)
      }
    })
    child.on("error", reject)
    child.on("close", (code) => {
      clearInterval(poll)
      const ended = performance.now()
      const seconds = (ended - started) / 1000
      const finish = async () => {
        const writers = stopProbe === undefined ? { writes: 0, longestMs: 0, over50: 0 } : await stopProbe()
        if (code !== 0) throw new Error(`the import exited ${code}: ${stdout}${stderr}`)
        const last = marks[marks.length - 1]
        // A file of one write or two (a quick run's small file) has no line between 10% and the end:
        // it is timed from its first line.
        const from = marks.find((m) => m.done >= 0.1 * m.total && m.done < m.total) ?? marks[0]
        if (last === undefined || from === undefined || last.done !== last.total) throw new Error(`no progress to time: ${stderr}`)
        // To the exit, not the 100% line: closing the file copies what the WAL still holds into it.
        return {
          rows: last.total, summary: stdout.trim().split("\n")[0]!, seconds,
          rate: ((last.done - from.done) * 1000) / (ended - from.at), peakRssBytes: peak, writers
        }
      }
      finish().then(resolve, reject)
    })
  })

/** The non-empty lines of a file, `count` at a time, read a chunk at a time. */
function* linesOf(file: string, count: number): Generator<Array<string>> {
  const fd = fs.openSync(file, "r")
  const buffer = Buffer.alloc(1 << 20)
  const decoder = new StringDecoder("utf8")
  let rest = ""
  let lines: Array<string> = []
  try {
    for (let read = fs.readSync(fd, buffer); read > 0; read = fs.readSync(fd, buffer)) {
      const parts = (rest + decoder.write(buffer.subarray(0, read))).split("\n")
      rest = parts.pop()!
      for (const line of parts) {
        if (line !== "") lines.push(line)
        if (lines.length === count) {
          yield lines
          lines = []
        }
      }
    }
  } finally {
    fs.closeSync(fd)
  }
  if (rest !== "") lines.push(rest)
  if (lines.length > 0) yield lines
}

/** Rows of the file's lines as the import stores them, keys computed here: what the bare runs insert. */
const storedColumns = (lines: ReadonlyArray<string>): Array<Array<unknown>> =>
  lines.map((line) => {
    const o = JSON.parse(line) as RentalPriceObservationInput
    const at = formatInstant(parseDateTime(o.extracted_at)!)
    const base = baseProductKey({ vendor_sku: null, vendor_region: null, instance_type: null, instance_variant: null, os: null, contract_term: null, ...o })
    const row = {
      vcpu: null, ram_gb: null, os: null, form_factor: null, interconnect: null, instance_type: null, instance_variant: null,
      contract_term: null, contract_details: null, availability: null, vendor_sku: null, vendor_region: null,
      ...o, valid_from: at, valid_to: null, extracted_at: at, base_product_key: base, product_key: ""
    } as RentalPrice
    return columnsOf({ ...row, product_key: productKey(base, at, row) })
  })

const INSERT_ROW = `INSERT INTO rental_prices VALUES (${Array(29).fill("?").join(", ")})`

/**
 * Rows per second over the writes after the first tenth (all of them, if there is one), with what
 * ran after them (index builds, closing the file).
 */
const rateAfterStartUp = (timed: ReadonlyArray<{ readonly rows: number; readonly ms: number }>, afterMs: number): number => {
  const after = timed.length === 1 ? timed : timed.slice(Math.ceil(timed.length / 10))
  return (after.reduce((n, t) => n + t.rows, 0) * 1000) / (after.reduce((ms, t) => ms + t.ms, 0) + afterMs)
}

/** The bare baseline: the file's rows, keys computed beforehand, inserted in transactions of `perWrite` rows. */
const bareInsert = (file: string, db: string): Effect.Effect<{ readonly rows: number; readonly rate: number; readonly perWrite: number }, unknown> =>
  Effect.scoped(Effect.gen(function* () {
    const client = yield* makeClient({ filename: db, checkpointPages: BULK_CHECKPOINT_PAGES })
    yield* migrate(client)
    // As many rows as one rental write outside a bulk load: 500 new products.
    const perWrite = makeRentalPriceStore(client).rowsPerWrite! / 2
    const insert = client.db.prepare(INSERT_ROW)
    const write = client.db.transaction((rows: ReadonlyArray<ReadonlyArray<unknown>>) => {
      for (const r of rows) insert.run(r)
    })
    const timed: Array<{ readonly rows: number; readonly ms: number }> = []
    let total = 0
    for (const lines of linesOf(file, perWrite)) {
      total += lines.length
      const rows = storedColumns(lines)
      const t = performance.now()
      write.immediate(rows)
      timed.push({ rows: rows.length, ms: performance.now() - t })
    }
    // As the import closes its file: what the WAL still holds is copied into it.
    const t = performance.now()
    client.db.close()
    // The same window as the import's: from 10% of the rows to the file closed.
    return { rows: total, rate: rateAfterStartUp(timed, performance.now() - t), perWrite }
  }))

/** WAL pages between checkpoints of the import's connection, as the CLI sets them for a bulk load. */
const CLI_BULK_CHECKPOINT_PAGES = 250_000

/**
 * The schema's floor: the same rows, keys computed beforehand, written the way the import's bulk
 * load writes them (its serving indexes held back and built again by the store's own `bulkLoad`,
 * writes of `rowsPerWrite` rows, an event per row named by key, the log trimmed to its retention),
 * with none of the import's own work: no reading or decoding, no planning reads, no summaries.
 * What any import into this schema pays on this machine, timed alike.
 */
const floorInsert = (file: string, db: string, rows: number): Effect.Effect<{ readonly rate: number; readonly buildsMs: number; readonly perWrite: number }, unknown> =>
  Effect.scoped(Effect.gen(function* () {
    const client = yield* makeClient({ filename: db, checkpointPages: CLI_BULK_CHECKPOINT_PAGES, bulk: true })
    yield* migrate(client)
    const store = makeRentalPriceStore(client, { bulk: true })
    const insert = client.db.prepare(INSERT_ROW)
    const write = client.db.transaction((rows: ReadonlyArray<ReadonlyArray<unknown>>) => {
      for (const r of rows) insert.run(r)
      // The events as the store logs them, named by key and trimmed to the log's retention.
      appendKeyedEvents(client, rentalEventRows, rows.map((r) => ({ type: "rental_price", row: rowFromColumns(r) })))
    })
    const timed: Array<{ readonly rows: number; readonly ms: number }> = []
    const buildsMs = yield* Effect.scoped(Effect.gen(function* () {
      const end = yield* store.bulkLoad!(rows)
      for (const lines of linesOf(file, store.rowsPerWrite!)) {
        const columns = storedColumns(lines)
        const t = performance.now()
        write.immediate(columns)
        timed.push({ rows: columns.length, ms: performance.now() - t })
      }
      const t = performance.now()
      yield* end
      return performance.now() - t
    }))
    const t = performance.now()
    client.db.close()
    return { rate: rateAfterStartUp(timed, buildsMs + performance.now() - t), buildsMs, perWrite: store.rowsPerWrite! }
  }))

export interface ImportBenchResults {
  readonly config: ImportConfig
  readonly fileBytes: number
  /** New products into a fresh file. */
  readonly fresh: CliRun
  /** The second snapshot into that file: every row a price change. */
  readonly changes: CliRun
  /** The first `smallRows` new products into another fresh file. */
  readonly small: CliRun
  readonly bare: { readonly rate: number; readonly perWrite: number }
  /** A SkyPilot catalog of `rows` GPU rows (two observations each) streamed in (`--format skypilot`). */
  readonly skypilot: CliRun & { readonly fileBytes: number }
  /** The schema's floor (`floorInsert`). */
  readonly floor: { readonly rate: number; readonly buildsMs: number; readonly perWrite: number }
  readonly dbBytes: number
}

export const runImportBench = async (config: ImportConfig, log: (line: string) => void): Promise<ImportBenchResults> => {
  const first = ensureFile(config.rows, 0, log)
  const second = ensureFile(config.rows, 1, log)
  const small = ensureFile(config.smallRows, 0, log)
  const db = path.join(DATA_DIR, "import.db")
  const smallDb = path.join(DATA_DIR, "import-small.db")
  const bareDb = path.join(DATA_DIR, "import-bare.db")
  const floorDb = path.join(DATA_DIR, "import-floor.db")
  const skypilotDb = path.join(DATA_DIR, "import-skypilot.db")
  try {
    removeDb(db)
    log(`  new products: ${config.rows.toLocaleString("en-US")} rows into a fresh file`)
    const fresh = await runCli(first, db, log)
    log(`  price changes: the second snapshot of the same ${config.rows.toLocaleString("en-US")} products into that file`)
    const changes = await runCli(second, db, log)
    const dbBytes = fs.statSync(db).size
    removeDb(smallDb)
    log(`  new products: ${config.smallRows.toLocaleString("en-US")} rows into a fresh file`)
    const smallRun = await runCli(small, smallDb, log)
    const skypilotFile = path.join(DATA_DIR, `skypilot-v${SKYPILOT_GENERATOR_VERSION}-${config.rows}.csv`)
    if (!fs.existsSync(skypilotFile)) {
      log(`  writing ${path.relative(REPO_ROOT, skypilotFile)} (${config.rows.toLocaleString("en-US")} SkyPilot rows) ...`)
      writeSkypilotCatalog(`${skypilotFile}.partial`, config.rows)
      fs.renameSync(`${skypilotFile}.partial`, skypilotFile)
    }
    removeDb(skypilotDb)
    log(`  SkyPilot catalog: ${config.rows.toLocaleString("en-US")} GPU rows (two observations each) streamed into a fresh file`)
    const skypilot = { ...await runCli(skypilotFile, skypilotDb, log, ["--format", "skypilot", "--vendor", "lambda"]), fileBytes: fs.statSync(skypilotFile).size }
    removeDb(skypilotDb)
    removeDb(bareDb)
    log("  baseline: bare better-sqlite3 inserts of the new products into a fresh file ...")
    const bare = await Effect.runPromise(bareInsert(first, bareDb))
    log(`    ${Math.round(bare.rate).toLocaleString("en-US")} rows/s in transactions of ${bare.perWrite} rows`)
    removeDb(floorDb)
    log("  floor: the same rows written as the bulk load writes them, with none of the import's own work ...")
    const floor = await Effect.runPromise(floorInsert(first, floorDb, config.rows))
    log(`    ${Math.round(floor.rate).toLocaleString("en-US")} rows/s, index builds ${(floor.buildsMs / 1000).toFixed(1)} s`)
    return { config, fileBytes: fs.statSync(first).size, fresh, changes, small: smallRun, skypilot, bare, floor, dbBytes }
  } finally {
    for (const f of [db, smallDb, bareDb, floorDb, skypilotDb]) removeDb(f)
  }
}

const mib = (bytes: number | undefined) => (bytes === undefined ? "n/a" : `${(bytes / 2 ** 20).toFixed(0)} MiB`)
const n = (x: number) => Math.round(x).toLocaleString("en-US")

/** The figure of (k): rows per second of new products after start-up, and peak RSS. */
export const importFigure = (r: ImportBenchResults): string => `${n(r.fresh.rate)} rows/s, peak RSS ${mib(r.fresh.peakRssBytes)}`

/** The result as a few markdown paragraphs for BENCHMARKS.md. */
export const importMarkdown = (r: ImportBenchResults): string => {
  const row = (name: string, run: CliRun) => `| ${name} | ${n(run.rows)} | ${run.seconds.toFixed(1)} s | ${n(run.rows / run.seconds)} | ${n(run.rate)} | ${mib(run.peakRssBytes)} | ${run.writers.longestMs.toFixed(0)} ms (${n(run.writers.over50)} of ${n(run.writers.writes)} over 50 ms) |`
  return `## (k) CLI import throughput on SQLite

\`gpu-market import <file> --type rental --db <file>\` run as its own process (\`node packages/cli/bin/gpu-market.js\`), on generated JSON Lines rental observations (${mib(r.fileBytes)} for ${n(r.config.rows)} rows; products drawn over 40 vendors and 30 GPUs, interleaved). Rows per second after start-up are timed from the import's 10% progress line to its exit (the last checkpoint included); peak RSS is the process's VmHWM. Meanwhile another connection starts a write every 50 ms, as a server counting rate limits does: the last column is the longest it waited for the file, the longest one write of the import held it. Target: ≥ ${n(IMPORT_TARGET)} rows/s for the new products after start-up.

| run | rows | spawn to exit | rows/s overall | rows/s after start-up | peak RSS | longest wait of another writer |
| --- | ---: | ---: | ---: | ---: | ---: | ---: |
${row("new products, fresh file", r.fresh)}
${row("second snapshot: every price changed", r.changes)}
${row(`first ${n(r.config.smallRows)} new products, fresh file`, r.small)}

Baseline: the same new rows, keys computed beforehand, inserted by a bare better-sqlite3 statement into a fresh migrated file in transactions of ${n(r.bare.perWrite)} rows (what one rental write holds outside a bulk load, and what one write of the import held before it held its serving indexes back; the import writes ${n(r.floor.perWrite)} rows at once with 17 of the 20 indexes dropped, and builds them again by sorting at its end, which the timing includes), timed alike (its writes from 10% of the rows on, and closing the file): ${n(r.bare.rate)} rows/s; the import reaches ${(r.fresh.rate / r.bare.rate).toFixed(2)}× of it. SQLite file after both imports: ${mib(r.dbBytes)}. Each row of this table sits in 20 B-tree indexes besides the table itself (the current rows by every anchor and sort, and the history), most keyed by a hash, so every row lands on pages of its own in each: what the baseline pays on every row, and what the import's bulk load avoids for all but three of them.

Floor: the same rows, keys computed beforehand, written the way the import's bulk load writes them (the serving indexes held back and built again by the store's own \`bulkLoad\`, writes of ${n(r.floor.perWrite)} rows, an event per row named by key) with none of the import's own work (reading and decoding lines, normalising, planning reads, summaries), timed alike: ${n(r.floor.rate)} rows/s, of which building the 17 indexes took ${(r.floor.buildsMs / 1000).toFixed(1)} s. No import into this schema reaches more on this machine; the import reaches ${(r.fresh.rate / r.floor.rate).toFixed(2)}× of it.

${skypilotMarkdown(r)}
`
}

/** Stored rows (observations) per second of the streamed SkyPilot import after start-up: two a GPU row. */
const skypilotRate = (r: ImportBenchResults) => 2 * r.skypilot.rate

/** The SkyPilot line of (k): rows/s, observations/s against the floor, peak RSS, each against its target. */
export const skypilotFigure = (r: ImportBenchResults): string =>
  `${n(r.skypilot.rate)} rows/s (${n(skypilotRate(r))} observations/s, ${(skypilotRate(r) / r.floor.rate).toFixed(2)}× the floor, target ≥ ${SKYPILOT_FLOOR_TARGET}×: ` +
  `${skypilotRate(r) / r.floor.rate >= SKYPILOT_FLOOR_TARGET ? "pass" : "FAIL"}), peak RSS ${mib(r.skypilot.peakRssBytes)} (target ≤ ${mib(SKYPILOT_RSS_TARGET)}: ` +
  `${(r.skypilot.peakRssBytes ?? Infinity) <= SKYPILOT_RSS_TARGET ? "pass" : "FAIL"})`

const skypilotMarkdown = (r: ImportBenchResults): string =>
  `SkyPilot: \`gpu-market import <file> --format skypilot --vendor lambda\` of a generated catalog of ${n(r.config.rows)} GPU rows (${mib(r.skypilot.fileBytes)}; lambda's columns and GPU rows, each row an instance type of its own priced on demand and spot, so two observations a row), streamed into a fresh file, timed alike: ${r.skypilot.seconds.toFixed(1)} s spawn to exit, ${skypilotFigure(r)}.`


const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href
if (isMain) {
  const log = (line: string) => console.log(line)
  runImportBench(importConfig(process.env.BENCH_QUICK === "1"), log).then((r) => {
    const waits = (run: CliRun) => `another writer waited ≤ ${run.writers.longestMs.toFixed(0)} ms`
    log(`(k) SkyPilot import: ${skypilotFigure(r)}`)
    log(`(k) CLI import on SQLite: ${importFigure(r)} (${n(r.config.rows)} new rows, ${waits(r.fresh)}; bare inserts ${n(r.bare.rate)} rows/s, floor ${n(r.floor.rate)} rows/s); price changes ${n(r.changes.rate)} rows/s, peak RSS ${mib(r.changes.peakRssBytes)}, ${waits(r.changes)}; ${n(r.config.smallRows)} rows: peak RSS ${mib(r.small.peakRssBytes)}; target ≥ ${n(IMPORT_TARGET)} rows/s: ${r.fresh.rate >= IMPORT_TARGET ? "pass" : "FAIL"}`)
  }).catch((e: unknown) => {
    console.error(e)
    process.exitCode = 1
  })
}
