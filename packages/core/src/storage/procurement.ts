import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { Offer, Procurement, ProcurementStatus, Resource, ResourceStatus } from "../schema/procurement.js"
import type { StorageError } from "./errors.js"
import type { PagePlan } from "./plan.js"

/**
 * What the procurement service keeps: offers, procurements with their idempotency keys, and
 * resources, each owned by one principal. Every method is one atomic step, so two processes on
 * one store can never both win a transition; every read is scoped to its owner, so another
 * caller's record is simply absent.
 */

/** An offer as stored: the served body, its owner and the provider's quote reference. */
export interface OfferRecord {
  readonly owner: string
  readonly offer: Offer
  /** Opaque to the core: what the provider needs to provision this quote. */
  readonly quote_ref: string
}

/** A procurement as stored. */
export interface ProcurementRecord {
  readonly owner: string
  /** The caller's `Idempotency-Key`; unique per owner. */
  readonly idempotency_key: string
  readonly procurement: Procurement
  /** The provider's provisioning operation, once it accepted the order. */
  readonly operation: string | null
}

/** A resource as stored. */
export interface ResourceRecord {
  readonly owner: string
  readonly resource: Resource
  /** The provider's reference of the instance. */
  readonly instance_ref: string
  /** The provider's termination operation, once deletion began. */
  readonly operation: string | null
}

/** Outcome of `createProcurement`: the record that holds for the key, and whether this call made it. */
export interface CreatedProcurement {
  readonly created: boolean
  readonly record: ProcurementRecord
}

/** Records that are between states: what a reader advances before it answers. */
export interface Unsettled {
  /** `pending` and `provisioning` procurements, ordered by `procurement_id`. */
  readonly procurements: ReadonlyArray<ProcurementRecord>
  /** `deleting` resources, ordered by `resource_id`. */
  readonly resources: ReadonlyArray<ResourceRecord>
}

/** Storage of procurement state. */
export class ProcurementStore extends Context.Tag("Procurement/Storage/ProcurementStore")<
  ProcurementStore,
  {
    /** Stores new offers (ids are new) in one write. */
    readonly putOffers: (records: ReadonlyArray<OfferRecord>) => Effect.Effect<void, StorageError>
    /** The owner's offer of that id; another owner's offer is none. */
    readonly offer: (owner: string, offerId: string) => Effect.Effect<Option.Option<OfferRecord>, StorageError>
    /**
     * Inserts the procurement unless the owner already used its idempotency key: one atomic
     * insert-if-absent, so concurrent duplicates get one record and all but one see `created: false`.
     */
    readonly createProcurement: (record: ProcurementRecord) => Effect.Effect<CreatedProcurement, StorageError>
    /** The owner's procurement made with that idempotency key, if any. */
    readonly procurementByKey: (owner: string, idempotencyKey: string) => Effect.Effect<Option.Option<ProcurementRecord>, StorageError>
    /** The owner's procurement of that id; another owner's is none. */
    readonly procurement: (owner: string, procurementId: string) => Effect.Effect<Option.Option<ProcurementRecord>, StorageError>
    /**
     * Compare-and-set: replaces the procurement only if its stored status is still `from`, and
     * inserts `resources` (new ids) in the same write. False, changing nothing, when it is not.
     */
    readonly transitionProcurement: (
      from: ProcurementStatus,
      next: ProcurementRecord,
      resources: ReadonlyArray<ResourceRecord>
    ) => Effect.Effect<boolean, StorageError>
    /** The owner's resource of that id; another owner's is none. */
    readonly resource: (owner: string, resourceId: string) => Effect.Effect<Option.Option<ResourceRecord>, StorageError>
    /** Compare-and-set on a resource's status, as `transitionProcurement`. */
    readonly transitionResource: (from: ResourceStatus, next: ResourceRecord) => Effect.Effect<boolean, StorageError>
    /**
     * A page of the owner's resources. Predicates name `status`, `vendor` and
     * `gpu_canonical_name` (`in`); the sort is `created_at` with the tie-breaker `resource_id`.
     */
    readonly resources: (owner: string, plan: PagePlan) => Effect.Effect<ReadonlyArray<Resource>, StorageError>
    /** The owner's procurements and resources that are between states. */
    readonly unsettled: (owner: string) => Effect.Effect<Unsettled, StorageError>
  }
>() {}
