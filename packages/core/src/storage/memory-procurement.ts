import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Resource } from "../schema/procurement.js"
import { cmp, matchesPredicates, orderAndSeek } from "./rules.js"
import type { PagePlan } from "./plan.js"
import type { OfferRecord, ProcurementRecord, ProcurementStore, ResourceRecord } from "./procurement.js"

/** The reference evaluation of a resource page plan over one owner's resources. */
export const evaluateResourcePlan = (rows: Iterable<Resource>, plan: PagePlan): Array<Resource> =>
  orderAndSeek([...rows].filter((r) => matchesPredicates(r, plan.predicates)), plan, "resource_id")

const owned = <R extends { readonly owner: string }>(record: R | undefined, owner: string): Option.Option<R> =>
  record !== undefined && record.owner === owner ? Option.some(record) : Option.none()

/** The in-memory procurement store over fresh state. Each method runs without yielding, so it is atomic. */
export const makeMemoryProcurementStore = (): ProcurementStore["Type"] => {
  const offers = new Map<string, OfferRecord>()
  const procurements = new Map<string, ProcurementRecord>()
  /** `owner \u0000 key` → procurement id. */
  const keys = new Map<string, string>()
  const resources = new Map<string, ResourceRecord>()

  return {
    putOffers: (records) => Effect.sync(() => {
      for (const r of records) offers.set(r.offer.offer_id, r)
    }),
    offer: (owner, id) => Effect.sync(() => owned(offers.get(id), owner)),
    createProcurement: (record) => Effect.sync(() => {
      const key = `${record.owner}\u0000${record.idempotency_key}`
      const existing = keys.get(key)
      if (existing !== undefined) return { created: false, record: procurements.get(existing)! }
      keys.set(key, record.procurement.procurement_id)
      procurements.set(record.procurement.procurement_id, record)
      return { created: true, record }
    }),
    procurementByKey: (owner, key) => Effect.sync(() =>
      Option.map(Option.fromNullable(keys.get(`${owner}\u0000${key}`)), (id) => procurements.get(id)!)),
    procurement: (owner, id) => Effect.sync(() => owned(procurements.get(id), owner)),
    transitionProcurement: (from, next, created) => Effect.sync(() => {
      const current = procurements.get(next.procurement.procurement_id)
      if (current === undefined || current.procurement.status !== from) return false
      procurements.set(next.procurement.procurement_id, next)
      for (const r of created) resources.set(r.resource.resource_id, r)
      return true
    }),
    resource: (owner, id) => Effect.sync(() => owned(resources.get(id), owner)),
    transitionResource: (from, next) => Effect.sync(() => {
      const current = resources.get(next.resource.resource_id)
      if (current === undefined || current.resource.status !== from) return false
      resources.set(next.resource.resource_id, next)
      return true
    }),
    resources: (owner, plan) => Effect.sync(() =>
      evaluateResourcePlan([...resources.values()].filter((r) => r.owner === owner).map((r) => r.resource), plan)),
    unsettled: (owner) => Effect.sync(() => ({
      procurements: [...procurements.values()]
        .filter((p) => p.owner === owner && (p.procurement.status === "pending" || p.procurement.status === "provisioning"))
        .sort((a, b) => cmp(a.procurement.procurement_id, b.procurement.procurement_id)),
      resources: [...resources.values()]
        .filter((r) => r.owner === owner && r.resource.status === "deleting")
        .sort((a, b) => cmp(a.resource.resource_id, b.resource.resource_id))
    }))
  }
}
