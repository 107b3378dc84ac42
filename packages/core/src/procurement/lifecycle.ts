import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { nowMicros, unavailable } from "../market/storage.js"
import { formatInstant, parseDateTime } from "../query/time.js"
import type { ProcurementStatus, ResourceId, ResourceStatus } from "../schema/procurement.js"
import type { StorageError } from "../storage/contract.js"
import { ProcurementStore, type ProcurementRecord, type ResourceRecord } from "../storage/procurement.js"
import { countNow, procurementStatus } from "../metrics.js"
import { newId } from "./access.js"
import { providerUnavailable } from "./offers.js"
import { SupplyProvider } from "./provider.js"

/**
 * The state machines, advanced lazily: a record moves on when someone reads or acts on it, by
 * asking the provider where its operation stands. Every move is a compare-and-set on the stored
 * status, so of two processes advancing one record exactly one wins; the loser reads the winner's.
 *
 * Procurement: `pending → provisioning → fulfilled | failed`, and `pending → failed`.
 * Resource: `running → deleting → deleted`.
 */

/** The moves each procurement status allows; any other move is a bug, never attempted. */
export const PROCUREMENT_TRANSITIONS: Readonly<Record<ProcurementStatus, ReadonlyArray<ProcurementStatus>>> = {
  pending: ["provisioning", "failed"],
  provisioning: ["fulfilled", "failed"],
  fulfilled: [],
  failed: []
}

/** The moves each resource status allows. */
export const RESOURCE_TRANSITIONS: Readonly<Record<ResourceStatus, ReadonlyArray<ResourceStatus>>> = {
  running: ["deleting"],
  deleting: ["deleted"],
  deleted: []
}

/** A procurement entered `status`, counted once: by the process whose write put it there. */
export const countStatus = (status: ProcurementStatus): Effect.Effect<void> => Effect.sync(() => countNow(procurementStatus, { status }))

/** Moves procurements and resources along as their provider operations complete. */
export class Lifecycle extends Effect.Service<Lifecycle>()("Procurement/Lifecycle", {
  effect: Effect.gen(function* () {
    const store = yield* ProcurementStore
    const provider = yield* SupplyProvider

    const reread = (r: ProcurementRecord) =>
      Effect.map(store.procurement(r.owner, r.procurement.procurement_id), Option.getOrElse(() => r))

    /** One compare-and-set; on a lost race, the record as the winner left it. */
    const moveProcurement = (
      r: ProcurementRecord,
      next: ProcurementRecord,
      resources: ReadonlyArray<ResourceRecord> = []
    ): Effect.Effect<ProcurementRecord, StorageError> =>
      PROCUREMENT_TRANSITIONS[r.procurement.status].includes(next.procurement.status)
        ? Effect.flatMap(store.transitionProcurement(r.procurement.status, next, resources), (won) =>
          won ? Effect.as(countStatus(next.procurement.status), next) : reread(r))
        : Effect.dieMessage(`procurement cannot move from ${r.procurement.status} to ${next.procurement.status}`)

    /** Takes one step if the provider has news; a provider that cannot answer leaves the record as it is. */
    const stepProcurement = (r: ProcurementRecord): Effect.Effect<ProcurementRecord, StorageError> =>
      Effect.gen(function* () {
        const p = r.procurement
        if (p.status === "pending") {
          const offer = yield* store.offer(r.owner, p.offer_id)
          if (Option.isNone(offer)) {
            const at = formatInstant(yield* nowMicros)
            return yield* moveProcurement(r, { ...r, procurement: { ...p, status: "failed", updated_at: at, failure_reason: "the offer is gone" } })
          }
          const operation = yield* Effect.option(provider.provision({
            procurement_id: p.procurement_id, offer: offer.value.offer, quote_ref: offer.value.quote_ref,
            requested_at: parseDateTime(p.created_at)!
          }))
          if (Option.isNone(operation)) return r
          const at = formatInstant(yield* nowMicros)
          return yield* moveProcurement(r, { ...r, operation: operation.value, procurement: { ...p, status: "provisioning", updated_at: at } })
        }
        if (p.status !== "provisioning" || r.operation === null) return r
        const status = yield* Effect.option(provider.status(r.operation))
        if (Option.isNone(status) || status.value._tag === "running") return r
        const done = status.value
        const at = formatInstant(done.at)
        if (done._tag === "failed") {
          return yield* moveProcurement(r, { ...r, procurement: { ...p, status: "failed", updated_at: at, failure_reason: done.reason } })
        }
        const offer = yield* store.offer(r.owner, p.offer_id)
        const storage = Option.match(offer, { onNone: () => null, onSome: (o) => o.offer.storage })
        const resources = done.instances.map((instance_ref): ResourceRecord => ({
          owner: r.owner,
          instance_ref,
          operation: null,
          resource: {
            resource_id: newId<ResourceId>("res"),
            procurement_id: p.procurement_id,
            status: "running",
            vendor: p.vendor,
            gpu_canonical_name: p.gpu_canonical_name,
            gpu_count: p.gpu_count / p.instance_count,
            region: p.region,
            contract_type: p.contract_type,
            price_usd_per_gpu_hour: p.price_usd_per_gpu_hour,
            storage: storage === null ? null : { type: storage.type, size_gb: storage.size_gb },
            created_at: at,
            updated_at: at,
            deleted_at: null
          }
        }))
        return yield* moveProcurement(
          r,
          { ...r, procurement: { ...p, status: "fulfilled", updated_at: at, resource_ids: resources.map((x) => x.resource.resource_id) } },
          resources
        )
      })

    /** Steps until the record stops moving (at most `pending → provisioning → done`). */
    const advanceProcurement = (r: ProcurementRecord): Effect.Effect<ProcurementRecord, StorageError> =>
      Effect.flatMap(stepProcurement(r), (next) =>
        next.procurement.status === r.procurement.status && next.operation === r.operation ? Effect.succeed(next) : advanceProcurement(next))

    const moveResource = (r: ResourceRecord, next: ResourceRecord): Effect.Effect<ResourceRecord, StorageError> =>
      RESOURCE_TRANSITIONS[r.resource.status].includes(next.resource.status)
        ? Effect.flatMap(store.transitionResource(r.resource.status, next), (won) =>
          won ? Effect.succeed(next) : Effect.map(store.resource(r.owner, r.resource.resource_id), Option.getOrElse(() => r)))
        : Effect.dieMessage(`resource cannot move from ${r.resource.status} to ${next.resource.status}`)

    /** A `deleting` resource becomes `deleted` once its termination completed. */
    const advanceResource = (r: ResourceRecord): Effect.Effect<ResourceRecord, StorageError> =>
      Effect.gen(function* () {
        if (r.resource.status !== "deleting" || r.operation === null) return r
        const status = yield* Effect.option(provider.status(r.operation))
        if (Option.isNone(status) || status.value._tag !== "succeeded") return r
        const at = formatInstant(status.value.at)
        return yield* moveResource(r, { ...r, resource: { ...r.resource, status: "deleted", updated_at: at, deleted_at: at } })
      })

    return {
      advanceProcurement: (r: ProcurementRecord) => Effect.mapError(advanceProcurement(r), unavailable),
      advanceResource: (r: ResourceRecord) => Effect.mapError(advanceResource(r), unavailable),
      /**
       * Starts deleting a running resource (idempotent: a resource already on its way is only
       * advanced). A provider that cannot take the order fails with `ProviderUnavailable` and
       * leaves the resource running, so the caller knows to retry rather than wait.
       */
      deleteResource: (r: ResourceRecord) => Effect.gen(function* () {
        if (r.resource.status !== "running") return yield* Effect.mapError(advanceResource(r), unavailable)
        const now = yield* nowMicros
        const operation = yield* Effect.mapError(provider.terminate({ instance_ref: r.instance_ref, requested_at: now }), providerUnavailable)
        const at = formatInstant(now)
        return yield* Effect.mapError(
          Effect.flatMap(
            moveResource(r, { ...r, operation, resource: { ...r.resource, status: "deleting", updated_at: at } }),
            advanceResource
          ),
          unavailable
        )
      }),
      /** Advances every record of the owner that is between states, before a list is read. */
      settle: Effect.fn("Lifecycle.settle")(function* (owner: string) {
        const open = yield* Effect.mapError(store.unsettled(owner), unavailable)
        yield* Effect.forEach(open.procurements, (p) => Effect.mapError(advanceProcurement(p), unavailable), { discard: true })
        yield* Effect.forEach(open.resources, (r) => Effect.mapError(advanceResource(r), unavailable), { discard: true })
      })
    } as const
  })
}) {}
