import * as Schema from "effect/Schema"

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
