import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { type ParameterIssue, type ValidationFailed, validationFailed } from "../errors.js"

/**
 * The filter vocabulary shared by every data type, and the decoding of a raw query into typed
 * parameters. Every parameter schema carries one plain message, so a 422 names the parameter and
 * says what it accepts.
 */

/** Most values one comma-separated list may carry. */
export const MAX_LIST_VALUES = 20

/** The annotation that makes `message` the one message a parameter's failure reports. */
export const withMessage = (message: string) => ({ message: () => ({ message, override: true }) })

/** A comma-separated list of 1..`max` non-empty values; duplicates are dropped. */
export const CommaList = <A extends string>(item: Schema.Schema<A, string>, what: string, max = MAX_LIST_VALUES) =>
  Schema.compose(Schema.split(","), Schema.Array(item).pipe(Schema.minItems(1), Schema.maxItems(max))).pipe(
    Schema.annotations(withMessage(`expected a comma-separated list of 1 to ${max} ${what}`))
  )

/** A single non-empty value of at most 200 characters. */
export const Token = Schema.String.pipe(
  Schema.minLength(1),
  Schema.maxLength(200),
  Schema.annotations(withMessage("expected a non-empty value of at most 200 characters"))
)

/**
 * An inclusive bound: a plain non-negative decimal number. Its decoded side (a number >= 0) is
 * what OpenAPI documents, so a generated client sends a number.
 */
export const Bound = Schema.compose(
  Schema.String.pipe(Schema.pattern(/^\d{1,15}(\.\d{1,12})?$/)),
  Schema.NumberFromString
).pipe(Schema.nonNegative(), Schema.annotations(withMessage("expected a number >= 0, written as digits with an optional fraction")))

/** `page_size`: an integer from 1 to 1000 (documented as one). */
export const PageSize = Schema.compose(Schema.String.pipe(Schema.pattern(/^\d{1,4}$/)), Schema.NumberFromString).pipe(
  Schema.int(),
  Schema.between(1, 1000),
  Schema.annotations(withMessage("expected an integer from 1 to 1000"))
)

/** `page_size` when a request names none. */
export const DEFAULT_PAGE_SIZE = 100

/** `sort_order`. */
export const SortOrderParam = Schema.Literal("asc", "desc").pipe(
  Schema.annotations(withMessage("expected asc or desc"))
)

/** `sort_by` over an endpoint's own set of fields. */
export const SortByParam = <const F extends ReadonlyArray<string>>(fields: F) =>
  Schema.Literal(...fields).pipe(Schema.annotations(withMessage(`expected one of ${fields.join(", ")}`)))

/**
 * A datetime or a bare date, kept as text and resolved by the window / as-of rules. OpenAPI
 * documents it as an RFC 3339 `date-time` or a `date` (a datetime without an offset, read as
 * UTC, is accepted too).
 */
export const InstantParam = Schema.String.pipe(
  Schema.pattern(/^\d{4}-\d{2}-\d{2}([Tt ].+)?$/),
  Schema.annotations({
    ...withMessage("expected an ISO 8601 datetime or a YYYY-MM-DD date"),
    jsonSchema: { type: "string", anyOf: [{ format: "date-time" }, { format: "date" }] }
  })
)

/** What a caller may pass as a query: URL search params, pairs, or a record of strings. */
export type QueryInput =
  | URLSearchParams
  | ReadonlyArray<readonly [string, string]>
  | Readonly<Record<string, string | undefined>>

const pairsOf = (input: QueryInput): Iterable<readonly [string, string]> => {
  if (input instanceof URLSearchParams || Array.isArray(input)) return input as Iterable<readonly [string, string]>
  const pairs: Array<readonly [string, string]> = []
  for (const [k, v] of Object.entries(input as Record<string, string | undefined>)) if (v !== undefined) pairs.push([k, v])
  return pairs
}

/** Collects a query into a record, refusing a parameter given twice (lists are comma-separated). */
export const collectQuery = (input: QueryInput): Either.Either<Record<string, string>, ValidationFailed> => {
  // No prototype: `__proto__` and friends are ordinary keys, so they are refused as unknown.
  const out: Record<string, string> = Object.create(null)
  const issues: Array<ParameterIssue> = []
  for (const [k, v] of pairsOf(input)) {
    if (Object.prototype.hasOwnProperty.call(out, k)) {
      issues.push({ parameter: k, message: "given more than once; pass a comma-separated list instead" })
    } else out[k] = v
  }
  return issues.length > 0 ? Either.left(validationFailed(issues)) : Either.right(out)
}

/**
 * Decodes collected parameters with an endpoint's schema. Unknown parameters are refused and
 * every issue is reported, each naming its parameter.
 */
export const decodeParams = <A, I>(
  schema: Schema.Schema<A, I>,
  raw: Record<string, string>
): Either.Either<A, ValidationFailed> => {
  const decoded = Schema.decodeUnknownEither(schema, { errors: "all", onExcessProperty: "error" })(raw)
  if (Either.isRight(decoded)) return Either.right(decoded.right)
  // An optional parameter is a union with `undefined`, whose failure is reported too ("Expected
  // undefined"); the first issue of each parameter is the one that says what it accepts.
  const issues = new Map<string, ParameterIssue>()
  for (const issue of ParseResult.ArrayFormatter.formatErrorSync(decoded.left)) {
    const parameter = String(issue.path[0] ?? "query")
    if (!issues.has(parameter)) {
      issues.set(parameter, { parameter, message: issue._tag === "Unexpected" ? "unknown parameter" : issue.message })
    }
  }
  return Either.left(validationFailed([...issues.values()]))
}

/** Lower-cases and drops spaces and punctuation, as `gpu_search` compares names. */
export const normaliseName = (text: string): string => text.toLowerCase().replace(/[^a-z0-9]/g, "")

/** Refuses every parameter, for endpoints that take none (`/metadata`). */
export const refuseParameters = (input: QueryInput): Either.Either<void, ValidationFailed> => {
  const names = [...new Set([...pairsOf(input)].map(([k]) => k))]
  return names.length === 0
    ? Either.void
    : Either.left(validationFailed(names.map((parameter) => ({ parameter, message: "unknown parameter; this endpoint takes none" }))))
}
