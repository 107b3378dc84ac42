import * as Either from "effect/Either"
import { InsufficientEntitlement } from "../errors.js"
import { historyFloor, historyStartsAt } from "./history.js"
import type { DataType, Grant, Principal } from "./principal.js"
import type { Micros } from "../query/time.js"

/** The principal's grant for a data type, or a 403. */
export const requireGrant = (principal: Principal, dataType: DataType): Either.Either<Grant, InsufficientEntitlement> => {
  const grant = principal.grants[dataType]
  return grant === undefined
    ? Either.left(new InsufficientEntitlement({ detail: `this token is not granted ${dataType}` }))
    : Either.right(grant)
}

/** The principal's history floor for a data type (`null` = unrestricted), or a 403 without history access. */
export const requireHistory = (
  principal: Principal,
  dataType: DataType,
  now: Micros
): Either.Either<Micros | null, InsufficientEntitlement> =>
  Either.flatMap(requireGrant(principal, dataType), (grant) => {
    const floor = historyFloor(grant.history, now)
    return floor === undefined
      ? Either.left(
          new InsufficientEntitlement({
            detail: `this token reads current ${dataType} only; history needs historical access`,
            history_starts_at: null
          })
        )
      : Either.right(floor)
  })

/** `history_starts_at` of a principal for a data type, as `/metadata` reports it. */
export const reportedHistoryStart = (principal: Principal, dataType: DataType, now: Micros): string | null => {
  const grant = principal.grants[dataType]
  if (grant === undefined) return null
  const floor = historyFloor(grant.history, now)
  // A token without history reads from today only: report today so no client asks for earlier.
  return floor === undefined ? historyStartsAt(now) : historyStartsAt(floor)
}
