import { ImportPolicy, parseImportPolicy } from "@gpu-market/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { readFile } from "node:fs/promises"
import { dirname, isAbsolute, join } from "node:path"
import { parse as parseYaml } from "yaml"
import type { FetchPolicy } from "./fetch-source.js"
import { ROW_TYPES, type TypeName } from "./import.js"
import { UsageError } from "./output.js"

/**
 * A sources file (YAML, of which JSON is a part): the sources `gpu-market sync` pulls, each named,
 * with where it is, its format, whether it is a complete snapshot, how it is fetched, and the
 * import policy its entries are judged by.
 */

/** The fetch settings a source leaves out. */
export const FETCH_DEFAULTS: FetchPolicy = { timeoutMs: 30_000, attempts: 4, backoffMs: 1_000, maxBytes: 64 * 1024 * 1024, maxRedirects: 5 }

/** The share of a vendor's current products a snapshot may withdraw unless the source says otherwise. */
export const DEFAULT_MAX_WITHDRAWAL = 0.25

const Interval = Schema.String.pipe(Schema.filter((s) => Option.isSome(Duration.decodeUnknown(s)) || "a duration such as \"1 hour\" or \"30 minutes\""))
const Positive = Schema.Number.pipe(Schema.int(), Schema.positive())

const Source = Schema.Struct({
  /** The source's name: its key in the store's sync state and in every report. */
  name: Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9._-]*$/, { message: () => "lower-case letters, digits, '.', '_' and '-'" })),
  /** An http(s) URL, or a local path (relative to the sources file). */
  url: Schema.NonEmptyTrimmedString,
  /**
   * skypilot, litellm, ecb (the ECB's euro reference rates, XML, stored as FX rates in USD), or
   * jsonl/csv: rows of one `type`, through the same import as `gpu-market import --type`.
   */
  format: Schema.Literal("skypilot", "litellm", "ecb", "jsonl", "csv"),
  /** jsonl and csv: the data type of the rows. */
  type: Schema.optional(Schema.Literal(...ROW_TYPES)),
  /** skypilot: the vendor slug of the rows. */
  vendor: Schema.optional(Schema.String),
  /** The source is the complete catalog: what it no longer lists is withdrawn. */
  snapshot: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  interval: Schema.optionalWith(Interval, { default: () => "1 hour" }),
  /** An import policy, or the path of a policy file (relative to the sources file). */
  policy: Schema.optional(Schema.Union(Schema.String, ImportPolicy)),
  max_withdrawal: Schema.optionalWith(Schema.Number.pipe(Schema.between(0, 1)), { default: () => DEFAULT_MAX_WITHDRAWAL }),
  timeout_ms: Schema.optionalWith(Positive, { default: () => FETCH_DEFAULTS.timeoutMs }),
  attempts: Schema.optionalWith(Positive, { default: () => FETCH_DEFAULTS.attempts }),
  backoff_ms: Schema.optionalWith(Positive, { default: () => FETCH_DEFAULTS.backoffMs }),
  max_bytes: Schema.optionalWith(Positive, { default: () => FETCH_DEFAULTS.maxBytes }),
  max_redirects: Schema.optionalWith(Schema.Number.pipe(Schema.int(), Schema.nonNegative()), { default: () => FETCH_DEFAULTS.maxRedirects })
}).pipe(
  Schema.filter((s) => s.format !== "skypilot" || s.vendor !== undefined || `source ${s.name}: format skypilot needs a vendor`),
  Schema.filter((s) => !holdsRows(s.format) || s.type !== undefined || `source ${s.name}: format ${s.format} needs a type (${ROW_TYPES.join(", ")})`),
  Schema.filter((s) => holdsRows(s.format) || s.type === undefined || `source ${s.name}: type is for formats jsonl and csv only`),
  // Only the public catalogs say what a vendor no longer sells: FX rates are kept per currency and day,
  // and rows of a file add observations, which never say what a vendor has stopped offering.
  Schema.filter((s) => !s.snapshot || s.format === "skypilot" || s.format === "litellm" ||
    `source ${s.name}: format ${s.format} cannot be a snapshot (only skypilot and litellm catalogs withdraw what they no longer list)`)
)

const SourcesFile = Schema.Struct({ sources: Schema.NonEmptyArray(Source) }).pipe(
  Schema.filter((f) => {
    const names = f.sources.map((s) => s.name)
    const twice = names.find((n, i) => names.indexOf(n) !== i)
    return twice === undefined || `source ${twice} is named twice`
  })
)

/** A source as a sync runs it: its policy read, its location resolved. */
export interface SyncSource {
  readonly name: string
  readonly url: string
  readonly format: SourceFormat
  /** jsonl and csv: the data type of the rows. */
  readonly type: TypeName | undefined
  readonly vendor: string | undefined
  readonly snapshot: boolean
  readonly interval: Duration.Duration
  readonly policy: ImportPolicy
  readonly maxWithdrawal: number
  readonly fetch: FetchPolicy
}

/** A source's format: a public one, or rows of one type. */
export type SourceFormat = "skypilot" | "litellm" | "ecb" | "jsonl" | "csv"

/** Whether a source's body is rows of one type, imported as `gpu-market import --type` does. */
export const holdsRows = (format: SourceFormat): format is "jsonl" | "csv" => format === "jsonl" || format === "csv"

const oneLine = (text: string) => text.replace(/\s+/g, " ").trim()

/** The sources of a sources file; anything unreadable in it is a usage error naming the file. */
export const readSources = (path: string): Effect.Effect<ReadonlyArray<SyncSource>, UsageError> =>
  Effect.gen(function* () {
    const usage = (why: string) => new UsageError({ message: `the sources file ${path}: ${why}` })
    const text = yield* Effect.tryPromise({ try: () => readFile(path, "utf8"), catch: () => usage("cannot be read") })
    const value = yield* Effect.try({ try: () => parseYaml(text) as unknown, catch: (e) => usage(`not YAML: ${oneLine((e as Error).message)}`) })
    const file = yield* Either.mapLeft(
      Schema.decodeUnknownEither(SourcesFile)(value, { onExcessProperty: "error" }),
      (e) => usage(oneLine(ParseResult.TreeFormatter.formatErrorSync(e)))
    )
    const here = (p: string) => (isAbsolute(p) || /^https?:\/\//i.test(p) ? p : join(dirname(path), p))
    return yield* Effect.forEach(file.sources, (s) => Effect.gen(function* () {
      let policy: ImportPolicy = {}
      if (typeof s.policy === "string") {
        const policyPath = here(s.policy)
        const policyText = yield* Effect.tryPromise({ try: () => readFile(policyPath, "utf8"), catch: () => usage(`source ${s.name}: cannot read the policy ${policyPath}`) })
        policy = yield* Either.mapLeft(parseImportPolicy(policyText), (why) => usage(`source ${s.name}: the policy ${policyPath}: ${why}`))
      } else if (s.policy !== undefined) policy = s.policy
      return {
        name: s.name, url: here(s.url), format: s.format, type: s.type, vendor: s.vendor, snapshot: s.snapshot,
        interval: Duration.decode(s.interval as Duration.DurationInput), policy, maxWithdrawal: s.max_withdrawal,
        fetch: { timeoutMs: s.timeout_ms, attempts: s.attempts, backoffMs: s.backoff_ms, maxBytes: s.max_bytes, maxRedirects: s.max_redirects }
      }
    }))
  })
