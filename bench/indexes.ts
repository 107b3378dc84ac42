import {
  formatDate, formatInstant, IndexComputation, type IndexComputationSummary, IndexIngest, marketLayer, MICROS_PER_DAY, type RentalPrice, RentalPriceIngest
} from "@gpu-market/core"
import { MemoryStorage, putVersions, rentalPriceKeys, RentalPriceStore } from "@gpu-market/core/storage"
import * as Demo from "@gpu-market/demo"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Clock, Effect, Layer, ManagedRuntime } from "effect"
import { ok } from "node:assert/strict"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

/**
 * Index computation from scratch: the demo's index set (per-GPU indices of four GPUs in three
 * region groups, daily and intraday, the H100 family and neocloud indices, the reference price
 * daily and intraday) over a year of the demo rental market ending today, all computed by one
 * `IndexIngest.define` into an empty SQLite store; then the same year recomputed in place by
 * `IndexComputation.computeRange` (a restatement). Runs inside `npm run bench`, or alone:
 * `npx tsx bench/indexes.ts` (`BENCH_QUICK=1` for 60 days).
 */

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url))
const DATA_DIR = path.join(BENCH_DIR, ".data")

export interface IndexBenchResults {
  readonly days: number
  readonly rentalRows: number
  readonly buildSeconds: number
  readonly definitions: number
  /** The from-scratch run (definitions stored, every value computed and stored). */
  readonly scratch: { readonly seconds: number; readonly summary: IndexComputationSummary }
  /** The same range recomputed over stored values (cleared and rewritten). */
  readonly recompute: { readonly seconds: number; readonly summary: IndexComputationSummary }
  readonly bytes: number
}

/** The demo rental market's rows over `days` days ending `today`, planned by the real write path in memory. */
const demoRentalRows = (first: number, today: number) =>
  Effect.gen(function* () {
    const ingest = yield* RentalPriceIngest
    for (let day = first; day <= today; day++) yield* ingest.ingest(Demo.demoObservations(day, {}, day > first))
    const store = yield* RentalPriceStore
    return yield* store.page({
      scope: { _tag: "window", start: formatInstant(first * MICROS_PER_DAY), end: formatInstant((today + 1) * MICROS_PER_DAY) },
      predicates: [], sort: { by: "valid_from", order: "asc" }, after: undefined, limit: Number.MAX_SAFE_INTEGER
    })
  }).pipe(Effect.provide(marketLayer.pipe(Layer.provideMerge(MemoryStorage.layer))))

export const runIndexBench = async (quick: boolean, log: (line: string) => void): Promise<IndexBenchResults> => {
  const days = quick ? 60 : 365
  const today = Demo.epochDay(Date.now() * 1000)
  const first = today - days + 1
  fs.mkdirSync(DATA_DIR, { recursive: true })
  const file = path.join(DATA_DIR, `indexes${quick ? "-quick" : ""}.db`)
  for (const f of [file, `${file}-wal`, `${file}-shm`]) fs.rmSync(f, { force: true })

  const built = performance.now()
  const rows: ReadonlyArray<RentalPrice> = await Effect.runPromise(demoRentalRows(first, today))
  const runtime = ManagedRuntime.make(marketLayer.pipe(Layer.provideMerge(SqliteStorage.layer({ filename: file }))))
  try {
    await runtime.runPromise(Effect.flatMap(RentalPriceStore, (s) => putVersions(s.transact, rentalPriceKeys, rows)))
    const buildSeconds = (performance.now() - built) / 1000
    log(`  market: ${rows.length.toLocaleString("en-US")} rental rows over ${days} days, built in ${buildSeconds.toFixed(1)} s`)

    const firstDate = formatDate(first * MICROS_PER_DAY)
    const definitions = Demo.demoIndexDefinitions(firstDate, firstDate)
    const scratch = await runtime.runPromise(Effect.gen(function* () {
      const ingest = yield* IndexIngest
      yield* ingest.setFleetWeights(Demo.demoFleetWeights(first, today))
      const started = yield* Clock.currentTimeMillis
      const defined = yield* ingest.define(definitions)
      return { seconds: ((yield* Clock.currentTimeMillis) - started) / 1000, summary: defined.computed }
    }))
    log(`  from scratch: ${scratch.summary.values.toLocaleString("en-US")} values in ${scratch.seconds.toFixed(2)} s`)
    ok(scratch.summary.values > 0.9 * scratch.summary.intervals, "most intervals should publish a value")

    const recompute = await runtime.runPromise(Effect.gen(function* () {
      const computation = yield* IndexComputation
      const started = yield* Clock.currentTimeMillis
      const summary = yield* computation.computeRange(firstDate, formatDate((today + 1) * MICROS_PER_DAY))
      return { seconds: ((yield* Clock.currentTimeMillis) - started) / 1000, summary }
    }))
    log(`  recomputed: ${recompute.summary.values.toLocaleString("en-US")} values in ${recompute.seconds.toFixed(2)} s`)
    ok(recompute.summary.values === scratch.summary.values, "a recomputation stores what the first computation stored")
    return { days, rentalRows: rows.length, buildSeconds, definitions: definitions.length, scratch, recompute, bytes: fs.statSync(file).size }
  } finally {
    await runtime.dispose()
  }
}

const perValue = (run: { readonly seconds: number; readonly summary: IndexComputationSummary }) =>
  `${((run.seconds * 1e6) / run.summary.values).toFixed(1)} µs`

/** The result as a few markdown paragraphs for BENCHMARKS.md. */
export const indexMarkdown = (r: IndexBenchResults): string => {
  const n = (x: number) => Math.round(x).toLocaleString("en-US")
  const computed = r.definitions - 1
  return `## (e) Index computation from scratch

The demo's index set (${r.definitions} definitions: ${computed} computed, one administered) over ${r.days} days of the demo rental market ending on the run's day (${n(r.rentalRows)} rental rows, built through the write path in memory and stored in ${r.buildSeconds.toFixed(1)} s). \`IndexIngest.define\` stores the definitions into an empty SQLite store and computes every complete interval of every computed index: one read of the rental rows in force, one sweep per index over rows ordered by validity, the reference prices from the stored per-GPU values, two transactions. Then \`IndexComputation.computeRange\` recomputes the same year in place (clear and rewrite). SQLite file ${(r.bytes / 2 ** 20).toFixed(0)} MiB afterwards.

| run | intervals | values stored | total | per value |
| --- | ---: | ---: | ---: | ---: |
| from scratch (\`define\`) | ${n(r.scratch.summary.intervals)} | ${n(r.scratch.summary.values)} | ${r.scratch.seconds.toFixed(2)} s | ${perValue(r.scratch)} |
| recompute (\`computeRange\`) | ${n(r.recompute.summary.intervals)} | ${n(r.recompute.summary.values)} | ${r.recompute.seconds.toFixed(2)} s | ${perValue(r.recompute)} |

An interval of an index with fewer than two vendors publishes nothing, so values can be fewer than intervals.
`
}

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href
if (isMain) {
  const log = (line: string) => console.log(line)
  runIndexBench(process.env.BENCH_QUICK === "1", log).then((r) => {
    log(`indexes: ${r.scratch.summary.values.toLocaleString("en-US")} values of ${r.definitions - 1} computed indices over ${r.days} days from scratch in ${r.scratch.seconds.toFixed(2)} s (${perValue(r.scratch)} per value); recomputed in ${r.recompute.seconds.toFixed(2)} s (${perValue(r.recompute)} per value)`)
  }).catch((e: unknown) => {
    console.error(e)
    process.exitCode = 1
  })
}
