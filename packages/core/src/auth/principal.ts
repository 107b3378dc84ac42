import * as Schema from "effect/Schema"
import { randomBytes } from "node:crypto"
import { parseDate } from "../query/time.js"

/** The data types a token can be granted. */
export const DataType = Schema.Literal(
  "gpu_rental_prices",
  "gpu_rental_indexes",
  "gpu_rental_transactions",
  "gpu_hardware_prices",
  "llm_token_prices"
)
export type DataType = typeof DataType.Type

/** Stable id of a principal (never the secret). */
export const PrincipalId = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9._-]{1,64}$/), Schema.brand("PrincipalId"))
export type PrincipalId = typeof PrincipalId.Type

/**
 * How far back a grant may read. `none`: current values only. `unrestricted`: all history.
 * `since`: from a fixed date. `rolling`: from `days` before today (UTC), moving daily.
 */
export const HistoryAccess = Schema.Union(
  Schema.TaggedStruct("none", {}),
  Schema.TaggedStruct("unrestricted", {}),
  Schema.TaggedStruct("since", {
    date: Schema.String.pipe(
      Schema.filter((d) => parseDate(d) !== undefined, { message: () => "expected a real calendar date YYYY-MM-DD" })
    )
  }),
  Schema.TaggedStruct("rolling", { days: Schema.Int.pipe(Schema.nonNegative()) })
)
export type HistoryAccess = typeof HistoryAccess.Type

/** Access to one data type. */
export const Grant = Schema.Struct({ history: HistoryAccess })
export type Grant = typeof Grant.Type

/** Index ids held, or every index. */
const Indices = Schema.Union(Schema.Literal("all"), Schema.Array(Schema.String))

/** Data requests per minute a token gets when `tokens.create` is not told otherwise. */
export const DEFAULT_RATE_LIMIT_PER_MINUTE = 600

/** Who is calling and what they may read. */
export const Principal = Schema.Struct({
  id: PrincipalId,
  name: Schema.String,
  /** Data types this principal may read; a type not listed is a 403. */
  grants: Schema.partial(Schema.Record({ key: DataType, value: Grant })),
  /** Index ids held, or every index. */
  indices: Indices,
  /** The legacy `/v1/custom-index/current` permission. */
  legacy_custom_index: Schema.Boolean,
  /** Access to the procurement service. */
  procurement: Schema.Boolean,
  /** Data requests per minute. */
  rate_limit_per_minute: Schema.Int.pipe(Schema.positive())
})
export type Principal = typeof Principal.Type

/** A new principal id when none is given: `tok-` and 12 random hex digits, as `gpu-market tokens create` makes them. */
const newPrincipalId = (): PrincipalId => PrincipalId.make(`tok-${randomBytes(6).toString("hex")}`)

/**
 * A principal as an app writes it (`tokens.create`, `Auth.issue`, `gpu-market tokens create`):
 * `name` and `grants`, the rest optional with least-privilege defaults: a random `tok-…` id, no
 * indices, no legacy endpoint, no procurement, {@link DEFAULT_RATE_LIMIT_PER_MINUTE} requests a
 * minute. Decoding it (when the token is issued) fills the defaults and checks every field.
 */
export const NewPrincipal = Schema.Struct({
  ...Principal.fields,
  id: Schema.optionalWith(PrincipalId, { default: newPrincipalId }),
  indices: Schema.optionalWith(Indices, { default: () => [] }),
  legacy_custom_index: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  procurement: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  rate_limit_per_minute: Schema.optionalWith(Principal.fields.rate_limit_per_minute, { default: () => DEFAULT_RATE_LIMIT_PER_MINUTE })
})

/**
 * A principal as an app writes it (`tokens.create`, `Auth.issue`): plain strings, checked when
 * it is issued (a bad grant or id is a 422 naming the field); what it leaves out takes
 * {@link NewPrincipal}'s defaults.
 */
export type PrincipalInput = typeof NewPrincipal.Encoded
