import { assert, describe, it, layer } from "@effect/vitest"
import {
  marketLayer, type Offer, OfferList, Procurement, Procurements, procurementLayer, Resource, simulatedProviderLayer
} from "@gpu-market/core"
import { ProcurementStore } from "@gpu-market/core/storage"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Effect, Layer, Schema, TestClock } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { BASE_URL, http, NOW_MS } from "./support/market"
import {
  atMinute, iso, BUYERS, expectProblem, getOffers, H100_REQUEST, procure, procurementFixture, PROVISION_MS, supply, TERMINATE_MS
} from "./support/procurement"

const validProcurement = Schema.decodeUnknownSync(Procurement, { onExcessProperty: "error" })
const validResource = Schema.decodeUnknownSync(Resource, { onExcessProperty: "error" })
const offersFor = (yaml: string, token = "buyer") => Effect.map(getOffers(yaml, token), (r) => Schema.decodeUnknownSync(OfferList)(r.body).data)

describe("procurement: provisioning, resources, isolation", () => {
  layer(procurementFixture("proc-life"), { timeout: "120 seconds" })((it) => {
    it.effect("pending → provisioning → fulfilled at exactly provisionMillis; resources appear with it; replays return it", () =>
      Effect.gen(function* () {
        yield* atMinute(0)
        const [offer] = yield* offersFor(`${H100_REQUEST}gpu_count: 16\n`.replace("gpu_count: 8\n", ""))
        assert.strictEqual(offer!.gpu_count, 16)
        const created = yield* procure(offer!.offer_id, "life-1")
        assert.strictEqual(created.status, 201, created.text)
        const p = validProcurement(created.body)
        assert.strictEqual(p.status, "provisioning")
        assert.strictEqual(created.headers.get("location"), `/api/supply/procurements/${p.procurement_id}`)
        assert.deepStrictEqual([p.offer_id, p.vendor, p.gpu_count, p.instance_count, p.resource_ids], [offer!.offer_id, offer!.vendor, 16, offer!.instance_count, []])

        yield* TestClock.adjust(PROVISION_MS - 1)
        assert.strictEqual((yield* supply(`/procurements/${p.procurement_id}`)).body.status, "provisioning")
        assert.deepStrictEqual((yield* supply("/resources")).body.data, [])
        yield* TestClock.adjust(1)
        const done = validProcurement((yield* supply(`/procurements/${p.procurement_id}`)).body)
        assert.strictEqual(done.status, "fulfilled")
        assert.strictEqual(done.updated_at, iso(NOW_MS + PROVISION_MS))
        assert.strictEqual(done.resource_ids.length, offer!.instance_count)
        for (const id of done.resource_ids) {
          const r = validResource((yield* supply(`/resources/${id}`)).body)
          assert.deepStrictEqual([r.status, r.procurement_id, r.gpu_count, r.created_at], ["running", p.procurement_id, offer!.gpus_per_instance, done.updated_at])
        }
        // The same key again: the same procurement, 200, never a second one.
        const replay = yield* procure(offer!.offer_id, "life-1")
        assert.strictEqual(replay.status, 200)
        assert.deepStrictEqual(replay.body, done)
        // The same key for another offer is refused.
        const [other] = yield* offersFor(`${H100_REQUEST}limit: 1\n`)
        expectProblem(yield* procure(other!.offer_id, "life-1"), 422, "idempotency_conflict")
      }))

    it.effect("concurrent duplicate requests with one key make one procurement", () =>
      Effect.gen(function* () {
        yield* atMinute(30)
        const [offer] = yield* offersFor(`${H100_REQUEST}limit: 1\n`)
        const replies = yield* Effect.all(Array.from({ length: 8 }, () => procure(offer!.offer_id, "dup-key")), { concurrency: "unbounded" })
        assert.strictEqual(replies.filter((r) => r.status === 201).length, 1)
        assert.strictEqual(replies.filter((r) => r.status === 200).length, 7)
        assert.strictEqual(new Set(replies.map((r) => r.body.procurement_id)).size, 1)
      }))

    it.effect("a provider failure: provisioning → failed with the reason, and no resources", () =>
      Effect.gen(function* () {
        yield* atMinute(60)
        const offers = yield* offersFor(`${H100_REQUEST}limit: 50\n`)
        const gamma = offers.find((o) => o.vendor === "v-gamma")!
        const p = (yield* procure(gamma.offer_id, "fail-1")).body
        assert.strictEqual(p.status, "provisioning")
        yield* TestClock.adjust(PROVISION_MS)
        const failed = validProcurement((yield* supply(`/procurements/${p.procurement_id}`)).body)
        assert.deepStrictEqual([failed.status, failed.failure_reason, failed.resource_ids], ["failed", "v-gamma is out of capacity", []])
        // Failed is final: reading again changes nothing.
        yield* TestClock.adjust(PROVISION_MS)
        assert.deepStrictEqual((yield* supply(`/procurements/${p.procurement_id}`)).body, failed)
      }))

    it.effect("delete: running → deleting (202) → deleted (200), idempotent; list pages, filters and isolation", () =>
      Effect.gen(function* () {
        yield* atMinute(90)
        const offers = yield* offersFor("gpu: l40s\ngpu_count: 2\nregions: [eu-west]\ncontract_type: spot\nlimit: 50\n", "rival")
        const offer = offers.find((o) => o.vendor !== "v-gamma" && o.instance_count === 2)!
        const p = (yield* procure(offer.offer_id, "del-1", "rival")).body
        yield* TestClock.adjust(PROVISION_MS)
        const list = yield* supply("/resources?page_size=1", "rival")
        assert.strictEqual(list.status, 200, list.text)
        assert.strictEqual(list.body.data.length, 1)
        assert.strictEqual(list.body.meta.has_more, true)
        assert.isTrue(list.body.meta.next.url.startsWith(`${BASE_URL}/supply/resources?page_token=`))
        const second = yield* http(`/api/supply/resources?page_token=${list.body.meta.next.query_params.page_token}&page_size=1`, { token: "rival" })
        assert.strictEqual(second.body.data.length, 1)
        assert.strictEqual(second.body.meta.has_more, false)
        const ids = [list.body.data[0].resource_id, second.body.data[0].resource_id]
        assert.sameMembers(ids, (yield* supply(`/procurements/${p.procurement_id}`, "rival")).body.resource_ids)
        // A page token is the caller's own.
        expectProblem(yield* http(`/api/supply/resources?page_token=${list.body.meta.next.query_params.page_token}`, { token: "buyer" }), 422, "validation_failed")

        const first = yield* supply(`/resources/${ids[0]}`, "rival", "DELETE")
        assert.strictEqual(first.status, 202, first.text)
        assert.strictEqual(first.body.status, "deleting")
        assert.strictEqual((yield* supply(`/resources/${ids[0]}`, "rival", "DELETE")).body.status, "deleting")
        assert.deepStrictEqual((yield* supply("/resources?status=deleting", "rival")).body.data.map((r: any) => r.resource_id), [ids[0]])
        yield* TestClock.adjust(TERMINATE_MS)
        assert.deepStrictEqual((yield* supply("/resources?status=deleting", "rival")).body.data, [])
        const gone = yield* supply(`/resources/${ids[0]}`, "rival", "DELETE")
        assert.strictEqual(gone.status, 200)
        assert.deepStrictEqual([gone.body.status, gone.body.deleted_at], ["deleted", iso(NOW_MS + 90 * 60_000 + PROVISION_MS + TERMINATE_MS)])
        assert.deepStrictEqual((yield* supply(`/resources?status=running&vendor=${offer.vendor}`, "rival")).body.data.map((r: any) => r.resource_id), [ids[1]])
        assert.deepStrictEqual((yield* supply("/resources?gpu_canonical_name=h100-sxm", "rival")).body.data, [])
        expectProblem(yield* supply("/resources?status=gone", "rival"), 422, "validation_failed")

        // Another client sees none of it: the same 404 as an id that never existed.
        for (const path of [`/offers/${offer.offer_id}`, `/procurements/${p.procurement_id}`, `/resources/${ids[1]}`]) {
          const foreign = expectProblem(yield* supply(path, "buyer"), 404, "not_found")
          const id = path.split("/")[2]!
          const fake = `${id.slice(0, 4)}${"A".repeat(22)}`
          const unknown = expectProblem(yield* supply(path.replace(id, fake), "buyer"), 404, "not_found")
          assert.strictEqual(foreign.detail.replace(id, fake), unknown.detail)
        }
        expectProblem(yield* supply(`/resources/${ids[1]}`, "buyer", "DELETE"), 404, "not_found")
        expectProblem(yield* procure(offer.offer_id, "steal", "buyer"), 404, "not_found")
        assert.isFalse((yield* supply("/resources", "buyer")).body.data.some((r: any) => ids.includes(r.resource_id)))
        assert.strictEqual((yield* supply(`/resources/${ids[1]}`, "rival")).body.status, "running")
      }))

    it.effect("requests: 401, 403 without the grant on every path, 405 with Allow, 415, 422 for key and body, 404 for malformed ids", () =>
      Effect.gen(function* () {
        yield* atMinute(200)
        const paths: Array<[string, string]> = [
          ["GET", "/gpus"], ["GET", "/vendors"], ["GET", "/regions"], ["GET", "/contracts"], ["GET", "/storage-options"],
          ["POST", "/get_offers"], ["GET", "/offers/off_AAAAAAAAAAAAAAAAAAAAAA"], ["POST", "/procurements"],
          ["GET", "/procurements/prc_AAAAAAAAAAAAAAAAAAAAAA"], ["GET", "/resources"], ["GET", "/resources/res_AAAAAAAAAAAAAAAAAAAAAA"],
          ["DELETE", "/resources/res_AAAAAAAAAAAAAAAAAAAAAA"]
        ]
        for (const [method, path] of paths) {
          expectProblem(yield* supply(path, "nosupply", method), 403, "insufficient_entitlement")
          expectProblem(yield* http(`/api/supply${path}`, { method }), 401, "unauthenticated")
        }
        for (const [method, path, allow] of [["PUT", "/procurements", "POST"], ["POST", "/gpus", "GET"], ["PATCH", "/resources/x", "GET, DELETE"], ["GET", "/get_offers", "POST"]]) {
          const r = yield* supply(path!, "buyer", method)
          expectProblem(r, 405, "method_not_allowed")
          assert.strictEqual(r.headers.get("allow"), allow)
        }
        expectProblem(yield* supply("/nothing"), 404, "not_found")
        for (const bad of ["x", "off_short", "prc_AAAAAAAAAAAAAAAAAAAAAA"]) expectProblem(yield* supply(`/offers/${bad}`), 404, "not_found")
        const [offer] = yield* offersFor(`${H100_REQUEST}limit: 1\n`)
        const noKey = expectProblem(yield* procure(offer!.offer_id, undefined), 422, "validation_failed")
        assert.deepStrictEqual(noKey.errors!.map((e) => e.parameter), ["Idempotency-Key"])
        expectProblem(yield* procure(offer!.offer_id, "x".repeat(256)), 422, "validation_failed")
        const post = (body: string, type = "application/json") =>
          http("/api/supply/procurements", { token: "buyer", method: "POST", body, headers: { "content-type": type, "idempotency-key": "k-body" } })
        expectProblem(yield* post("{"), 422, "validation_failed")
        expectProblem(yield* post(JSON.stringify({ offer_id: offer!.offer_id, extra: 1 })), 422, "validation_failed")
        expectProblem(yield* post(JSON.stringify([offer!.offer_id])), 422, "validation_failed")
        expectProblem(yield* post(JSON.stringify({ offer_id: offer!.offer_id }), "application/yaml"), 415, "unsupported_media_type")
        expectProblem(yield* post(JSON.stringify({ offer_id: "off_AAAAAAAAAAAAAAAAAAAAAA" })), 404, "not_found")
        // The supply prefix is an option of the app.
        const moved = yield* http("/api/procure/gpus", { token: "buyer", app: { supplyPrefix: "/procure" } })
        assert.strictEqual(moved.status, 200)
      }))
  })
})

describe("procurement: idempotency across connections to one SQLite file", () => {
  it.effect("six connections, one key, concurrently: one procurement", () =>
    Effect.gen(function* () {
      const filename = join(mkdtempSync(join(tmpdir(), "gpu-market-proc-conn-")), "market.db")
      yield* TestClock.setTime(NOW_MS)
      const offer: Offer = {
        offer_id: "off_BBBBBBBBBBBBBBBBBBBBBB" as Offer["offer_id"], vendor: "v", gpu_canonical_name: "h100-sxm", gpu_model: "H100",
        gpu_memory_gb: 80, gpu_count: 8, instance_count: 1, gpus_per_instance: 8, region: "us-east", contract_type: "ondemand",
        contract_term: null, term_hours: 1, price_usd_per_gpu_hour: 2, storage: null, price_usd_per_hour: 16, total_usd: 16,
        created_at: iso(NOW_MS), expires_at: iso(NOW_MS + 30 * 60_000)
      }
      yield* Effect.flatMap(ProcurementStore, (s) => s.putOffers([{ owner: BUYERS.buyer.id, offer, quote_ref: "q" }])).pipe(
        Effect.provide(SqliteStorage.layer({ filename }))
      )
      // Each call has its own connection, as separate processes on one file would.
      const connection = () => procurementLayer.pipe(
        Layer.provide(simulatedProviderLayer({ provisionMillis: 1000 })),
        Layer.provideMerge(marketLayer),
        Layer.provideMerge(SqliteStorage.layer({ filename }))
      )
      const create = Effect.flatMap(Procurements, (p) => p.create({ principal: BUYERS.buyer, body: { offer_id: offer.offer_id }, idempotencyKey: "conn" }))
      const results = yield* Effect.all(Array.from({ length: 6 }, () => Effect.provide(create, connection())), { concurrency: "unbounded" })
      assert.strictEqual(results.filter((r) => r.created).length, 1)
      assert.strictEqual(new Set(results.map((r) => r.procurement.procurement_id)).size, 1)
    }))
})
