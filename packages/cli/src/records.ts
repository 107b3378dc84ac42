import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"

/**
 * Typing CSV cells by the write path's own schema: a CSV cell is text, so a field the schema
 * takes as a number, boolean, null or list gets that type, and everything else stays text. The
 * schema then judges the value as it judges JSON input.
 */

type Kind = "string" | "number" | "boolean" | "null" | "array"

const kindsOf = (ast: SchemaAST.AST, out: Set<Kind>): Set<Kind> => {
  switch (ast._tag) {
    case "Union": for (const t of ast.types) kindsOf(t, out); break
    case "Refinement": kindsOf(ast.from, out); break
    case "Transformation": kindsOf(ast.from, out); break
    case "Suspend": kindsOf(ast.f(), out); break
    case "NumberKeyword": out.add("number"); break
    case "BooleanKeyword": out.add("boolean"); break
    case "TupleType": out.add("array"); break
    case "Literal":
      if (ast.literal === null) out.add("null")
      else if (typeof ast.literal === "number") out.add("number")
      else if (typeof ast.literal === "boolean") out.add("boolean")
      else out.add("string")
      break
    default: out.add("string")
  }
  return out
}

/** The value kinds each field of a struct schema accepts on its encoded (input) side. */
export const fieldKinds = (schema: Schema.Schema.AnyNoContext): ReadonlyMap<string, ReadonlySet<Kind>> => {
  const ast = Schema.encodedSchema(schema).ast
  const map = new Map<string, ReadonlySet<Kind>>()
  if (ast._tag === "TypeLiteral") {
    for (const p of ast.propertySignatures) map.set(String(p.name), kindsOf(p.type, new Set()))
  }
  return map
}

const NUMBER = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/

/**
 * One CSV cell as the value the schema expects: an empty cell is null where the field takes
 * null and absent otherwise; a list is JSON (`["a","b"]`) or `;`-separated.
 */
export const typedCell = (kinds: ReadonlySet<Kind> | undefined, text: string): unknown => {
  if (text === "") return kinds?.has("null") ? null : undefined
  if (kinds === undefined) return text
  if (kinds.has("number") && NUMBER.test(text)) return Number(text)
  if (kinds.has("boolean") && (text === "true" || text === "false")) return text === "true"
  if (kinds.has("array")) {
    if (!text.startsWith("[")) return text.split(";").map((s) => s.trim())
    try {
      return JSON.parse(text)
    } catch {
      return text
    }
  }
  return text
}

/** A CSV record as an object keyed by the header, typed by the schema's fields. */
export const csvObject = (
  header: ReadonlyArray<string>,
  fields: ReadonlyArray<string>,
  kinds: ReadonlyMap<string, ReadonlySet<Kind>>
): Record<string, unknown> | string => {
  if (fields.length !== header.length) return `expected ${header.length} fields as the header names, got ${fields.length}`
  const out: Record<string, unknown> = {}
  header.forEach((name, i) => {
    const value = typedCell(kinds.get(name), fields[i]!)
    if (value !== undefined) out[name] = value
  })
  return out
}
