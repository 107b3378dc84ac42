import * as Options from "@effect/cli/Options"
import { FormatImport, type FormatImportOptions, type FormatImportSummary, type QuarantineRule } from "@gpu-market/core"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { readFile } from "node:fs/promises"
import { UsageError } from "./output.js"

/**
 * `gpu-market import <file> --format skypilot|litellm`: a public-format file read whole,
 * converted and written by core's `FormatImport` (each format implies its data type), with a
 * report of what became of every entry and what was withdrawn.
 */

/** The public formats `import --format` takes besides JSON Lines and CSV rows. */
export const PUBLIC_FORMATS = ["skypilot", "litellm"] as const
export type PublicFormat = (typeof PUBLIC_FORMATS)[number]

/** Whether a `--format` is a public format (read whole) rather than rows of `--type`. */
export const isPublicFormat = (format: string): format is PublicFormat => (PUBLIC_FORMATS as ReadonlyArray<string>).includes(format)

/** The options of the public formats. */
export const formatOptions = {
  vendor: Options.text("vendor").pipe(
    Options.withDescription("with --format skypilot: the vendor slug of the rows, which also names the SkyPilot cloud whose conventions apply (lambda, runpod, vast, …)"),
    Options.optional
  ),
  observedAt: Options.text("observed-at").pipe(
    Options.withDescription("with --format skypilot|litellm: the instant the file describes, ISO 8601; default now"),
    Options.optional
  ),
  snapshot: Options.boolean("snapshot").pipe(
    Options.withDescription("with --format skypilot|litellm: the file is the vendor's (litellm: the whole litellm source's) complete catalog at that instant; what it no longer lists is withdrawn then")
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
    const text = yield* Effect.promise(() => readFile(path, "utf8"))
    const formats = yield* FormatImport
    const options: FormatImportOptions = {
      ...Option.match(o.observedAt, { onNone: () => ({}), onSome: (observedAt) => ({ observedAt }) }), snapshot: o.snapshot, quarantine
    }
    const summary: FormatImportSummary = vendor === undefined ? yield* formats.litellm(text, options) : yield* formats.skypilot(text, { ...options, vendor })
    const written = Object.entries(summary.written).filter(([name]) => name !== "received")
    return {
      report: summary,
      extra: [`observed at ${summary.observedAt}: ${written.map(([name, n]) => `${name} ${n}`).join(", ")}` +
        (summary.withdrawn === null ? "" : `; snapshot withdrew ${summary.withdrawn}`)]
    }
  }).pipe(Effect.catchTag("ValidationFailed", (e) => Effect.fail(new UsageError({ message: e.detail }))))
