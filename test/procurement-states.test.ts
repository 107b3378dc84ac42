import { assert, describe, layer } from "@effect/vitest"
import { Lifecycle, type Offer, ProviderError, SupplyProvider, makeSimulatedProvider } from "@gpu-market/core"
import { MemoryStorage, ProcurementStore, type ProcurementRecord } from "@gpu-market/core/storage"
import { Effect, Layer, Ref, TestClock } from "effect"
import { iso } from "./support/procurement"

/** The provider is down while this flag is set: provisioning cannot start. */
class Outage extends Effect.Service<Outage>()("Test/Outage", { effect: Ref.make(true) }) {}

const providerLayer = Layer.effect(SupplyProvider, Effect.gen(function* () {
  const simulated = yield* makeSimulatedProvider({ provisionMillis: 5000 })
  const down = yield* Outage
  return {
    ...simulated,
    provision: (order) => Effect.flatMap(Ref.get(down), (d) => (d ? Effect.fail(new ProviderError({ detail: "down" })) : simulated.provision(order))),
    status: (op) => Effect.flatMap(Ref.get(down), (d) => (d ? Effect.fail(new ProviderError({ detail: "down" })) : simulated.status(op))),
    terminate: (instance) => Effect.flatMap(Ref.get(down), (d) => (d ? Effect.fail(new ProviderError({ detail: "down" })) : simulated.terminate(instance)))
  } satisfies SupplyProvider["Type"]
}))

const offer: Offer = {
  offer_id: "off_CCCCCCCCCCCCCCCCCCCCCC" as Offer["offer_id"], vendor: "v", gpu_canonical_name: "h100-sxm", gpu_model: "H100",
  gpu_memory_gb: 80, gpu_count: 2, instance_count: 2, gpus_per_instance: 1, region: "us-east", contract_type: "ondemand",
  contract_term: null, term_hours: 1, price_usd_per_gpu_hour: 2, storage: null, price_usd_per_hour: 4, total_usd: 4,
  created_at: iso(0), expires_at: iso(30 * 60_000)
}

const pending = (id: string, offerId: string): ProcurementRecord => ({
  owner: "o", idempotency_key: id, operation: null,
  procurement: {
    procurement_id: `prc_${id.padEnd(22, "x")}` as ProcurementRecord["procurement"]["procurement_id"], offer_id: offerId as Offer["offer_id"],
    status: "pending", vendor: "v", gpu_canonical_name: "h100-sxm", gpu_count: 2, instance_count: 2, region: "us-east",
    contract_type: "ondemand", term_hours: 1, price_usd_per_gpu_hour: 2, total_usd: 4, created_at: iso(0), updated_at: iso(0),
    failure_reason: null, resource_ids: []
  }
})

describe("procurement: the state machine, on the reference store", () => {
  layer(Lifecycle.Default.pipe(Layer.provide(providerLayer), Layer.provideMerge(Outage.Default), Layer.provideMerge(MemoryStorage.layer)))((it) => {
    it.effect("pending waits out a provider outage, then provisioning → fulfilled; a pending order whose offer is gone fails", () =>
      Effect.gen(function* () {
        const store = yield* ProcurementStore
        const lifecycle = yield* Lifecycle
        yield* store.putOffers([{ owner: "o", offer, quote_ref: "q" }])
        const r = pending("a", offer.offer_id)
        yield* store.createProcurement(r)
        assert.strictEqual((yield* lifecycle.advanceProcurement(r)).procurement.status, "pending")
        yield* Ref.set(yield* Outage, false)
        yield* TestClock.setTime(1000)
        const provisioning = yield* lifecycle.advanceProcurement(r)
        assert.deepStrictEqual([provisioning.procurement.status, provisioning.procurement.updated_at], ["provisioning", iso(1000)])
        // Provisioning started from the order's own time: ready 5 s after it was made.
        yield* TestClock.setTime(4999)
        assert.strictEqual((yield* lifecycle.advanceProcurement(provisioning)).procurement.status, "provisioning")
        yield* TestClock.setTime(5000)
        const done = yield* lifecycle.advanceProcurement(provisioning)
        assert.deepStrictEqual([done.procurement.status, done.procurement.resource_ids.length], ["fulfilled", 2])
        // A stale copy cannot move it again, and makes no second set of resources.
        const again = yield* lifecycle.advanceProcurement(provisioning)
        assert.deepStrictEqual(again, done)
        assert.strictEqual((yield* store.resources("o", { scope: { _tag: "latest" }, predicates: [], sort: { by: "created_at", order: "asc" }, after: undefined, limit: 10 })).length, 2)

        const orphan = pending("b", "off_DDDDDDDDDDDDDDDDDDDDDD")
        yield* store.createProcurement(orphan)
        const failed = yield* lifecycle.advanceProcurement(orphan)
        assert.deepStrictEqual([failed.procurement.status, failed.procurement.failure_reason], ["failed", "the offer is gone"])
      }))

    it.effect("a delete the provider cannot take fails with ProviderUnavailable and leaves the resource running", () =>
      Effect.gen(function* () {
        const store = yield* ProcurementStore
        const lifecycle = yield* Lifecycle
        yield* Ref.set(yield* Outage, false)
        yield* TestClock.setTime(0)
        yield* store.putOffers([{ owner: "o", offer: { ...offer, offer_id: "off_DDDDDDDDDDDDDDDDDDDDDD" as Offer["offer_id"] }, quote_ref: "q" }])
        const r = pending("del", "off_DDDDDDDDDDDDDDDDDDDDDD")
        yield* store.createProcurement(r)
        yield* TestClock.setTime(5000)
        const done = yield* lifecycle.advanceProcurement(r)
        const resource = yield* Effect.flatMap(store.resource("o", done.procurement.resource_ids[0]!), (o) => o)
        yield* Ref.set(yield* Outage, true)
        const refused = yield* Effect.flip(lifecycle.deleteResource(resource))
        assert.strictEqual(refused._tag, "ProviderUnavailable")
        const still = yield* Effect.flatMap(store.resource("o", resource.resource.resource_id), (o) => o)
        assert.strictEqual(still.resource.status, "running")
        yield* Ref.set(yield* Outage, false)
        assert.strictEqual((yield* lifecycle.deleteResource(still)).resource.status, "deleted")
      }))
  })
})
