import * as Effect from "effect/Effect"
import { reportedHistoryStart, requireGrant } from "../auth/entitlements.js"
import type { DataType } from "../auth/principal.js"
import type { MarketRequest } from "../query/collection.js"
import { refuseParameters } from "../query/params.js"
import type { StorageError } from "../storage/errors.js"
import { nowMicros, unavailable } from "./storage.js"

/** What a `/metadata` request carries: no origin, as its body has no links. */
export type MetadataRequest = Pick<MarketRequest, "principal" | "query">

/**
 * A type's `/metadata` body. The caller must hold the type (else 403) and send no parameters
 * (else 422) before storage is read; `data` is made from what was read, and a storage failure is
 * `StorageUnavailable`. `history_starts_at` is the caller's history floor.
 */
export const metadataBody = <const T extends DataType, S, D>(
  request: MetadataRequest,
  dataType: T,
  read: Effect.Effect<S, StorageError>,
  data: (stored: S) => D
) =>
  Effect.gen(function* () {
    yield* requireGrant(request.principal, dataType)
    yield* refuseParameters(request.query)
    const history_starts_at = reportedHistoryStart(request.principal, dataType, yield* nowMicros)
    return { data_type: dataType, history_starts_at, data: data(yield* Effect.mapError(read, unavailable)) }
  })
