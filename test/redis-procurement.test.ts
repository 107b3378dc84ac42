import { assert, layer } from "@effect/vitest"
import { Auth, marketLayer, OfferList, procurementLayer, Resource, simulatedProviderLayer } from "@gpu-market/core"
import * as RedisStorage from "@gpu-market/storage-redis"
import { Effect, Layer, Option, Schema, TestClock } from "effect"
import { seed } from "./support/market"
import {
  atMinute, BUYERS, expectProblem, getOffers, H100_REQUEST, procure, PROVISION_MS, supply, TERMINATE_MS
} from "./support/procurement"
import { TestRedis, testRedisLayer, uniquePrefix } from "./support/redis"

/**
 * The procurement service end to end over HTTP with every store in Redis (the fixture market
 * seeded through the write paths), under a TestClock behind the server's clock, which offer
 * retention must not depend on. A second connection under the same prefix, as another
 * instance, sees what the first wrote.
 */

const PREFIX = uniquePrefix("procurement-e2e")

const market = Layer.effectDiscard(seed).pipe(
  Layer.provideMerge(marketLayer),
  Layer.provideMerge(Layer.unwrapEffect(Effect.map(TestRedis, (server) => RedisStorage.layer({ url: server.url, prefix: PREFIX }))))
)

const fixture = Layer.effectDiscard(Effect.flatMap(Auth, (auth) => Effect.forEach(Object.entries(BUYERS), ([secret, p]) => auth.issue(p, secret)))).pipe(
  Layer.provideMerge(procurementLayer.pipe(Layer.provide(simulatedProviderLayer({ provisionMillis: PROVISION_MS, terminateMillis: TERMINATE_MS })))),
  Layer.provideMerge(market),
  Layer.provideMerge(testRedisLayer())
)

const offersFor = (yaml: string) => Effect.map(getOffers(yaml), (r) => {
  assert.strictEqual(r.status, 200, r.text)
  return Schema.decodeUnknownSync(OfferList)(r.body).data
})

layer(fixture, { timeout: "120 seconds" })("procurement on Redis over HTTP", (it) => {
  it.effect("provision once under duplicates, fulfil, list, delete; another instance sees the same state", () =>
    Effect.gen(function* () {
      yield* atMinute(0)
      const [offer] = yield* offersFor(`${H100_REQUEST}limit: 1\n`)
      const replies = yield* Effect.all(Array.from({ length: 8 }, () => procure(offer!.offer_id, "e2e-1")), { concurrency: "unbounded" })
      assert.deepStrictEqual(replies.map((r) => r.status).sort(), [200, 200, 200, 200, 200, 200, 200, 201])
      const id = replies[0]!.body.procurement_id as string
      assert.strictEqual(new Set(replies.map((r) => r.body.procurement_id)).size, 1)

      yield* TestClock.adjust(PROVISION_MS)
      const done = (yield* supply(`/procurements/${id}`)).body
      assert.strictEqual(done.status, "fulfilled")
      const running = (yield* supply("/resources?status=running")).body.data as Array<Resource>
      assert.deepStrictEqual(running.map((r) => r.resource_id).sort(), [...done.resource_ids].sort())
      expectProblem(yield* supply(`/procurements/${id}`, "rival"), 404, "not_found")

      const target = running[0]!.resource_id
      const deleting = yield* supply(`/resources/${target}`, "buyer", "DELETE")
      assert.strictEqual(deleting.status, 202, deleting.text)
      assert.strictEqual(deleting.body.status, "deleting")
      yield* TestClock.adjust(TERMINATE_MS)
      assert.strictEqual((yield* supply(`/resources/${target}`)).body.status, "deleted")
      assert.deepStrictEqual(((yield* supply("/resources?status=deleted")).body.data as Array<Resource>).map((r) => r.resource_id), [target])

      const server = yield* TestRedis
      const other = (yield* RedisStorage.make({ url: server.url, prefix: PREFIX })).procurementStore
      const seen = yield* other.procurement("p-buyer", id)
      assert.isTrue(Option.isSome(seen))
      assert.strictEqual(Option.getOrThrow(seen).procurement.status, "fulfilled")
    }).pipe(Effect.scoped))

  it.effect("an offer is found until 30 minutes have passed and refused as expired at exactly 30 minutes", () =>
    Effect.gen(function* () {
      yield* atMinute(60)
      const [offer] = yield* offersFor(`${H100_REQUEST}limit: 1\n`)
      yield* TestClock.adjust(30 * 60_000 - 1)
      assert.strictEqual((yield* supply(`/offers/${offer!.offer_id}`)).status, 200)
      yield* TestClock.adjust(1)
      expectProblem(yield* procure(offer!.offer_id, "late"), 410, "offer_expired")
    }))

  it.effect("get_offers allows a client exactly 5 a minute across two instances of one Redis", () =>
    Effect.gen(function* () {
      yield* atMinute(120)
      const server = yield* TestRedis
      // Another instance: its own connection and services over the same keys.
      const other = procurementLayer.pipe(
        Layer.provide(simulatedProviderLayer({ provisionMillis: PROVISION_MS, terminateMillis: TERMINATE_MS })),
        Layer.provideMerge(marketLayer),
        Layer.provideMerge(RedisStorage.layer({ url: server.url, prefix: PREFIX }))
      )
      const statuses: Array<number> = []
      for (let i = 0; i < 8; i++) {
        const ask = getOffers(`${H100_REQUEST}limit: 1\n`)
        statuses.push((i % 2 === 0 ? yield* ask : yield* Effect.provide(ask, other)).status)
      }
      assert.deepStrictEqual(statuses, [200, 200, 200, 200, 200, 429, 429, 429])
      // Another client's limit is its own.
      assert.strictEqual((yield* Effect.provide(getOffers(`${H100_REQUEST}limit: 1\n`, "rival"), other)).status, 200)
      yield* TestClock.adjust(60_000)
      assert.strictEqual((yield* Effect.provide(getOffers(`${H100_REQUEST}limit: 1\n`), other)).status, 200)
    }))
})
