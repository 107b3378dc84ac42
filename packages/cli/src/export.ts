import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import {
  type DataType, encodeExport, estimateExport, EXPORT_SCHEMA_VERSION, exportColumns, type ExportFormat, exportFormats, exportMedia, type MarketError,
  type Principal, PrincipalId, problemOf, requestOrigin, type RowExport
} from "@gpu-market/core"
import { catalogue, makeExportCalls } from "@gpu-market/core/adapters"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { oneOf } from "./checked.js"
import { described } from "./help.js"
import { storageOptions } from "./options.js"
import { UsageError } from "./output.js"
import { marketOn } from "./storage.js"

/**
 * `gpu-market export`: every row of a query of one data type, read from one state of the store,
 * as files in a folder (one per day or month with `--split`) and a `manifest.json` that lists
 * each file whole (rows, bytes, SHA-256, first and last key) and the export (query, schema
 * version, watermark). A file is written beside its name and renamed once whole; a failure
 * leaves no file and no manifest entry for it, and exits non-zero.
 */

/** The types on the command line, the service namespace of each, and the field a split follows. */
const TYPES = {
  rental: { service: "rental.prices", dataType: "gpu_rental_prices", time: "valid_from" },
  hardware: { service: "hardware.prices", dataType: "gpu_hardware_prices", time: "observed_date" },
  transactions: { service: "transactions", dataType: "gpu_rental_transactions", time: "transaction_date" },
  indexes: { service: "indices", dataType: "gpu_rental_indexes", time: "timestamp" },
  llm: { service: "llm.tokenPrices", dataType: "llm_token_prices", time: "valid_from" }
} as const satisfies Record<string, { readonly service: string; readonly dataType: DataType; readonly time: string }>

/**
 * Who the command exports as: the operator, who holds the store itself, so every type, all of
 * history and every index; never a token's principal, which the store could be asked for.
 */
const operator: Principal = {
  id: PrincipalId.make("cli-export"), name: "gpu-market export",
  grants: Object.fromEntries(Object.values(TYPES).map((t) => [t.dataType, { history: { _tag: "unrestricted" } }])),
  indices: "all", legacy_custom_index: false, procurement: false, rate_limit_per_minute: 1
}

/** One file of an export as the manifest lists it. */
interface ManifestFile {
  readonly name: string
  readonly rows: number
  readonly bytes: number
  readonly sha256: string
  /** The tie-breaking key (`product_key`, …) of the file's first and last row; null in an empty file. */
  readonly first_key: string | null
  readonly last_key: string | null
}

const fail = (e: MarketError) => new UsageError({ message: problemOf(e, "-").detail })

/**
 * Writes `rows` as one file of `format` named `name` in `dir`: to `name.partial` first, renamed
 * once whole; removed should the export fail.
 */
const writeFile = (
  exported: RowExport<Readonly<Record<string, unknown>>, unknown>,
  format: ExportFormat,
  dir: string,
  name: string
): Effect.Effect<ManifestFile, unknown> => {
  const tie = tieOf(exported.dataType)
  const partial = path.join(dir, `${name}.partial`)
  return Effect.acquireUseRelease(
    Effect.sync(() => fs.openSync(partial, "w")),
    (fd) => Effect.gen(function* () {
      const hash = createHash("sha256")
      let bytes = 0, rows = 0
      let first: string | null = null, last: string | null = null
      const counted = Stream.tap(exported.rows, (row) => Effect.sync(() => {
        rows++
        last = String(row[tie])
        first ??= last
      }))
      yield* Stream.runForEach(encodeExport(format, { ...exported, rows: counted }), (chunk) => Effect.sync(() => {
        fs.writeSync(fd, chunk)
        hash.update(chunk)
        bytes += chunk.length
      }))
      fs.fsyncSync(fd)
      return { name, rows, bytes, sha256: hash.digest("hex"), first_key: first, last_key: last }
    }),
    (fd, exit) => Effect.sync(() => {
      fs.closeSync(fd)
      if (exit._tag === "Success") fs.renameSync(partial, path.join(dir, name))
      else fs.rmSync(partial, { force: true })
    })
  )
}

const tieOf = (dataType: DataType) => catalogue.find((e) => e.collection?.dataType === dataType)!.collection!.tieBreaker

/** The day or month a row's split field names (`2026-06-01`, `2026-06`). */
const splitKey = (split: "day" | "month", value: unknown) => String(value).slice(0, split === "day" ? 10 : 7)

export const exportCommand = Command.make("export", {
  type: oneOf("type", "type", Object.keys(TYPES) as ReadonlyArray<keyof typeof TYPES>).pipe(Options.withDescription("the data type")),
  start: Options.text("start").pipe(Options.withPseudoName("date"), Options.withDescription("history from this instant or YYYY-MM-DD"), Options.optional),
  end: Options.text("end").pipe(Options.withPseudoName("date"), Options.withDescription("history up to this instant or YYYY-MM-DD, exclusive"), Options.optional),
  at: Options.text("at").pipe(Options.withPseudoName("date"), Options.withDescription("the rows in force at this instant (as-of) instead of history"), Options.optional),
  latest: Options.boolean("latest").pipe(Options.withDescription("the current rows instead of history")),
  format: oneOf("format", "format", exportFormats).pipe(Options.withDescription("csv, jsonl or parquet; default parquet"), Options.withDefault("parquet" as ExportFormat)),
  out: Options.text("out").pipe(Options.withPseudoName("dir"), Options.withDescription("folder for the files and manifest.json; made if missing"), Options.optional),
  split: oneOf("split", "unit", ["day", "month"] as const).pipe(Options.withDescription("one file per day or month of history"), Options.optional),
  filter: Options.keyValueMap("filter").pipe(Options.withDescription("a query parameter of the type, e.g. vendor=lambda"), Options.optional),
  estimate: Options.boolean("estimate").pipe(Options.withDescription("print rows and bytes per format; write nothing")),
  ...storageOptions
}, (o) =>
  Effect.gen(function* () {
    const type = TYPES[o.type]
    const method = o.latest ? "latest" : Option.isSome(o.at) ? "asOf" : "history"
    if (o.latest && Option.isSome(o.at)) return yield* new UsageError({ message: "give --latest or --at, not both" })
    if (method !== "history" && (Option.isSome(o.start) || Option.isSome(o.end) || Option.isSome(o.split))) {
      return yield* new UsageError({ message: "--start, --end and --split are for history; leave them out with --latest or --at" })
    }
    const entry = catalogue.find((e) => e.name === `${type.service}.${method}`)
    if (entry === undefined) return yield* new UsageError({ message: `${o.type} has no ${method === "asOf" ? "--at" : "--latest"}` })
    const query: Record<string, string> = Object.fromEntries(Option.getOrElse(o.filter, () => new Map<string, string>()))
    for (const [name, value] of [["start", o.start], ["end", o.end], ["at", o.at]] as const) if (Option.isSome(value)) query[name] = value.value
    // A split walks history in time order, so each day's or month's rows come together.
    if (Option.isSome(o.split)) Object.assign(query, { sort_by: type.time, sort_order: "asc" })
    const exported = yield* Effect.mapError((yield* makeExportCalls)(entry)!({ principal: operator, query, origin: requestOrigin("http://localhost") }), fail)
    if (o.estimate) {
      const estimate = yield* Effect.mapError(estimateExport(exported), fail)
      return yield* Console.log(JSON.stringify({ ...estimate, watermark: exported.watermark }, null, 2))
    }
    if (Option.isNone(o.out)) return yield* new UsageError({ message: "--out names the folder to write to (or ask for --estimate)" })
    const dir = o.out.value
    fs.mkdirSync(dir, { recursive: true })
    const files: Array<ManifestFile> = []
    const manifest = () => ({
      query: { type: o.type, endpoint: entry.path, ...query },
      schema_version: EXPORT_SCHEMA_VERSION,
      columns: exportColumns(exported.dataType).map((c) => c.name),
      format: o.format,
      watermark: exported.watermark,
      files
    })
    // Rewritten after each whole file, so it lists exactly the files that are whole.
    const saveManifest = Effect.sync(() => fs.writeFileSync(path.join(dir, "manifest.json"), JSON.stringify(manifest(), null, 2) + "\n"))
    const ext = exportMedia[o.format].extension
    const written = Option.isNone(o.split)
      ? Effect.flatMap(writeFile(exported, o.format, dir, `${o.type}-${entry.endpoint!.name}.${ext}`), (file) => Effect.zipRight(Effect.sync(() => files.push(file)), saveManifest))
      : Stream.runForEach(
          Stream.groupAdjacentBy(exported.rows, (row) => splitKey(o.split.pipe(Option.getOrThrow), row[type.time])),
          ([key, rows]) => Effect.flatMap(
            writeFile({ ...exported, rows: Stream.fromChunk(rows) }, o.format, dir, `${o.type}-${key}.${ext}`),
            (file) => Effect.zipRight(Effect.sync(() => files.push(file)), saveManifest)
          )
        )
    yield* Effect.zipRight(saveManifest, written).pipe(Effect.catchAll((e) =>
      new UsageError({ message: `export failed after ${files.length} whole file(s), listed in ${path.join(dir, "manifest.json")}: ${typeof e === "object" && e !== null && "detail" in e ? String(e.detail) : String(e)}` })))
    yield* Console.log(`exported ${files.reduce((n, f) => n + f.rows, 0)} rows in ${files.length} file(s) to ${dir} at watermark ${exported.watermark}`)
  }).pipe(Effect.provide(marketOn(o)))
).pipe(Command.withDescription(described(
  "Export a query's rows as CSV, JSON Lines or Parquet files with a manifest.",
  "gpu-market export --type rental --start 2026-06-01 --end 2026-07-01 --split day --out ./export"
)))
