import * as Record from "effect/Record"
import * as Schema from "effect/Schema"
import type { ParamDef } from "./collection.js"
import { Bound, CommaList, Token, withMessage } from "./params.js"

/**
 * Building blocks of a data type's parameter declarations, so every type spells its list, key
 * and bound parameters the same way.
 */

/** A lower-case slug: a GPU, vendor, model or provider name as the catalogs write it. */
export const Slug = Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,99}$/))

/** A 32-character lower-case hex key (a product, price or listing key); `message` says which. */
export const HexKey = (message = "expected a 32-character lower-case hex key") =>
  Schema.String.pipe(Schema.pattern(/^[0-9a-f]{32}$/), Schema.annotations(withMessage(message)))

/** The row field of the parameter's name in any of a comma-separated list of `what`. */
export const list = (what: string, item: Schema.Schema<string, string> = Token): ParamDef<ReadonlyArray<string>> =>
  ({ schema: CommaList(item, what), required: false, filter: { kind: "list" } })

/** The row field of the parameter's name equals the one value given. */
export const single = (schema: Schema.Schema<string, string>): ParamDef<string> =>
  ({ schema, required: false, filter: { kind: "single" } })

/** An optional parameter the type resolves itself (a search, a flag): no filter of its own. */
export const resolved = <A>(schema: Schema.Schema<A, string>): ParamDef<A> => ({ schema, required: false })

/** A parameter every request must name, resolved by the type (an index's `id`). */
export const required = <A>(schema: Schema.Schema<A, string>): ParamDef<A> & { readonly required: true } =>
  ({ schema, required: true })

/** `min_<field>` and `max_<field>`: inclusive bounds on a number field. */
export const bounds = <const F extends string>(field: F) => {
  const bound = (kind: "min" | "max"): ParamDef<number> => ({ schema: Bound, required: false, filter: { kind, field } })
  return { ...Record.singleton(`min_${field}` as const, bound("min")), ...Record.singleton(`max_${field}` as const, bound("max")) }
}
