import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type { Principal } from "../auth/principal.js"
import { IdempotencyConflict, OfferExpired, type ParameterIssue, validationFailed } from "../errors.js"
import { nowMicros, unavailable } from "../market/storage.js"
import { formatInstant } from "../query/time.js"
import { type Procurement, ProcurementId, ProcurementRequest, OfferId } from "../schema/procurement.js"
import { ProcurementStore, type ProcurementRecord } from "../storage/procurement.js"
import { newId, ownRecord, requireProcurement } from "./access.js"
import { countStatus, Lifecycle } from "./lifecycle.js"
import { tooDeep, valueTooDeep } from "./nesting.js"
import { isExpired } from "./offers.js"

/** An `Idempotency-Key`: 1 to 255 visible ASCII characters. */
export const IdempotencyKey = Schema.String.pipe(Schema.pattern(/^[\x21-\x7e]{1,255}$/))

const decodeRequest = Schema.decodeUnknownEither(ProcurementRequest, { errors: "all", onExcessProperty: "error" })

/** A procurement call's outcome: the procurement, and whether this call made it (else a replay). */
export interface ProcurementResult {
  readonly procurement: Procurement
  readonly created: boolean
}

/** Provisioning from offers, exactly once per idempotency key. */
export class Procurements extends Effect.Service<Procurements>()("Procurement/Procurements", {
  dependencies: [Lifecycle.Default],
  effect: Effect.gen(function* () {
    const store = yield* ProcurementStore
    const lifecycle = yield* Lifecycle

    /** A replay of a key: the same procurement if the request is the same, else a conflict. */
    const replay = (record: ProcurementRecord, offerId: string) =>
      record.procurement.offer_id === offerId
        ? Effect.map(lifecycle.advanceProcurement(record), (r): ProcurementResult => ({ procurement: r.procurement, created: false }))
        : Effect.fail(new IdempotencyConflict({
            detail: "this Idempotency-Key was already used for another offer; use a new key for a new procurement"
          }))

    return {
      /**
       * Provisions an offer. The same `idempotencyKey` (per caller) always answers with the one
       * procurement it made, even after the offer expired; concurrent duplicates make one.
       */
      create: Effect.fn("Procurements.create")(function* (input: {
        readonly principal: Principal
        readonly body: unknown
        readonly idempotencyKey: string | undefined
      }) {
        const { principal } = input
        yield* requireProcurement(principal)
        const issues: Array<ParameterIssue> = []
        if (input.idempotencyKey === undefined) issues.push({ parameter: "Idempotency-Key", message: "required: a unique key per procurement" })
        else if (!Schema.is(IdempotencyKey)(input.idempotencyKey)) {
          issues.push({ parameter: "Idempotency-Key", message: "expected 1 to 255 visible ASCII characters" })
        }
        // Decoding and its error messages recurse per level: a body nested too deep is refused first.
        if (valueTooDeep(input.body)) return yield* Effect.fail(validationFailed([...issues, tooDeep]))
        const decoded = decodeRequest(input.body)
        if (decoded._tag === "Left") {
          for (const i of ParseResult.ArrayFormatter.formatErrorSync(decoded.left)) {
            issues.push({ parameter: i.path.join(".") || "body", message: i._tag === "Unexpected" ? "unknown field" : i.message })
          }
        }
        if (issues.length > 0 || decoded._tag === "Left") return yield* Effect.fail(validationFailed(issues))
        const key = input.idempotencyKey!
        const offerId = decoded.right.offer_id
        const earlier = yield* Effect.mapError(store.procurementByKey(principal.id, key), unavailable)
        if (Option.isSome(earlier)) return yield* replay(earlier.value, offerId)

        const { offer } = yield* ownRecord(OfferId, "offer", offerId, (id) => store.offer(principal.id, id))
        const now = yield* nowMicros
        if (isExpired(offer, now)) {
          return yield* Effect.fail(new OfferExpired({ detail: `the offer expired at ${offer.expires_at}; ask for new offers`, expires_at: offer.expires_at }))
        }
        const at = formatInstant(now)
        const record: ProcurementRecord = {
          owner: principal.id,
          idempotency_key: key,
          operation: null,
          procurement: {
            procurement_id: newId<ProcurementId>("prc"),
            offer_id: offer.offer_id,
            status: "pending",
            vendor: offer.vendor,
            gpu_canonical_name: offer.gpu_canonical_name,
            gpu_count: offer.gpu_count,
            instance_count: offer.instance_count,
            region: offer.region,
            contract_type: offer.contract_type,
            term_hours: offer.term_hours,
            price_usd_per_gpu_hour: offer.price_usd_per_gpu_hour,
            total_usd: offer.total_usd,
            created_at: at,
            updated_at: at,
            failure_reason: null,
            resource_ids: []
          }
        }
        const outcome = yield* Effect.mapError(store.createProcurement(record), unavailable)
        if (!outcome.created) return yield* replay(outcome.record, offerId)
        yield* countStatus(outcome.record.procurement.status)
        const advanced = yield* lifecycle.advanceProcurement(outcome.record)
        return { procurement: advanced.procurement, created: true } satisfies ProcurementResult
      }),

      /** One of the caller's procurements, advanced to where its provisioning stands now. */
      get: Effect.fn("Procurements.get")(function* (input: { readonly principal: Principal; readonly procurementId: string }) {
        yield* requireProcurement(input.principal)
        const found = yield* ownRecord(ProcurementId, "procurement", input.procurementId, (id) => store.procurement(input.principal.id, id))
        return (yield* lifecycle.advanceProcurement(found)).procurement
      })
    } as const
  })
}) {}
