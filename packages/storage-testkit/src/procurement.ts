import { assert, type Vitest } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Offer, OfferId, Procurement, ProcurementId, Resource, ResourceId } from "@gpu-market/core"
import { evaluateResourcePlan, type OfferRecord, type ProcurementRecord, ProcurementStore, type ResourceRecord, type Storage } from "@gpu-market/core/storage"
import { assertPagesMatchReference } from "./walk.js"
import { namespace } from "./namespace.js"


/** A 22-character id body, unique per call, so ids look like the service's. */
const idOf = <A>(prefix: string, seed: string): A => `${prefix}_${Buffer.from(seed).toString("base64url").padEnd(22, "x").slice(-22)}` as A
let ids = 0
const fresh = <A>(prefix: string): A => idOf<A>(prefix, `${Date.now()}-${ids++}-${Math.random()}`)

const offer = (over: Partial<Offer> = {}): Offer => ({
  offer_id: fresh<OfferId>("off"), vendor: "v-a", gpu_canonical_name: "h100-sxm", gpu_model: "H100", gpu_memory_gb: 80, gpu_count: 16,
  instance_count: 2, gpus_per_instance: 8, region: "us-east", contract_type: "ondemand", contract_term: null, term_hours: 3,
  price_usd_per_gpu_hour: 2.5, storage: { type: "nvme", size_gb: 500, price_usd_per_hour: 0.109589 }, price_usd_per_hour: 40.109589,
  total_usd: 120.328767, created_at: "2026-06-15T12:00:00.000000Z", expires_at: "2026-06-15T12:30:00.000000Z", ...over
})

const procurementRecord = (owner: string, key: string, over: Partial<Procurement> = {}): ProcurementRecord => ({
  owner,
  idempotency_key: key,
  operation: null,
  procurement: {
    procurement_id: fresh<ProcurementId>("prc"), offer_id: fresh<OfferId>("off"), status: "pending", vendor: "v-a",
    gpu_canonical_name: "h100-sxm", gpu_count: 16, instance_count: 2, region: "us-east", contract_type: "ondemand", term_hours: 3,
    price_usd_per_gpu_hour: 2.5, total_usd: 120, created_at: "2026-06-15T12:00:00.000000Z", updated_at: "2026-06-15T12:00:00.000000Z",
    failure_reason: null, resource_ids: [], ...over
  }
})

const resourceRecord = (owner: string, over: Partial<Resource> = {}): ResourceRecord => ({
  owner,
  instance_ref: `ref-${ids++}`,
  operation: null,
  resource: {
    resource_id: fresh<ResourceId>("res"), procurement_id: fresh<ProcurementId>("prc"), status: "running", vendor: "v-a",
    gpu_canonical_name: "h100-sxm", gpu_count: 8, region: "us-east", contract_type: "ondemand", price_usd_per_gpu_hour: 2.5,
    storage: null, created_at: "2026-06-15T12:05:00.000000Z", updated_at: "2026-06-15T12:05:00.000000Z", deleted_at: null, ...over
  }
})

/** The procurement store's block of the conformance suite. */
export const procurementConformance = (it: Vitest.MethodsNonLive<Storage>) => {
  it.effect("procurement: offers round-trip exactly and only their owner reads them", () =>
    Effect.gen(function* () {
      const s = yield* ProcurementStore
      const owner = namespace("own"), other = namespace("other")
      const records: Array<OfferRecord> = [
        { owner, offer: offer(), quote_ref: "q1" },
        { owner, offer: offer({ storage: null, contract_term: "1 year", price_usd_per_gpu_hour: 0.1 + 0.2 }), quote_ref: "q2" }
      ]
      yield* s.putOffers(records)
      for (const r of records) {
        assert.deepStrictEqual(yield* s.offer(owner, r.offer.offer_id), Option.some(r))
        assert.isTrue(Option.isNone(yield* s.offer(other, r.offer.offer_id)))
      }
      assert.isTrue(Option.isNone(yield* s.offer(owner, fresh("off"))))
    }))

  it.effect("procurement: createProcurement is insert-if-absent per owner and key, also under concurrent duplicates", () =>
    Effect.gen(function* () {
      const s = yield* ProcurementStore
      const owner = namespace("own"), other = namespace("other")
      const first = procurementRecord(owner, "key-1")
      assert.deepStrictEqual(yield* s.createProcurement(first), { created: true, record: first })
      const again = yield* s.createProcurement(procurementRecord(owner, "key-1"))
      assert.deepStrictEqual(again, { created: false, record: first })
      assert.deepStrictEqual(yield* s.procurementByKey(owner, "key-1"), Option.some(first))
      assert.isTrue(Option.isNone(yield* s.procurementByKey(other, "key-1")))
      // Another owner's key space is its own.
      assert.isTrue((yield* s.createProcurement(procurementRecord(other, "key-1"))).created)
      assert.isTrue(Option.isNone(yield* s.procurement(other, first.procurement.procurement_id)))

      const racers = Array.from({ length: 12 }, () => procurementRecord(owner, "key-race"))
      const outcomes = yield* Effect.all(racers.map((r) => s.createProcurement(r)), { concurrency: "unbounded" })
      assert.strictEqual(outcomes.filter((o) => o.created).length, 1)
      assert.strictEqual(new Set(outcomes.map((o) => o.record.procurement.procurement_id)).size, 1)
    }))

  it.effect("procurement: transitions are compare-and-set; resources are created with the winning move only", () =>
    Effect.gen(function* () {
      const s = yield* ProcurementStore
      const owner = namespace("own")
      const r0 = procurementRecord(owner, "k")
      yield* s.createProcurement(r0)
      const id = r0.procurement.procurement_id
      const provisioning: ProcurementRecord = { ...r0, operation: "op-1", procurement: { ...r0.procurement, status: "provisioning" } }
      assert.isTrue(yield* s.transitionProcurement("pending", provisioning, []))
      // A second mover that still believes the record is pending loses, and changes nothing.
      assert.isFalse(yield* s.transitionProcurement("pending", { ...r0, procurement: { ...r0.procurement, status: "failed" } }, []))
      assert.deepStrictEqual(yield* s.procurement(owner, id), Option.some(provisioning))

      const res = [resourceRecord(owner, { procurement_id: id }), resourceRecord(owner, { procurement_id: id })]
      const fulfilled: ProcurementRecord = {
        ...provisioning,
        procurement: { ...provisioning.procurement, status: "fulfilled", resource_ids: res.map((r) => r.resource.resource_id) }
      }
      const loser = [resourceRecord(owner, { procurement_id: id })]
      const moves = yield* Effect.all([
        s.transitionProcurement("provisioning", fulfilled, res),
        s.transitionProcurement("provisioning", { ...fulfilled, procurement: { ...fulfilled.procurement, resource_ids: [loser[0]!.resource.resource_id] } }, loser)
      ], { concurrency: "unbounded" })
      assert.deepStrictEqual(moves, [true, false])
      assert.deepStrictEqual(yield* s.procurement(owner, id), Option.some(fulfilled))
      for (const r of res) assert.deepStrictEqual(yield* s.resource(owner, r.resource.resource_id), Option.some(r))
      assert.isTrue(Option.isNone(yield* s.resource(owner, loser[0]!.resource.resource_id)))
      // Nothing moves a settled procurement.
      for (const from of ["pending", "provisioning", "failed"] as const) {
        assert.isFalse(yield* s.transitionProcurement(from, { ...fulfilled, procurement: { ...fulfilled.procurement, status: "failed" } }, []))
      }
      assert.isFalse(yield* s.transitionProcurement("pending", procurementRecord(owner, "never-created"), []))

      const running = res[0]!
      const deleting: ResourceRecord = { ...running, operation: "op-t", resource: { ...running.resource, status: "deleting" } }
      assert.isTrue(yield* s.transitionResource("running", deleting))
      assert.isFalse(yield* s.transitionResource("running", { ...running, resource: { ...running.resource, status: "deleted" } }))
      const deleted: ResourceRecord = { ...deleting, resource: { ...deleting.resource, status: "deleted", deleted_at: "2026-06-15T13:00:00.000000Z" } }
      assert.isTrue(yield* s.transitionResource("deleting", deleted))
      assert.isFalse(yield* s.transitionResource("deleting", deleted))
      assert.deepStrictEqual(yield* s.resource(owner, running.resource.resource_id), Option.some(deleted))
      assert.isTrue(Option.isNone(yield* s.resource(namespace("other"), running.resource.resource_id)))
    }))

  it.effect("procurement: unsettled lists the owner's pending, provisioning and deleting records in id order", () =>
    Effect.gen(function* () {
      const s = yield* ProcurementStore
      const owner = namespace("own")
      const pending = procurementRecord(owner, "a")
      const provisioning = procurementRecord(owner, "b", { status: "provisioning" })
      const done = procurementRecord(owner, "c", { status: "failed" })
      for (const r of [pending, provisioning, done]) yield* s.createProcurement(r)
      yield* s.createProcurement(procurementRecord(namespace("other"), "a"))
      const deleting = resourceRecord(owner, { status: "deleting" })
      const carrier = procurementRecord(owner, "d", { status: "provisioning" })
      yield* s.createProcurement(carrier)
      yield* s.transitionProcurement("provisioning", { ...carrier, procurement: { ...carrier.procurement, status: "fulfilled" } }, [deleting, resourceRecord(owner)])
      const open = yield* s.unsettled(owner)
      assert.deepStrictEqual(open.procurements.map((p) => p.procurement.procurement_id), [pending, provisioning].map((p) => p.procurement.procurement_id).sort())
      assert.deepStrictEqual(open.resources, [deleting])
    }))

  it.effect("procurement: resource pages match the reference for every filter and order, owner only", () =>
    Effect.gen(function* () {
      const s = yield* ProcurementStore
      const owner = namespace("own")
      const rows: Array<ResourceRecord> = []
      for (let i = 0; i < 11; i++) {
        rows.push(resourceRecord(owner, {
          status: (["running", "deleting", "deleted"] as const)[i % 3]!,
          vendor: i % 2 === 0 ? "v-a" : "v-b",
          gpu_canonical_name: i % 4 === 0 ? "a100" : "h100-sxm",
          created_at: `2026-06-15T12:0${i % 4}:00.000000Z`
        }))
      }
      const carrier = procurementRecord(owner, "k", { status: "provisioning" })
      yield* s.createProcurement(carrier)
      yield* s.transitionProcurement("provisioning", { ...carrier, procurement: { ...carrier.procurement, status: "fulfilled" } }, rows)
      const compared = yield* assertPagesMatchReference(
        (plan) => s.resources(owner, plan),
        evaluateResourcePlan,
        rows.map((r) => r.resource),
        "resource_id",
        {
          scopes: [{ _tag: "latest" }],
          mine: { op: "in", field: "status", values: ["running", "deleting", "deleted"] },
          extra: [[], [{ op: "in", field: "status", values: ["running"] }], [{ op: "in", field: "vendor", values: ["v-a"] }],
            [{ op: "in", field: "gpu_canonical_name", values: ["h100-sxm"] }, { op: "in", field: "vendor", values: ["v-a", "v-b"] }]],
          sorts: ["created_at"],
          limit: 3
        }
      )
      assert.isAbove(compared, 20)
      assert.deepStrictEqual(yield* s.resources(namespace("other"), {
        scope: { _tag: "latest" }, predicates: [], sort: { by: "created_at", order: "desc" }, after: undefined, limit: 10
      }), [])
    }))
}
