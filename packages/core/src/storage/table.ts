import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"

/**
 * A data type as storage sees it: one definition, derived from the row schema where it can be,
 * that every backend is driven by (the memory reference, SQLite's columns and compiled pages,
 * Redis' sorted-set indexes). Adding a data type starts here.
 */

/**
 * What a field holds, which decides how every backend filters and orders it: a text equals a
 * text, numbers take bounds and order, a boolean is filtered by `true`/`false`, a list is stored
 * whole (JSON on SQLite) and neither filtered nor ordered.
 */
export type FieldKind = "text" | "numeric" | "boolean" | "list"

/** One field of a row, in the row's order. */
export interface FieldDef {
  readonly name: string
  readonly kind: FieldKind
  /** Whether the field may be null: a page cannot be ordered by it (JS `<` and SQL disagree on null). */
  readonly nullable: boolean
  /** Whether a numeric field holds integers only (`Schema.Int`): SQLite stores it as INTEGER. */
  readonly integer: boolean
}

/**
 * Which rows a scope (`latest`, `asOf`, `window`) picks. `versions`: rows in force from
 * `valid_from` until `valid_to` (null: current), a version chain per value of `of`; with
 * `unanchoredCurrent`, current rows are also indexed without an anchor, for a market small
 * enough that a `/latest` page with no anchor filter is common.
 * `observations`: dated observations of the thing `of` names; the latest is each one's newest.
 * `dated`: rows of a date, read by windows only. `intervals`: values of the series `of` names,
 * one per interval start.
 */
export type TableScope =
  | { readonly kind: "versions"; readonly of: string; readonly unanchoredCurrent: boolean }
  | { readonly kind: "observations"; readonly of: string; readonly date: string }
  | { readonly kind: "dated"; readonly date: string }
  | { readonly kind: "intervals"; readonly of: string; readonly at: string }

/**
 * What a data type's metadata summary counts: the distinct values of `values` over all rows
 * (filter values), and per group (one per distinct `groupBy`, a GPU say) the distinct values of
 * `groupValues`, the first and last `span` date with the row count, the count of distinct
 * `distinct` values, and whether a current row is `listed`. The reference store derives its
 * summaries from this; SQLite and Redis keep theirs up to date as they write, and the
 * conformance suite holds them to the reference's.
 */
export interface SummaryDef {
  readonly values: ReadonlyArray<string>
  readonly groupBy: ReadonlyArray<string>
  readonly groupValues: ReadonlyArray<string>
  readonly span: string | null
  readonly distinct: string | null
  readonly listed: boolean
}

/** One data type's storage definition. */
export interface TableDef {
  /** The table's name (the SQLite table). */
  readonly name: string
  /** The row's fields with their kinds, in the row's order (the order rows serialise in). */
  readonly fields: ReadonlyArray<FieldDef>
  /** The unique field that keys a row and breaks ties in every order. */
  readonly tie: string
  /** The fields a page may be ordered by. */
  readonly sortable: ReadonlyArray<string>
  /** Fields with many rows per value, indexed per value, so a filter on one narrows a walk. */
  readonly anchors: ReadonlyArray<string>
  /** Which rows `latest`, `asOf` and `window` pick. */
  readonly scope: TableScope
  /** What its metadata summary counts; none for a type whose metadata is not a summary of rows. */
  readonly summary: SummaryDef | null
}

type Kind = Omit<FieldDef, "name">

/** The kind of a schema's type side, whether it admits null, and whether a number is an integer. */
const kindOf = (ast: AST.AST): Kind => {
  switch (ast._tag) {
    case "Refinement": {
      const inner = kindOf(ast.from)
      const isInt = Option.exists(AST.getSchemaIdAnnotation(ast), (id) => id === Schema.IntSchemaId)
      return inner.kind === "numeric" && isInt
        ? { ...inner, integer: true }
        : inner
    }
    case "Transformation": return kindOf(ast.to)
    case "Suspend": return kindOf(ast.f())
    case "NumberKeyword": return { kind: "numeric", nullable: false, integer: false }
    case "BooleanKeyword": return { kind: "boolean", nullable: false, integer: false }
    case "TupleType": return { kind: "list", nullable: false, integer: false }
    case "StringKeyword": case "TemplateLiteral": case "Enums": return { kind: "text", nullable: false, integer: false }
    case "Literal": {
      const literal = ast.literal
      if (literal === null) return { kind: "text", nullable: true, integer: false }
      const kind = typeof literal === "number" ? "numeric" : typeof literal === "boolean" ? "boolean" : "text"
      return { kind, nullable: false, integer: typeof literal === "number" && Number.isInteger(literal) }
    }
    case "Union": {
      const members = ast.types.filter((t) => !(t._tag === "Literal" && t.literal === null))
      const kinds = members.map(kindOf)
      const kind = kinds[0]?.kind
      if (kind === undefined || kinds.some((k) => k.kind !== kind)) throw new TypeError("a row field must hold one kind of value")
      return { kind, nullable: members.length < ast.types.length || kinds.some((k) => k.nullable), integer: kinds.every((k) => k.integer) }
    }
    default: throw new TypeError(`a row field of schema ${ast._tag} has no storage kind`)
  }
}

/** A row schema: a `Schema.Struct` or `Schema.Class`, whose fields are plain schemas. */
export interface RowSchema {
  readonly fields: Schema.Struct.Fields
}

/** The fields of a row schema, with their kinds. */
export const fieldsOf = (row: RowSchema): ReadonlyArray<FieldDef> =>
  Object.entries(row.fields).map(([name, field]) => {
    if (!Schema.isSchema(field)) throw new TypeError(`row field ${name} must be a plain schema, not a property signature`)
    return { name, ...kindOf(Schema.typeSchema(field).ast) }
  })

/** Defines a data type's table from its row schema. */
export const defineTable = <
  const Tie extends string, const Sort extends string, const Scope extends TableScope, const Summary extends SummaryDef | null
>(
  row: RowSchema,
  definition: Omit<TableDef, "fields" | "tie" | "sortable" | "scope" | "summary"> & {
    readonly tie: Tie; readonly sortable: ReadonlyArray<Sort>; readonly scope: Scope; readonly summary: Summary
  }
): TableDef & { readonly tie: Tie; readonly sortable: ReadonlyArray<Sort>; readonly scope: Scope; readonly summary: Summary } => {
  const fields = fieldsOf(row)
  const names = new Set(fields.map((f) => f.name))
  const summary = definition.summary
  const summarised = summary === null
    ? []
    : [...summary.values, ...summary.groupBy, ...summary.groupValues, ...[summary.span, summary.distinct].filter((f): f is string => f !== null)]
  for (const name of [definition.tie, ...definition.sortable, ...definition.anchors, ...summarised]) {
    if (!names.has(name)) throw new TypeError(`${definition.name}: ${name} is not a field of the row`)
  }
  return { ...definition, fields }
}

/** The names of a table's fields of `kind`. */
export const fieldsOfKind = (table: TableDef, kind: FieldKind): ReadonlySet<string> =>
  new Set(table.fields.filter((f) => f.kind === kind).map((f) => f.name))

/** The names of a table's nullable fields. */
export const nullableFields = (table: TableDef): ReadonlySet<string> =>
  new Set(table.fields.filter((f) => f.nullable).map((f) => f.name))
