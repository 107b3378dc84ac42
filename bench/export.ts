/**
 * (t) Exports of the bench market's whole rental history, each format in a process of its own
 * (`export-child.mjs`, plain `node` on the built packages) so its peak RSS is its own: rows per second and peak RSS through the core
 * (`RentalPrices.export`, `encodeExport`), against better-sqlite3's `.iterate()` writing the same
 * CSV or JSON lines to the same kind of sink (a file), in the same run.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { BENCH_DIR, configFromEnv, DATA_DIR, REPO_ROOT } from "./config"
import { ensureMarket } from "./market"

/** CSV and JSON Lines through the core against the bare iteration: at least this fraction of its rows per second. */
export const EXPORT_TARGET_RATIO = 0.8
/** Peak RSS of any export, whatever its size. */
export const EXPORT_RSS_TARGET_BYTES = 256 * 2 ** 20

interface Run { readonly rows: number; readonly bytes: number; readonly ms: number; readonly maxRssBytes: number }

export interface ExportBenchResults {
  readonly rows: number
  readonly core: Readonly<Record<"csv" | "jsonl" | "parquet", Run>>
  readonly bare: Readonly<Record<"csv" | "jsonl", Run>>
  readonly load: number
}

const child = (how: "core" | "bare", format: string, db: string): Run => {
  const out = path.join(DATA_DIR, `export-bench.${how}.${format}`)
  const run = spawnSync(process.execPath, [path.join(BENCH_DIR, "export-child.mjs"), how, format, db, out], {
    cwd: REPO_ROOT, encoding: "utf8", maxBuffer: 1 << 20
  })
  fs.rmSync(out, { force: true })
  if (run.status !== 0) throw new Error(`export-child ${how} ${format} failed: ${run.stderr}`)
  return JSON.parse(run.stdout.trim().split("\n").pop()!) as Run
}

export const runExportBench = (quick: boolean, log: (line: string) => void): ExportBenchResults => {
  const market = ensureMarket(configFromEnv({ ...process.env, BENCH_QUICK: quick ? "1" : "0" }))
  const load = os.loadavg()[0]!
  const run = (how: "core" | "bare", format: "csv" | "jsonl" | "parquet") => {
    log(`(t) ${how} ${format} ...`)
    return child(how, format, market.file)
  }
  // Each bare run just before its core run, so both meet the same load.
  const bareCsv = run("bare", "csv"), coreCsv = run("core", "csv")
  const bareJsonl = run("bare", "jsonl"), coreJsonl = run("core", "jsonl")
  const coreParquet = run("core", "parquet")
  return { rows: coreCsv.rows, core: { csv: coreCsv, jsonl: coreJsonl, parquet: coreParquet }, bare: { csv: bareCsv, jsonl: bareJsonl }, load }
}

const perSecond = (r: Run) => r.rows / (r.ms / 1000)
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`
const rate = (r: Run) => `${Math.round(perSecond(r)).toLocaleString("en-US")} rows/s`

export const exportLines = (r: ExportBenchResults) => [
  ...(["csv", "jsonl"] as const).map((format) => {
    const ratio = perSecond(r.core[format]) / perSecond(r.bare[format])
    const rss = r.core[format].maxRssBytes
    return {
      name: `(t) ${format.toUpperCase()} export of ${r.rows.toLocaleString("en-US")} rental rows (peak RSS ${mib(rss)}), vs better-sqlite3 .iterate() writing the same lines`,
      figure: rate(r.core[format]), baseline: rate(r.bare[format]), ratio,
      target: `≥ ${EXPORT_TARGET_RATIO.toFixed(2)}×, RSS < ${mib(EXPORT_RSS_TARGET_BYTES)}`,
      pass: ratio >= EXPORT_TARGET_RATIO && rss < EXPORT_RSS_TARGET_BYTES
    }
  }),
  {
    name: `(t) Parquet export of ${r.rows.toLocaleString("en-US")} rental rows (${mib(r.core.parquet.bytes)} file), peak RSS`,
    figure: mib(r.core.parquet.maxRssBytes), baseline: mib(EXPORT_RSS_TARGET_BYTES), ratio: r.core.parquet.maxRssBytes / EXPORT_RSS_TARGET_BYTES,
    target: `< ${mib(EXPORT_RSS_TARGET_BYTES)}`, pass: r.core.parquet.maxRssBytes < EXPORT_RSS_TARGET_BYTES
  }
]

/** The section of (t) in BENCHMARKS.md. */
export const exportMarkdown = (r: ExportBenchResults): string => `## (t) Exports

The bench market's whole rental history (${r.rows.toLocaleString("en-US")} rows, \`/history\` over every day, sorted \`valid_from desc\`) exported to a file, each run in a process of its own (plain \`node\` on the built packages, no tsx) so its peak RSS (\`process.resourceUsage().maxRSS\`) is its own. Core: \`RentalPrices.export\` (batches of 5,000 rows, the type's version read after each) and \`encodeExport\`, written with \`fs.writeSync\`. Baseline: better-sqlite3's \`.iterate()\` over the same rows in the same order, each row written as the same CSV or JSON line, in 1 MiB writes to the same kind of file.

| export | rows/s | bytes | peak RSS | baseline rows/s | baseline peak RSS |
| --- | ---: | ---: | ---: | ---: | ---: |
| CSV | ${rate(r.core.csv)} | ${mib(r.core.csv.bytes)} | ${mib(r.core.csv.maxRssBytes)} | ${rate(r.bare.csv)} | ${mib(r.bare.csv.maxRssBytes)} |
| JSON Lines | ${rate(r.core.jsonl)} | ${mib(r.core.jsonl.bytes)} | ${mib(r.core.jsonl.maxRssBytes)} | ${rate(r.bare.jsonl)} | ${mib(r.bare.jsonl.maxRssBytes)} |
| Parquet (zstd) | ${rate(r.core.parquet)} | ${mib(r.core.parquet.bytes)} | ${mib(r.core.parquet.maxRssBytes)} | | |

1-minute load average ${r.load.toFixed(2)} on ${os.cpus().length} cores at the start of the section. Targets: CSV and JSON Lines at least ${EXPORT_TARGET_RATIO.toFixed(2)}× the bare iteration's rows per second; every export under ${mib(EXPORT_RSS_TARGET_BYTES)} of RSS.
`

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href
if (isMain) {
  const r = runExportBench(process.env.BENCH_QUICK === "1", (line) => console.log(line))
  for (const line of exportLines(r)) {
    console.log(`${line.name}: ${line.figure}; baseline ${line.baseline}; ${line.ratio.toFixed(2)}×; target ${line.target}: ${line.pass ? "pass" : "FAIL"}`)
  }
  console.log(exportMarkdown(r))
}
