import * as Schema from "effect/Schema"
import type { FilterDef } from "./collection.js"
import { Bound, CommaList, Token, withMessage } from "./params.js"

/**
 * Building blocks of a data type's filter definitions, so every type spells its list, key and
 * bound parameters the same way.
 */

/** A lower-case slug: a GPU, vendor, model or provider name as the catalogs write it. */
export const Slug = Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,99}$/))

/** A 32-character lower-case hex key (a product, price or listing key); `message` says which. */
export const HexKey = (message = "expected a 32-character lower-case hex key") =>
  Schema.String.pipe(Schema.pattern(/^[0-9a-f]{32}$/), Schema.annotations(withMessage(message)))

/** `param`: the row field of the same name in any of a comma-separated list of `what`. */
export const list = (param: string, what: string, item: Schema.Schema<string, string> = Token) =>
  ({ param, field: param, kind: "list", schema: CommaList(item, what) }) as const satisfies FilterDef

/** `param`: the row field of the same name equals the one value given. */
export const single = (param: string, schema: Schema.Schema<string, string>) =>
  ({ param, field: param, kind: "single", schema }) as const satisfies FilterDef

/** `min_<field>` and `max_<field>`: inclusive bounds on a number field. */
export const bounds = (field: string) => [
  { param: `min_${field}`, field, kind: "min", schema: Bound },
  { param: `max_${field}`, field, kind: "max", schema: Bound }
] as const satisfies ReadonlyArray<FilterDef>
