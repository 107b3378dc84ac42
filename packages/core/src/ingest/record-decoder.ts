import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type * as SchemaAST from "effect/SchemaAST"

/**
 * Decoding of ingest records, fast for the records that are valid. Schema's parser builds an
 * `Either` and a closure per field and refinement, several times the cost of everything else an
 * import does with a row; a record judged by plain checks compiled from the same AST (the same
 * refinement filters, the same property-signature transformations) costs a tenth of that. A
 * record the checks do not pass, or a schema with a node they do not cover, goes through the
 * parser: its answer, and every message it reports, is the parser's.
 */

const OPTIONS: SchemaAST.ParseOptions = { errors: "all", onExcessProperty: "error" }

type Check = (u: unknown) => boolean

/** The check of a value against `ast`, for the nodes it covers; `undefined` for any other. */
const checkOf = (ast: SchemaAST.AST): Check | undefined => {
  switch (ast._tag) {
    case "StringKeyword": return (u) => typeof u === "string"
    case "NumberKeyword": return (u) => typeof u === "number"
    case "BooleanKeyword": return (u) => typeof u === "boolean"
    case "UndefinedKeyword": return (u) => u === undefined
    case "Literal": {
      const literal = ast.literal
      return (u) => u === literal
    }
    case "Union": {
      const members = ast.types.map(checkOf)
      if (members.some((m) => m === undefined)) return undefined
      const checks = members as ReadonlyArray<Check>
      return (u) => checks.some((c) => c(u))
    }
    case "Refinement": {
      const from = checkOf(ast.from)
      if (from === undefined) return undefined
      return (u) => from(u) && Option.isNone(ast.filter(u, OPTIONS, ast))
    }
    default: return undefined
  }
}

interface Property {
  readonly name: string
  readonly type: SchemaAST.AST
  readonly optional: boolean
  readonly check: Check
}

/** The properties of a struct without index signatures, each with its check; `undefined` if one is not covered. */
const propertiesOf = (ast: SchemaAST.AST): ReadonlyArray<Property> | undefined => {
  if (ast._tag !== "TypeLiteral" || ast.indexSignatures.length > 0) return undefined
  const out: Array<Property> = []
  for (const p of ast.propertySignatures) {
    const check = checkOf(p.type)
    if (check === undefined || typeof p.name !== "string") return undefined
    out.push({ name: p.name, type: p.type, optional: p.isOptional, check })
  }
  return out
}

/** A plain object whose own keys are all among `names`; anything else is left to the parser. */
const plainRecord = (u: unknown, names: ReadonlySet<string>): Record<string, unknown> | undefined => {
  if (typeof u !== "object" || u === null) return undefined
  const proto = Object.getPrototypeOf(u)
  if (proto !== Object.prototype && proto !== null) return undefined
  for (const key of Reflect.ownKeys(u)) if (typeof key !== "string" || !names.has(key)) return undefined
  return u as Record<string, unknown>
}

/** Whether the record's values pass the checks of `properties`, and it has every required one. */
const passes = (record: Record<string, unknown>, properties: ReadonlyArray<Property>): boolean => {
  for (const p of properties) {
    if (Object.hasOwn(record, p.name) ? !p.check(record[p.name]) : !p.optional) return false
  }
  return true
}

/**
 * How one property of the type side gets its value from a record that passed the encoded side:
 * copied, or decoded by a property-signature transformation (an `optionalWith` default), and
 * whether its type-side check must run (a value given and decoded to itself, or copied, already
 * passed an encoded-side check that implies it: the same check, or the same allowing
 * `undefined`, when it is not undefined). An `optionalWith` field given a value so skips its
 * refinements the second time, which an import paid on every field of every row.
 */
interface Target extends Property {
  readonly source: string
  readonly decode: SchemaAST.PropertySignatureTransformation["decode"] | undefined
  readonly implied: boolean
}

const targetsOf = (ast: SchemaAST.Transformation, from: ReadonlyArray<Property>, to: ReadonlyArray<Property>): ReadonlyArray<Target> | undefined => {
  if (ast.transformation._tag !== "TypeLiteralTransformation") return undefined
  const psts = ast.transformation.propertySignatureTransformations
  const sources = new Set(psts.map((t) => t.from))
  // Each property comes from one place: transformations that chain or merge are the parser's.
  if (sources.size !== psts.length || new Set(psts.map((t) => t.to)).size !== psts.length) return undefined
  const copied = from.filter((p) => !sources.has(p.name))
  if (copied.some((p) => psts.some((t) => t.to === p.name)) || copied.some((p) => !to.some((q) => q.name === p.name))) return undefined
  const implies = (source: string, type: SchemaAST.AST) => {
    const encoded = from.find((f) => f.name === source)?.type
    const others = encoded?._tag === "Union" ? encoded.types.filter((m) => m._tag !== "UndefinedKeyword") : []
    return encoded === type || (others.length === 1 && others[0] === type)
  }
  return to.map((p): Target => {
    const t = psts.find((t) => t.to === p.name)
    if (t !== undefined) return { ...p, source: String(t.from), decode: t.decode, implied: implies(String(t.from), p.type) }
    return { ...p, source: p.name, decode: undefined, implied: implies(p.name, p.type) }
  })
}

/**
 * The fast path of a struct, of a struct transformed property by property (`optionalWith`
 * defaults), or of either refined as a whole (`Schema.filter` on the record).
 */
const fastPath = (ast: SchemaAST.AST): ((u: unknown) => Record<string, unknown> | undefined) | undefined => {
  if (ast._tag === "Refinement") {
    const from = fastPath(ast.from)
    if (from === undefined) return undefined
    return (u) => {
      const value = from(u)
      return value !== undefined && Option.isNone(ast.filter(value, OPTIONS, ast)) ? value : undefined
    }
  }
  const plain = propertiesOf(ast)
  if (plain !== undefined) {
    const names = new Set(plain.map((p) => p.name))
    return (u) => {
      const record = plainRecord(u, names)
      if (record === undefined || !passes(record, plain)) return undefined
      // As the parser builds it: the properties given, in declaration order.
      const out: Record<string, unknown> = {}
      for (const p of plain) if (Object.hasOwn(record, p.name)) out[p.name] = record[p.name]
      return out
    }
  }
  if (ast._tag !== "Transformation") return undefined
  const from = propertiesOf(ast.from)
  const to = propertiesOf(ast.to)
  const targets = from === undefined || to === undefined ? undefined : targetsOf(ast, from, to)
  if (from === undefined || targets === undefined) return undefined
  const names = new Set(from.map((p) => p.name))
  return (u) => {
    const record = plainRecord(u, names)
    if (record === undefined || !passes(record, from)) return undefined
    const out: Record<string, unknown> = {}
    for (const t of targets) {
      const given = Object.hasOwn(record, t.source)
      const raw = record[t.source]
      let value = raw
      if (t.decode !== undefined) {
        const o = t.decode(given ? Option.some(value) : Option.none())
        if (Option.isNone(o)) {
          if (!t.optional) return undefined
          continue
        }
        value = o.value
      } else if (!given) {
        if (!t.optional) return undefined
        continue
      }
      if (!(t.implied && given && value === raw && value !== undefined) && !t.check(value)) return undefined
      out[t.name] = value
    }
    return out
  }
}

/**
 * Whether `recordDecoder` judges valid records of `schema` by its compiled checks; when not, every
 * record goes through the parser, correct and as slow as before. A write path whose speed rests on
 * it holds its schema to this in a test, so a schema change that falls off the fast path is seen.
 */
export const hasFastPath = (schema: Schema.Schema.Any): boolean => fastPath(schema.ast) !== undefined

/**
 * `Schema.decodeUnknownEither(schema, { errors: "all", onExcessProperty: "error" })`, with the
 * same answer for every input, faster for valid records of a struct schema.
 */
export const recordDecoder = <A, I>(schema: Schema.Schema<A, I>): ((u: unknown) => Either.Either<A, ParseResult.ParseError>) => {
  const parse = Schema.decodeUnknownEither(schema, OPTIONS)
  const fast = fastPath(schema.ast)
  if (fast === undefined) return parse
  return (u) => {
    const value = fast(u)
    return value === undefined ? parse(u) : Either.right(value as A)
  }
}
