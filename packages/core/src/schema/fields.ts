import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"

/**
 * Fields of ingest records. A stored row publishes every field, `null` where the source did not
 * say; a record fed to ingest may leave such a field out, and it decodes to `null` then.
 */

/** A field that may be omitted or null; omitted, it decodes to `null`. */
export const optionalNull = <S extends Schema.Schema.Any>(schema: S) =>
  Schema.optionalWith(Schema.NullOr(schema), { default: () => null })

/** `fields` with each nullable one (a `Schema.NullOr`) also omittable, decoding to `null` when omitted. */
export type OmittableNulls<F extends Schema.Struct.Fields> = {
  readonly [K in keyof F]: F[K] extends Schema.NullOr<Schema.Schema.All> ? Schema.optionalWith<F[K], { default: () => null }> : F[K]
}

const isNullOr = (field: Schema.Struct.Field): boolean =>
  Schema.isSchema(field) && "members" in field && Array.isArray(field.members) && field.members.includes(Schema.Null)

/**
 * The fields of an ingest record made from a row's published fields, in their order: a field
 * the row may publish as `null` may be left out of the record. The row's schema stays the one
 * place a field is declared.
 */
export const omittableNulls = <const F extends Schema.Struct.Fields>(fields: F): OmittableNulls<F> =>
  Object.fromEntries(
    Object.entries(fields).map(([name, field]) => [name, isNullOr(field) ? Schema.optionalWith(field as Schema.Schema.Any, { default: () => null }) : field])
  ) as OmittableNulls<F>

/**
 * `fields` with each one's meaning as its `description` annotation, so the row's schema is the
 * one place a field's meaning is written: OpenAPI's component schemas and the docs page read it
 * from there. Every field must be given one.
 */
export const withMeanings = <const F extends Readonly<Record<string, Schema.Schema.All>>>(
  fields: F,
  meanings: { readonly [K in keyof F]: string }
): F =>
  Object.fromEntries(Object.entries(fields).map(([name, field]) => [name, field.annotations(meaning(field, meanings[name]!))])) as F

/**
 * The annotations that give `field` the description `text`. JSON Schema generation reads a
 * refinement's own annotations only through its `jsonSchema` one (merged over what it refines),
 * so a refinement carries the description there too, beside whatever keywords it already adds.
 */
const meaning = (field: Schema.Schema.All, text: string): { readonly description: string; readonly jsonSchema?: object } =>
  SchemaAST.isRefinement(field.ast)
    ? { description: text, jsonSchema: { ...Option.getOrUndefined(SchemaAST.getJSONSchemaAnnotation(field.ast)), description: text } }
    : { description: text }
