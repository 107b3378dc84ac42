import * as Options from "@effect/cli/Options"
import { FormatImport, type FormatImportOptions, type FormatImportSummary, type QuarantineRule, type SkypilotImportOptions } from "@gpu-market/core"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { createReadStream } from "node:fs"
import { readFile, stat } from "node:fs/promises"
import { UsageError } from "./output.js"
import { makeProgress } from "./progress.js"
import { scanFile } from "./read.js"

/** The largest LiteLLM table an import reads (it is read whole; the real one is about 1.5 MB). */
export const LITELLM_MAX_BYTES = 64 * 1024 * 1024

/** Bytes of a SkyPilot catalog read at a time. */
const CHUNK_BYTES = 1 << 20

/**
 * Observations of a SkyPilot catalog written at a time: half the bulk load's batch, as each is
 * held three times over while its batch is written (converted, decoded, and as a row), on top of
 * the state per product that tells repeats across batches apart (BENCHMARKS.md, (k)).
 */
const SKYPILOT_BATCH = 25_000

/**
 * Streams a SkyPilot catalog into `FormatImport.skypilotStream` with a progress display of its
 * rows: a first pass counts them (CSV records after the header), as the row imports do. A bulk
 * load is prepared for two observations a row (on-demand and spot), the most a row yields.
 */
const importSkypilot = (path: string, options: SkypilotImportOptions) =>
  Effect.gen(function* () {
    const { rows: total } = yield* Effect.promise(() => scanFile(path, "csv"))
    const formats = yield* FormatImport
    const progress = makeProgress(process.stderr, "rows")
    const label = "importing skypilot"
    yield* progress.update(label, 0, total)
    const text = Stream.orDie(Stream.fromAsyncIterable(
      createReadStream(path, { encoding: "utf8", highWaterMark: CHUNK_BYTES }) as AsyncIterable<string>,
      (e) => e
    ))
    // Below the total until the end, should the first pass have counted a row the reader skips.
    const summary = yield* formats.skypilotStream(text, { ...options, observations: 2 * total, batch: SKYPILOT_BATCH, onRows: (done) => progress.update(label, Math.min(done, Math.max(0, total - 1)), total) })
    yield* progress.update(label, total, total)
    yield* progress.finish
    return summary
  })

/** Reads LiteLLM's table whole and imports it, refusing a file over `LITELLM_MAX_BYTES` as a usage error. */
const importLitellm = (path: string, options: FormatImportOptions) =>
  Effect.gen(function* () {
    const { size } = yield* Effect.promise(() => stat(path))
    if (size > LITELLM_MAX_BYTES) {
      return yield* new UsageError({ message: `--format litellm reads the table whole: ${path} is ${size} bytes, over the ${LITELLM_MAX_BYTES} an import takes` })
    }
    const text = yield* Effect.promise(() => readFile(path, "utf8"))
    return yield* (yield* FormatImport).litellm(text, options)
  })

/**
 * `gpu-market import <file> --format skypilot|litellm`: a public-format file converted and
 * written by core's `FormatImport` (each format implies its data type), with a report of what
 * became of every entry and what was withdrawn. A SkyPilot catalog is streamed, a batch at a
 * time, with the progress display of the row imports; LiteLLM's table, one JSON object, is read
 * whole, up to `LITELLM_MAX_BYTES`.
 */

/** The public formats `import --format` takes besides JSON Lines and CSV rows. */
export const PUBLIC_FORMATS = ["skypilot", "litellm"] as const
export type PublicFormat = (typeof PUBLIC_FORMATS)[number]

/** Whether a `--format` is a public format rather than rows of `--type`. */
export const isPublicFormat = (format: string): format is PublicFormat => (PUBLIC_FORMATS as ReadonlyArray<string>).includes(format)

/** The options of the public formats. */
export const formatOptions = {
  vendor: Options.text("vendor").pipe(
    Options.withPseudoName("slug"),
    Options.withDescription("with --format skypilot: the vendor (lambda, runpod, vast, …)"),
    Options.optional
  ),
  observedAt: Options.text("observed-at").pipe(
    Options.withPseudoName("instant"),
    Options.withDescription("with skypilot or litellm: the file's instant, ISO 8601; default now"),
    Options.optional
  ),
  snapshot: Options.boolean("snapshot").pipe(
    Options.withDescription("with skypilot or litellm: a whole catalog; what it lacks is withdrawn")
  )
}

type ParsedFormatOptions = {
  readonly vendor: Option.Option<string>
  readonly observedAt: Option.Option<string>
  readonly snapshot: boolean
}

/**
 * Imports a public-format file and reports it (`finishImport`). A command line the import cannot
 * take (no `--vendor`, an `--observed-at` that is no instant, a file not in the format given) is a
 * usage error: nothing is written.
 */
export const importFormat = (path: string, format: PublicFormat, o: ParsedFormatOptions, quarantine: ReadonlyArray<QuarantineRule>) =>
  Effect.gen(function* () {
    const vendor = format === "skypilot"
      ? yield* Option.match(o.vendor, { onNone: () => Effect.fail(new UsageError({ message: "--format skypilot needs --vendor <slug>" })), onSome: Effect.succeed })
      : undefined
    const options: FormatImportOptions = {
      ...Option.match(o.observedAt, { onNone: () => ({}), onSome: (observedAt) => ({ observedAt }) }), snapshot: o.snapshot, quarantine
    }
    const summary: FormatImportSummary = vendor === undefined ? yield* importLitellm(path, options) : yield* importSkypilot(path, { ...options, vendor })
    const written = Object.entries(summary.written).filter(([name]) => name !== "received")
    return {
      report: summary,
      extra: [`observed at ${summary.observedAt}: ${written.map(([name, n]) => `${name} ${n}`).join(", ")}` +
        (summary.withdrawn === null ? "" : `; snapshot withdrew ${summary.withdrawn}`)]
    }
  }).pipe(Effect.catchTag("ValidationFailed", (e) => Effect.fail(new UsageError({ message: e.detail }))))
