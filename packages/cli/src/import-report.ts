import * as Options from "@effect/cli/Options"
import {
  type Bound, describeCounts, describePlace, type ImportPolicy, type ImportReport, type IngestBoundsConfig, ingestBounds, parseImportPolicy, type QuarantineRule
} from "@gpu-market/core"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { readFile, writeFile } from "node:fs/promises"
import { integerIn } from "./checked.js"
import { UsageError } from "./output.js"

/**
 * What every `gpu-market import` shares: its policy (bounds and quarantine rules, from a policy
 * file, `--bounds` and the environment), and its report: the counts in the one vocabulary core
 * gives every surface, the first rejections by line, all of them in a JSON Lines file on request,
 * and the exit code (0 when nothing was rejected, 1 when anything was).
 */

/** Rejections listed on stdout unless `--show-rejections` says otherwise. */
const DEFAULT_SHOWN = 10

/** The options of every import's policy and report. */
export const importReportOptions = {
  showRejections: integerIn("show-rejections", 0).pipe(
    Options.withPseudoName("n"),
    Options.withDescription(`rejected and quarantined entries listed by line; default ${DEFAULT_SHOWN}`),
    Options.optional
  ),
  rejections: Options.text("rejections").pipe(
    Options.withPseudoName("file"),
    Options.withDescription("write every rejected and quarantined entry to this JSON Lines file"),
    Options.optional
  ),
  bounds: Options.text("bounds").pipe(
    Options.withPseudoName("bounds"),
    Options.withDescription("plausibility bounds, TYPE=MIN..MAX,…; $GPU_MARKET_IMPORT_BOUNDS"),
    Options.optional
  ),
  policy: Options.text("policy").pipe(
    Options.withPseudoName("file"),
    Options.withDescription("YAML or JSON of bounds and quarantine rules; $GPU_MARKET_IMPORT_POLICY"),
    Options.optional
  )
}

type ParsedReportOptions = {
  readonly showRejections: Option.Option<number>
  readonly rejections: Option.Option<string>
  readonly bounds: Option.Option<string>
  readonly policy: Option.Option<string>
}

/** What an import runs under: the write paths' bounds and the quarantine rules. */
interface ResolvedPolicy {
  readonly bounds: IngestBoundsConfig
  readonly quarantine: ReadonlyArray<QuarantineRule>
}

const BOUND_TYPES = ["rental", "hardware", "llm", "transactions"] as const

/** `rental=0.01..100,llm=0..20000` as bounds by type; `where` names the flag or variable in the error. */
const parseBounds = (text: string, where: string): Either.Either<Partial<Record<(typeof BOUND_TYPES)[number], Bound>>, string> => {
  const out: Partial<Record<(typeof BOUND_TYPES)[number], Bound>> = {}
  for (const part of text.split(",").map((p) => p.trim()).filter((p) => p !== "")) {
    const m = /^([a-z]+)=([^.]*(?:\.\d+)?)\.\.(.+)$/.exec(part)
    const type = BOUND_TYPES.find((t) => t === m?.[1])
    const min = Number(m?.[2])
    const max = Number(m?.[3])
    if (m === null || type === undefined || m[2]!.trim() === "" || !Number.isFinite(min) || !Number.isFinite(max) || min < 0 || min > max) {
      return Either.left(`${where}: ${JSON.stringify(part)} is not TYPE=MIN..MAX with TYPE one of ${BOUND_TYPES.join(", ")} and 0 ≤ MIN ≤ MAX`)
    }
    out[type] = { min, max }
  }
  return Either.right(out)
}

/** `$name`, unless unset or blank. */
const fromEnvironment = (name: string): Option.Option<string> =>
  Option.filter(Option.fromNullable(process.env[name]), (text) => text.trim() !== "")

/**
 * The policy of an import: the policy file's (`--policy`, else `$GPU_MARKET_IMPORT_POLICY`), with
 * `--bounds` (else `$GPU_MARKET_IMPORT_BOUNDS`) over its bounds. Anything unreadable is a usage error.
 */
export const resolvePolicy = (o: ParsedReportOptions): Effect.Effect<ResolvedPolicy, UsageError> =>
  Effect.gen(function* () {
    const usage = (message: string) => new UsageError({ message })
    let policy: ImportPolicy = {}
    const policyFile = Option.orElse(o.policy, () => fromEnvironment("GPU_MARKET_IMPORT_POLICY"))
    if (Option.isSome(policyFile)) {
      const path = policyFile.value
      const text = yield* Effect.tryPromise({ try: () => readFile(path, "utf8"), catch: () => usage(`cannot read the import policy ${path}`) })
      policy = yield* Either.mapLeft(parseImportPolicy(text), (why) => usage(`the import policy ${path}: ${why}`))
    }
    const boundsText = Option.orElse(o.bounds, () => fromEnvironment("GPU_MARKET_IMPORT_BOUNDS"))
    const override = Option.isNone(boundsText) ? {} : yield* Either.mapLeft(
      parseBounds(boundsText.value, Option.isSome(o.bounds) ? "--bounds" : "$GPU_MARKET_IMPORT_BOUNDS"), usage
    )
    const bounds = yield* Effect.try({ try: () => ingestBounds({ ...policy.bounds, ...override }), catch: (e) => usage((e as Error).message) })
    return { bounds, quarantine: policy.quarantine ?? [] }
  })

/** The report's lines: counts, then the first `shown` rejections and quarantined entries by line. */
const reportLines = (report: ImportReport, shown: number): Array<string> => {
  const listed = <T extends { readonly line: number; readonly key?: string; readonly message: string }>(
    title: string, items: ReadonlyArray<T>, note: (item: T) => string
  ) => items.length === 0 ? [] : [
    `${title} (${items.length}${items.length > shown ? `, first ${shown} shown` : ""}):`,
    ...items.slice(0, shown).map((i) => `  ${describePlace(i)}: ${i.message}${note(i)}`),
    ...(items.length > shown ? [`  … ${items.length - shown} more (--rejections FILE writes them all, --show-rejections N shows more)`] : [])
  ]
  return [
    describeCounts(report.counts),
    ...listed("rejected", report.rejections, () => ""),
    ...listed("quarantined", report.quarantined, (q) => ` [rule: ${q.rule}]`)
  ]
}

/**
 * Prints an import's report (`extra` lines after the counts), writes its rejections file when
 * asked, and sets exit code 1 when anything was rejected.
 */
export const finishImport = (report: ImportReport, o: ParsedReportOptions, extra: ReadonlyArray<string> = []) =>
  Effect.gen(function* () {
    const shown = Option.getOrElse(o.showRejections, () => DEFAULT_SHOWN)
    const [counts, ...rest] = reportLines(report, shown)
    yield* Console.log([counts, ...extra, ...rest].join("\n"))
    if (Option.isSome(o.rejections)) {
      const lines = [
        ...report.rejections.map((r) => ({ status: "rejected", ...r })),
        ...report.quarantined.map((q) => ({ status: "quarantined", ...q }))
      ].sort((a, b) => a.line - b.line).map((r) => `${JSON.stringify(r)}\n`)
      const path = o.rejections.value
      yield* Effect.tryPromise({ try: () => writeFile(path, lines.join("")), catch: (e) => new Error(`cannot write the rejections file ${path}: ${(e as Error).message}`) })
    }
    if (report.rejections.length > 0) {
      yield* Console.error(`gpu-market import: ${report.rejections.length} rejected (see "rejected" above) and not stored; every other entry is stored or accounted for`)
      process.exitCode = 1
    }
  })
