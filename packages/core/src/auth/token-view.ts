import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { ValidationFailed } from "../errors.js"
import { refuseParameters, type QueryInput } from "../query/params.js"
import { MICROS_PER_MS, type Micros } from "../query/time.js"
import { historyFloor, historyStartsAt } from "./history.js"
import { DataType, type Principal } from "./principal.js"

/**
 * The caller's own token as the server sees it (`GET /v2/token`): what it may read, so a client
 * (the dashboard) asks only for what it will be given. The principal's id and name, never its
 * secret nor any part of it.
 */

/** The path of the caller's own token in the HTTP API. */
export const TOKEN_PATH = "/v2/token"

/** What one granted data type lets the token read. */
export const TokenGrantView = Schema.Struct({
  /** Whether it reads history (`/as-of`, `/history`) of the type, not only current values. */
  history: Schema.Boolean,
  /** The earliest date it may read (its history floor, today's for a rolling grant); `null` when unrestricted or current only. */
  history_starts_at: Schema.NullOr(Schema.String)
}).annotations({ identifier: "TokenGrant" })
export type TokenGrantView = typeof TokenGrantView.Type

/** A token as `GET /v2/token` answers it. */
export const TokenView = Schema.Struct({
  /** The principal's stable id, as `gpu-market tokens list` shows it. */
  id: Schema.String,
  name: Schema.String,
  /** The data types it may read; a type absent here is a 403 on every endpoint of that type. */
  grants: Schema.partial(Schema.Record({ key: DataType, value: TokenGrantView })),
  /** The index ids it holds, or `"all"`. */
  indices: Schema.Union(Schema.Literal("all"), Schema.Array(Schema.String)),
  /** The legacy `/v1/custom-index/current` permission. */
  legacy_custom_index: Schema.Boolean,
  /** Access to the procurement service (where the server mounts one). */
  procurement: Schema.Boolean,
  /** Data requests per minute. */
  rate_limit_per_minute: Schema.Int
}).annotations({ identifier: "Token" })
export type TokenView = typeof TokenView.Type

/** The body of `GET /v2/token`. */
export const TokenBody = Schema.Struct({ data: TokenView }).annotations({ identifier: "TokenBody" })
export type TokenBody = typeof TokenBody.Type

/** What `principal` may read at `now`. */
export const tokenView = (principal: Principal, now: Micros): TokenView => {
  const grants: Partial<Record<DataType, TokenGrantView>> = {}
  for (const type of DataType.literals) {
    const grant = principal.grants[type]
    if (grant === undefined) continue
    const floor = historyFloor(grant.history, now)
    grants[type] = { history: floor !== undefined, history_starts_at: historyStartsAt(floor) }
  }
  return {
    id: principal.id, name: principal.name, grants, indices: principal.indices,
    legacy_custom_index: principal.legacy_custom_index, procurement: principal.procurement,
    rate_limit_per_minute: principal.rate_limit_per_minute
  }
}

/** `GET /v2/token`: the caller's token at the clock's now; it takes no parameter (any is a 422). */
export const describeToken = (principal: Principal, query: QueryInput): Effect.Effect<TokenBody, ValidationFailed> =>
  Effect.gen(function* () {
    yield* refuseParameters(query)
    return { data: tokenView(principal, (yield* Clock.currentTimeMillis) * MICROS_PER_MS) }
  })
