import * as Options from "@effect/cli/Options"
import { describePlace, FormatImport, type FormatImportOptions, type FormatImportSummary } from "@gpu-market/core"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { readFile } from "node:fs/promises"

/**
 * `gpu-market import <file> --format skypilot|litellm`: a public-format file read whole,
 * converted and written by core's `FormatImport` (each format implies its data type), with a
 * report of what was accepted, refused, skipped and withdrawn.
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

/** The report of an import: counts first, then each refused observation and each issue, by line. */
export const formatReport = (summary: FormatImportSummary): string => {
  const skipped = Object.entries(summary.skipped)
  const written = Object.entries(summary.written).filter(([name]) => name !== "received")
  return [
    `accepted ${summary.accepted - summary.written.duplicates}, duplicate ${summary.written.duplicates}, rejected ${summary.rejected.length}, skipped ${skipped.reduce((n, [, c]) => n + c, 0)}` +
    (skipped.length === 0 ? "" : ` (${skipped.map(([reason, n]) => `${reason} ${n}`).join(", ")})`),
    `observed at ${summary.observedAt}: ${written.map(([name, n]) => `${name} ${n}`).join(", ")}` +
    (summary.withdrawn === null ? "" : `; snapshot withdrew ${summary.withdrawn}`),
    ...summary.rejected.map((r) => `  ${describePlace(r)}: ${r.message}`),
    ...(summary.issues.length === 0 ? [] : [`not read as written (${summary.issues.length}):`, ...summary.issues.map((i) => `  ${describePlace(i)}: ${i.message}`)])
  ].join("\n")
}

/** Imports a public-format file; exits 1 when the write path refused any observation. */
export const importFormat = (path: string, format: PublicFormat, o: ParsedFormatOptions) =>
  Effect.gen(function* () {
    const text = yield* Effect.promise(() => readFile(path, "utf8"))
    const formats = yield* FormatImport
    const options: FormatImportOptions = { ...Option.match(o.observedAt, { onNone: () => ({}), onSome: (observedAt) => ({ observedAt }) }), snapshot: o.snapshot }
    const summary: FormatImportSummary = format === "litellm"
      ? yield* formats.litellm(text, options)
      : yield* formats.skypilot(text, {
        ...options, vendor: yield* Option.match(o.vendor, { onNone: () => Effect.fail("--format skypilot needs --vendor <slug>"), onSome: Effect.succeed })
      })
    yield* Console.log(formatReport(summary))
    if (summary.rejected.length > 0) {
      yield* Console.error(`gpu-market import: ${summary.rejected.length} observation(s) rejected (listed above) and not stored; every other one is stored`)
      process.exitCode = 1
    }
  }).pipe(Effect.catchTag("ValidationFailed", (e) => Effect.fail(e.detail)))
