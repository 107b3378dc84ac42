import { assert, describe, it, layer } from "@effect/vitest"
import type { Offer, OfferId, ProcurementId, ResourceId, ResourceStatus } from "@gpu-market/core"
import type { OfferRecord, PagePlan, ProcurementRecord, ResourceRecord } from "@gpu-market/core/storage"
import { Effect, Option } from "effect"
import { Redis } from "ioredis"
import { randomBytes } from "node:crypto"
import { TestRedis, testRedisLayer, uniquePrefix } from "../../../test/support/redis"
import { make, OFFER_RETENTION_MILLIS, ownerTag } from "../src/internal"

/**
 * The Redis procurement store across connections, as separate service instances share it:
 * duplicate requests and racing transitions from two connections settle on one outcome. Core's
 * conformance block (run on Redis by conformance.test.ts) covers each method's semantics.
 */

const id = <A>(prefix: string) => `${prefix}_${randomBytes(16).toString("base64url").slice(0, 22)}` as A
const T = "2026-06-15T12:00:00.000000Z"

const procurement = (owner: string, key: string): ProcurementRecord => ({
  owner,
  idempotency_key: key,
  operation: null,
  procurement: {
    procurement_id: id<ProcurementId>("prc"), offer_id: id<OfferId>("off"), status: "pending", vendor: "v-a",
    gpu_canonical_name: "h100-sxm", gpu_count: 8, instance_count: 1, region: "us-east", contract_type: "ondemand", term_hours: 1,
    price_usd_per_gpu_hour: 2.5, total_usd: 20, created_at: T, updated_at: T, failure_reason: null, resource_ids: []
  }
})

const resource = (owner: string, procurementId: ProcurementId, status: ResourceStatus = "running"): ResourceRecord => ({
  owner,
  instance_ref: `ref-${randomBytes(4).toString("hex")}`,
  operation: null,
  resource: {
    resource_id: id<ResourceId>("res"), procurement_id: procurementId, status, vendor: "v-a", gpu_canonical_name: "h100-sxm",
    gpu_count: 8, region: "us-east", contract_type: "ondemand", price_usd_per_gpu_hour: 2.5, storage: null, created_at: T,
    updated_at: T, deleted_at: null
  }
})

/** Two store sets on one prefix, each over its own connection: two instances of the service. */
const twoInstances = Effect.gen(function* () {
  const server = yield* TestRedis
  const prefix = uniquePrefix("procurement")
  const [a, b] = yield* Effect.all([0, 1].map(() => make({ url: server.url, prefix })))
  return { prefix, url: server.url, a: a!.procurementStore, b: b!.procurementStore }
})

const byStatus = (status: ResourceStatus): PagePlan => ({
  scope: { _tag: "latest" }, predicates: [{ op: "in", field: "status", values: [status] }],
  sort: { by: "created_at", order: "desc" }, after: undefined, limit: 100
})

layer(testRedisLayer(), { timeout: "30 seconds" })("procurement on Redis", (it) => {
  it.effect("concurrent duplicates of one idempotency key from two connections create one procurement", () =>
    Effect.gen(function* () {
      const { a, b } = yield* twoInstances
      const owner = "buyer"
      const racers = Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).createProcurement(procurement(owner, "same-key")))
      const outcomes = yield* Effect.all(racers, { concurrency: "unbounded" })
      const created = outcomes.filter((o) => o.created)
      assert.strictEqual(created.length, 1)
      const winner = created[0]!.record
      for (const o of outcomes) assert.deepStrictEqual(o.record, winner)
      for (const store of [a, b]) {
        assert.deepStrictEqual(yield* store.procurementByKey(owner, "same-key"), Option.some(winner))
        assert.deepStrictEqual((yield* store.unsettled(owner)).procurements, [winner])
      }
    }).pipe(Effect.scoped))

  it.effect("of racing transitions from two connections one wins, and only its resources exist", () =>
    Effect.gen(function* () {
      const { a, b } = yield* twoInstances
      const owner = "buyer"
      const start = procurement(owner, "k")
      yield* a.createProcurement(start)
      const pid = start.procurement.procurement_id
      const provisioning = { ...start, procurement: { ...start.procurement, status: "provisioning" as const } }
      assert.isTrue(yield* b.transitionProcurement("pending", provisioning, []))
      const moves = Array.from({ length: 10 }, (_, i) => {
        const made = [resource(owner, pid), resource(owner, pid)]
        const next = { ...provisioning, procurement: { ...provisioning.procurement, status: "fulfilled" as const, resource_ids: made.map((r) => r.resource.resource_id) } }
        return Effect.map((i % 2 === 0 ? a : b).transitionProcurement("provisioning", next, made), (won) => ({ won, next, made }))
      })
      const outcomes = yield* Effect.all(moves, { concurrency: "unbounded" })
      const winners = outcomes.filter((o) => o.won)
      assert.strictEqual(winners.length, 1)
      const { next, made } = winners[0]!
      assert.deepStrictEqual(yield* a.procurement(owner, pid), Option.some(next))
      assert.deepStrictEqual(
        (yield* b.resources(owner, byStatus("running"))).map((r) => r.resource_id).sort(),
        made.map((r) => r.resource.resource_id).sort()
      )
      assert.deepStrictEqual((yield* b.unsettled(owner)).procurements, [])
    }).pipe(Effect.scoped))

  it.effect("a resource transition moves it between the status pages and the unsettled list", () =>
    Effect.gen(function* () {
      const { a, b } = yield* twoInstances
      const owner = "buyer"
      const carrier = procurement(owner, "k")
      const provisioning = { ...carrier, procurement: { ...carrier.procurement, status: "provisioning" as const } }
      yield* a.createProcurement(provisioning)
      const rows = Array.from({ length: 5 }, () => resource(owner, carrier.procurement.procurement_id))
      yield* a.transitionProcurement("provisioning", { ...provisioning, procurement: { ...provisioning.procurement, status: "fulfilled" } }, rows)
      const target = rows[2]!
      const deleting: ResourceRecord = { ...target, operation: "op", resource: { ...target.resource, status: "deleting" } }
      assert.isTrue(yield* b.transitionResource("running", deleting))
      assert.strictEqual((yield* a.resources(owner, byStatus("running"))).length, 4)
      assert.deepStrictEqual(yield* a.resources(owner, byStatus("deleting")), [deleting.resource])
      assert.deepStrictEqual((yield* a.unsettled(owner)).resources, [deleting])
      const deleted: ResourceRecord = { ...deleting, resource: { ...deleting.resource, status: "deleted", deleted_at: T } }
      assert.isTrue(yield* a.transitionResource("deleting", deleted))
      assert.deepStrictEqual(yield* b.resources(owner, byStatus("deleting")), [])
      assert.deepStrictEqual(yield* b.resources(owner, byStatus("deleted")), [deleted.resource])
      assert.deepStrictEqual((yield* b.unsettled(owner)).resources, [])
    }).pipe(Effect.scoped))

  it.effect("an offer stays readable a day past its expiry, counted from the write whatever its clock says", () =>
    Effect.gen(function* () {
      const { a, prefix, url } = yield* twoInstances
      // Stamped by a clock far behind the server's, as under TestClock: long expired by wall time.
      const offer: Offer = {
        offer_id: id<OfferId>("off"), vendor: "v-a", gpu_canonical_name: "h100-sxm", gpu_model: "H100", gpu_memory_gb: 80, gpu_count: 8,
        instance_count: 1, gpus_per_instance: 8, region: "us-east", contract_type: "ondemand", contract_term: null, term_hours: 1,
        price_usd_per_gpu_hour: 2.5, storage: null, price_usd_per_hour: 20, total_usd: 20,
        created_at: "1970-01-01T00:00:00.000000Z", expires_at: "1970-01-01T00:30:00.000000Z"
      }
      const record: OfferRecord = { owner: "buyer", offer, quote_ref: "q" }
      yield* a.putOffers([record])
      assert.deepStrictEqual(yield* a.offer("buyer", offer.offer_id), Option.some(record))
      const ttl = yield* Effect.promise(async () => {
        const admin = new Redis(url)
        try {
          return await admin.pttl(`${prefix}:{procurement:buyer}:offer:${offer.offer_id}`)
        } finally {
          await admin.quit()
        }
      })
      const held = 30 * 60_000 + OFFER_RETENTION_MILLIS
      assert.isAbove(ttl, held - 60_000)
      assert.isAtMost(ttl, held)
    }).pipe(Effect.scoped))
})

describe("procurement keys", () => {
  it("each owner has a hash tag of its own, whatever braces or escapes its id holds", () => {
    const owners = ["buyer", "a}b", "a%7Db", "a{b", "a%7Bb", "{}", "%", "%25"]
    const tags = owners.map(ownerTag)
    assert.strictEqual(new Set(tags).size, owners.length)
    // A brace inside the tag would end it early (or open another), and owners could share keys.
    for (const tag of tags) assert.notMatch(tag, /[{}]/)
  })
})
