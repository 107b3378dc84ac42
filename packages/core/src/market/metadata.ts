import * as Effect from "effect/Effect"
import { reportedHistoryStart, requireGrant } from "../auth/entitlements.js"
import type { DataType } from "../auth/principal.js"
import type { MarketRequest } from "../query/collection.js"
import { refuseParameters } from "../query/params.js"
import { nowMicros } from "./storage.js"

/**
 * What every `/metadata` checks before it reads: the caller holds the type (else 403) and sent
 * no parameters (else 422). Returns the caller's `history_starts_at` for the body.
 */
export const metadataAccess = (request: Pick<MarketRequest, "principal" | "query">, dataType: DataType) =>
  Effect.gen(function* () {
    yield* requireGrant(request.principal, dataType)
    yield* refuseParameters(request.query)
    return reportedHistoryStart(request.principal, dataType, yield* nowMicros)
  })
