import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { parse as parseYaml } from "yaml"

/**
 * What an import did with every entry of its file, in one vocabulary for every surface (the CLI,
 * the Promise API, a scheduled sync): each entry read is stored, unchanged, a duplicate, skipped
 * on purpose, quarantined by a rule, or rejected, and the figures add up to what was read.
 * Quarantine rules and bounds form an `ImportPolicy`, a schema so that a file can carry one.
 */

/** Where in the source a converted observation or an issue comes from. */
export const SourcePlace = Schema.Struct({
  /** The 1-based line of the file (of a LiteLLM entry: the line of its key). */
  line: Schema.Number,
  /** The LiteLLM key of the entry; absent for a CSV row. */
  key: Schema.optionalWith(Schema.String, { exact: true })
})
export type SourcePlace = typeof SourcePlace.Type

/** A place as a report names it: `line 12`, or `line 22301 (gpt-4o)`. */
export const describePlace = (p: SourcePlace): string => `line ${p.line}${p.key === undefined ? "" : ` (${p.key})`}`

/** Why an entry was rejected: what the file holds that could not be stored as written. */
export const REJECTION_REASONS = {
  /** Not valid CSV: a misplaced or unterminated quote. */
  not_csv: "not valid CSV",
  /** A JSON Lines line that is not JSON. */
  not_json: "not JSON",
  /** A CSV row with more or fewer fields than the header names. */
  field_count: "fields unlike the header",
  /** A price cell that is not a positive number. */
  not_a_price: "not a price",
  /** A row or entry the format's reader cannot make sense of (no instance type, no model slug, an unknown price tier). */
  unreadable: "unreadable",
  /** Refused by the data type's schema. */
  invalid: "invalid",
  /** Outside the plausible range of its data type (`IngestBounds`). */
  out_of_bounds: "out of bounds",
  /** Another price for the same priced thing at the same instant, in the file or already stored. */
  conflicting_price: "conflicting price"
} as const

/** A reason of `REJECTION_REASONS`. */
export type RejectionReason = keyof typeof REJECTION_REASONS

/** A reason name of `REJECTION_REASONS`. */
const Reason = Schema.Literal(...(Object.keys(REJECTION_REASONS) as Array<RejectionReason>))

/** An entry of the file that was not stored, why, and where it is. */
export const Rejection = Schema.Struct({ ...SourcePlace.fields, reason: Reason, message: Schema.String })
export type Rejection = typeof Rejection.Type

/** A rejection a quarantine rule expected: recorded, not stored, and not a failure of the import. */
export const Quarantined = Schema.Struct({
  ...Rejection.fields,
  /** The rule's `why`. */
  rule: Schema.String
})
export type Quarantined = typeof Quarantined.Type

/** Entries by rejection reason; a reason none had is absent. */
const ByReason = Schema.partialWith(Schema.Record({ key: Reason, value: Schema.Number }), { exact: true })

/**
 * What became of every entry an import read. An entry is a row of a row import; of a SkyPilot
 * catalog, each price of a GPU row (on-demand and spot) and each row left out whole (a CPU-only or
 * unreadable row); of LiteLLM's table, each price field of an entry and each top-level value left
 * out whole. `read` is the sum of all the others.
 */
export const ImportCounts = Schema.Struct({
  read: Schema.Number,
  /** Stored as a new price: a product or price not seen before, or a price that changed. */
  stored: Schema.Number,
  /** The price already in force: nothing written. */
  unchanged: Schema.Number,
  /** A repeat of another entry of the file or of a stored observation at the same instant and price. */
  duplicate: Schema.Number,
  /** Left out on purpose, by reason (`no_spot`, `cpu_only`, `non_token_price`, `alias`, …): nothing lost. */
  skipped: Schema.Record({ key: Schema.String, value: Schema.Number }),
  /** Rejected but expected by a quarantine rule, by rejection reason. */
  quarantined: ByReason,
  /** Rejected, by reason: the import failed for these. */
  rejected: ByReason
})
export type ImportCounts = typeof ImportCounts.Type

/** The part of every import's result that says what became of the file. */
export const ImportReport = Schema.Struct({
  counts: ImportCounts,
  /** Each rejected entry, in file order. */
  rejections: Schema.Array(Rejection),
  /** Each quarantined entry, in file order. */
  quarantined: Schema.Array(Quarantined)
})
export type ImportReport = typeof ImportReport.Type

const tally = <K extends string>(items: ReadonlyArray<{ readonly reason: K }>): Partial<Record<K, number>> => {
  const out: Partial<Record<K, number>> = {}
  for (const { reason } of items) out[reason] = (out[reason] ?? 0) + 1
  return out
}

const total = (counts: Readonly<Record<string, number | undefined>>) => Object.values(counts).reduce<number>((n, c) => n + (c ?? 0), 0)

/** The report of an import: its counts from what it stored, skipped, quarantined and rejected. */
export const importReport = (outcome: {
  readonly stored: number
  readonly unchanged: number
  readonly duplicate: number
  readonly skipped: Readonly<Record<string, number>>
  readonly rejections: ReadonlyArray<Rejection>
  readonly quarantined: ReadonlyArray<Quarantined>
}): ImportReport => {
  const byLine = (a: SourcePlace, b: SourcePlace) => a.line - b.line
  const rejections = [...outcome.rejections].sort(byLine)
  const quarantined = [...outcome.quarantined].sort(byLine)
  const counts = {
    stored: outcome.stored, unchanged: outcome.unchanged, duplicate: outcome.duplicate, skipped: outcome.skipped,
    quarantined: tally(quarantined), rejected: tally(rejections)
  }
  return {
    counts: { read: counts.stored + counts.unchanged + counts.duplicate + total(counts.skipped) + quarantined.length + rejections.length, ...counts },
    rejections,
    quarantined
  }
}

const breakdown = (counts: Readonly<Record<string, number | undefined>>) => {
  const parts = Object.entries(counts).filter(([, n]) => (n ?? 0) > 0)
  return `${total(counts)}${parts.length === 0 ? "" : ` (${parts.map(([reason, n]) => `${reason} ${n}`).join(", ")})`}`
}

/**
 * The counts as one line, the way every surface prints them:
 * `read 4750: stored 2772, unchanged 0, duplicate 14, skipped 1964 (no_spot 1214, cpu_only 750), quarantined 0, rejected 0`.
 */
export const describeCounts = (c: ImportCounts): string =>
  `read ${c.read}: stored ${c.stored}, unchanged ${c.unchanged}, duplicate ${c.duplicate}, skipped ${breakdown(c.skipped)}, ` +
  `quarantined ${breakdown(c.quarantined)}, rejected ${breakdown(c.rejected)}`

/**
 * A quarantine rule: rejections of `reason` whose entry has every field of `match` are expected.
 * A field is one of the observation's (`vendor`, `vendor_sku`, `source`, `serving_provider`,
 * `model`, …) or `key`, the LiteLLM key; a value may use `*` for any run of characters.
 */
export const QuarantineRule = Schema.Struct({
  match: Schema.Record({ key: Schema.String, value: Schema.String }).pipe(
    Schema.filter((m) => Object.keys(m).length > 0 || "a rule must match at least one field")
  ),
  reason: Reason,
  why: Schema.NonEmptyTrimmedString
})
export type QuarantineRule = typeof QuarantineRule.Type

const BoundSchema = Schema.Struct({ min: Schema.Number, max: Schema.Number })

/**
 * How an import treats what it reads, beyond the write paths' own rules: the plausibility bounds
 * of the data types it writes (over `DEFAULT_INGEST_BOUNDS`), and the quarantine rules. A schema,
 * so that a JSON or YAML file (a rules file, a sync source's entry) decodes into one.
 */
export const ImportPolicy = Schema.Struct({
  bounds: Schema.optional(Schema.Struct({
    rental: Schema.optionalWith(BoundSchema, { exact: true }),
    hardware: Schema.optionalWith(BoundSchema, { exact: true }),
    llm: Schema.optionalWith(BoundSchema, { exact: true }),
    transactions: Schema.optionalWith(BoundSchema, { exact: true })
  })),
  quarantine: Schema.optional(Schema.Array(QuarantineRule))
})
export type ImportPolicy = typeof ImportPolicy.Type

const decodePolicy = Schema.decodeUnknownEither(ImportPolicy)

/** A policy file's text, YAML (of which JSON is a part), as a policy; or why it is not one, in a line. */
export const parseImportPolicy = (text: string): Either.Either<ImportPolicy, string> => {
  let value: unknown
  try {
    value = parseYaml(text)
  } catch (e) {
    return Either.left(`not YAML or JSON: ${oneLine((e as Error).message)}`)
  }
  return Either.mapLeft(decodePolicy(value ?? {}, { onExcessProperty: "error" }), (e) => oneLine(ParseResult.TreeFormatter.formatErrorSync(e)))
}

const oneLine = (text: string) => text.replace(/\s+/g, " ").trim()

const globOf = (pattern: string) =>
  new RegExp(`^${pattern.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`)

/** The rule of `rules` that expects a rejection of `reason` of an entry with `fields`, if any. */
const quarantineRuleFor = (
  rules: ReadonlyArray<QuarantineRule>,
  reason: RejectionReason,
  fields: Readonly<Record<string, unknown>>
): QuarantineRule | undefined =>
  rules.find((rule) => rule.reason === reason && Object.entries(rule.match).every(([field, pattern]) => {
    const value = fields[field]
    return (typeof value === "string" || typeof value === "number") && globOf(pattern).test(String(value))
  }))

/**
 * The reason of a write path's refusal of one record. The write paths name the bound or the
 * conflict in their messages (`outOfBounds`, `planVersions`); anything else the schema refused.
 */
export const writeRejectionReason = (message: string): RejectionReason =>
  message.includes("(IngestBounds)") ? "out_of_bounds"
    : /another price for this product|\b\w+ prices for one product\b/.test(message) ? "conflicting_price"
      : "invalid"

/** A rejection, or a quarantined entry when a rule expects it. */
export const judged = (
  rules: ReadonlyArray<QuarantineRule>,
  rejection: Rejection,
  fields: Readonly<Record<string, unknown>>
): { readonly rejection: Rejection } | { readonly quarantined: Quarantined } => {
  const rule = quarantineRuleFor(rules, rejection.reason, { ...fields, ...(rejection.key === undefined ? {} : { key: rejection.key }) })
  return rule === undefined ? { rejection } : { quarantined: { ...rejection, rule: rule.why } }
}

/** The formats an import file can be in, as `sniffFormat` tells them apart. */
export type FileFormat = "skypilot" | "litellm" | "csv" | "jsonl"

/** A format as a message names it, with the flag that reads it. */
const FORMAT_NAMES: Readonly<Record<FileFormat, string>> = {
  skypilot: "a SkyPilot catalog (--format skypilot --vendor <slug>)",
  litellm: "LiteLLM's price table (--format litellm)",
  csv: "a CSV of rows (--format csv --type <type>)",
  jsonl: "JSON Lines rows (--format jsonl --type <type>)"
}

/**
 * What a file's text looks like: the format whose shape it has, or undefined when none. The text
 * may be the file's first bytes only: a LiteLLM table cut short is still told by its entries'
 * `litellm_provider`.
 */
export const sniffFormat = (text: string): FileFormat | undefined => {
  const body = text.startsWith("\uFEFF") ? text.slice(1) : text
  const first = body.split(/\r\n|\n|\r/, 1)[0]!.trim()
  if (body.trimStart().startsWith("{")) {
    try {
      const whole: unknown = JSON.parse(body)
      if (typeof whole === "object" && whole !== null && !Array.isArray(whole) &&
        Object.values(whole).some((e) => typeof e === "object" && e !== null && "litellm_provider" in e)) return "litellm"
    } catch {
      // Not one JSON value: JSON Lines, if its first line is one, or the start of a LiteLLM table.
    }
    try {
      JSON.parse(first)
      return "jsonl"
    } catch {
      return /"litellm_provider"\s*:/.test(body) ? "litellm" : undefined
    }
  }
  const header = first.split(",").map((h) => h.trim().replace(/^"|"$/g, ""))
  if (header.includes("InstanceType") && header.includes("AcceleratorName")) return "skypilot"
  return header.length > 1 ? "csv" : undefined
}

/** That a file is not in the format it was given as, why when known, and what it looks like instead. */
export const notTheFormat = (given: FileFormat, why: string | undefined, text: string): string => {
  const looks = sniffFormat(text)
  return `the file is not ${FORMAT_NAMES[given]}${why === undefined ? "" : `: ${why}`}; ` +
    (looks === undefined || looks === given ? "it looks like no format gpu-market reads" : `it looks like ${FORMAT_NAMES[looks]}`)
}
