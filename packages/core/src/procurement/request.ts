import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { LineCounter, parseDocument } from "yaml"
import { type ParameterIssue, PayloadTooLarge, type ValidationFailed, validationFailed } from "../errors.js"
import { OfferRequest } from "../schema/procurement.js"
import { tooDeep, valueTooDeep, yamlTooDeep } from "./nesting.js"

/**
 * The body of `POST /get_offers`, YAML (or JSON), parsed defensively: a byte cap before the parser sees
 * anything, nesting bounded before the parser's recursive part sees it (and again after aliases
 * are expanded), the YAML 1.2 core schema with no custom tags, unique keys, one document, and a
 * cap on alias expansion (a "billion laughs" body is refused, not expanded). Every failure is a
 * `ValidationFailed` naming where: the field path, or the YAML line and column.
 */

/** Largest body accepted, in bytes. */
export const MAX_OFFER_REQUEST_BYTES = 16 * 1024

/** Most nodes alias expansion may produce. */
const MAX_ALIAS_COUNT = 100

const decode = Schema.decodeUnknownEither(OfferRequest, { errors: "all", onExcessProperty: "error" })

const bodyIssue = (message: string): ValidationFailed => validationFailed([{ parameter: "body", message }])

/** `regions[1]`, `storage.size_gb`: a path as a reader writes it. */
const pathText = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>((out, k) => (typeof k === "number" ? `${out}[${k}]` : out === "" ? String(k) : `${out}.${String(k)}`), "")

/** How an offer request is written: YAML (the spec's), or JSON (what generated clients send). */
export type OfferRequestFormat = "yaml" | "json"

/** A parsed body: its value, and where a field path sits in the text (YAML's line), if known. */
interface Parsed {
  readonly value: unknown
  readonly where: (path: ReadonlyArray<PropertyKey>) => string
}

const parseYaml = (text: string): Either.Either<Parsed, ValidationFailed> => {
  if (yamlTooDeep(text)) return Either.left(validationFailed([tooDeep]))
  const lines = new LineCounter()
  let value: unknown
  let doc: ReturnType<typeof parseDocument>
  try {
    doc = parseDocument(text, {
      schema: "core", customTags: [], uniqueKeys: true, merge: false, strict: true, prettyErrors: false, lineCounter: lines
    })
    const problem = doc.errors[0] ?? doc.warnings[0]
    if (problem !== undefined) {
      const at = lines.linePos(problem.pos[0])
      return Either.left(validationFailed([{
        parameter: `line ${at.line}, column ${at.col}`,
        message: `invalid YAML: ${problem.message.split("\n", 1)[0]}`
      }]))
    }
    value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT })
  } catch (e) {
    // The parser throws for excessive alias expansion.
    return Either.left(bodyIssue(`refused: ${e instanceof Error ? e.message.split("\n", 1)[0] : "unreadable YAML"}`))
  }
  return Either.right({
    value,
    where: (path) => {
      const node = path.length > 0 ? doc.getIn(path as Array<string | number>, true) : undefined
      const range = (node as { range?: [number, number, number] } | undefined)?.range
      return range === undefined ? "" : ` (line ${lines.linePos(range[0]).line})`
    }
  })
}

const parseJson = (text: string): Either.Either<Parsed, ValidationFailed> => {
  try {
    return Either.right({ value: JSON.parse(text), where: () => "" })
  } catch (e) {
    return Either.left(bodyIssue(`invalid JSON: ${e instanceof Error ? e.message.split("\n", 1)[0] : "unreadable"}`))
  }
}

/**
 * Parses and validates an offer request; `body` is the raw text (or bytes) as received, in
 * `format` (YAML by default). Both formats pass the same caps and the same schema, so a request
 * means the same and fails the same whichever way it is written.
 */
export const parseOfferRequest = (
  body: string | Uint8Array,
  format: OfferRequestFormat = "yaml"
): Either.Either<OfferRequest, ValidationFailed | PayloadTooLarge> => {
  const bytes = typeof body === "string" ? Buffer.byteLength(body, "utf8") : body.byteLength
  if (bytes > MAX_OFFER_REQUEST_BYTES) {
    return Either.left(new PayloadTooLarge({
      detail: `the body is ${bytes} bytes; at most ${MAX_OFFER_REQUEST_BYTES} are accepted`,
      limit_bytes: MAX_OFFER_REQUEST_BYTES
    }))
  }
  let text: string
  try {
    text = typeof body === "string" ? body : new TextDecoder("utf-8", { fatal: true }).decode(body)
  } catch {
    return Either.left(bodyIssue("not valid UTF-8"))
  }
  const parsed = format === "json" ? parseJson(text) : parseYaml(text)
  if (Either.isLeft(parsed)) return Either.left(parsed.left)
  const { value, where } = parsed.right
  // Aliases nest what they name inside whatever holds them: the text's depth does not bound the value's.
  if (valueTooDeep(value)) return Either.left(validationFailed([tooDeep]))
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    const mapping = format === "json" ? "a JSON object" : "a YAML mapping"
    return Either.left(bodyIssue(`expected ${mapping} of the request's fields (gpu, gpu_count, …)`))
  }
  const decoded = decode(value)
  if (Either.isRight(decoded)) return Either.right(decoded.right)
  // Optional fields report an "Expected undefined" issue beside the real one: keep each path's first.
  const issues = new Map<string, ParameterIssue>()
  for (const issue of ParseResult.ArrayFormatter.formatErrorSync(decoded.left)) {
    const parameter = pathText(issue.path) || "body"
    if (issues.has(parameter)) continue
    const message = issue._tag === "Unexpected" ? "unknown field" : issue._tag === "Missing" ? "required" : issue.message
    issues.set(parameter, { parameter, message: `${message}${where(issue.path)}` })
  }
  // A field whose part failed also reports the field itself (its optional union): keep the part.
  const named = [...issues.values()]
  return Either.left(validationFailed(named.filter((i) =>
    !named.some((j) => j.parameter.startsWith(`${i.parameter}.`) || j.parameter.startsWith(`${i.parameter}[`)))))
}
