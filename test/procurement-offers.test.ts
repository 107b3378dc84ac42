import { assert, describe, layer } from "@effect/vitest"
import { Offer, OfferList } from "@gpu-market/core"
import { Effect, Schema, TestClock } from "effect"
import { NOW_MS } from "./support/market"
import { atMinute, iso, expectProblem, getOffers, H100_REQUEST, procure, procurementFixture, supply } from "./support/procurement"

const validList = Schema.decodeUnknownSync(OfferList, { onExcessProperty: "error" })
const validOffer = Schema.decodeUnknownSync(Offer, { onExcessProperty: "error" })

describe("procurement: discovery and offers", () => {
  layer(procurementFixture("proc-offers"), { timeout: "120 seconds" })((it) => {
    it.effect("discovery lists what the market sells now, from current rental rows and the provider's terms", () =>
      Effect.gen(function* () {
        yield* atMinute(0)
        const gpus = yield* supply("/gpus")
        assert.strictEqual(gpus.status, 200, gpus.text)
        // v100 was withdrawn from the market: it is not purchasable.
        assert.deepStrictEqual(gpus.body.data.map((g: any) => g.gpu_canonical_name), ["a100-sxm-80gb", "h100-sxm", "l40s", "wide-01", "wide-02", "wide-03", "wide-04", "wide-05", "wide-06", "wide-07", "wide-08", "wide-09", "wide-10", "wide-11", "wide-12", "wide-13", "wide-14", "wide-15", "wide-16", "wide-17", "wide-18", "wide-19", "wide-20", "wide-21", "wide-22", "wide-23", "wide-24", "wide-25"])
        const h100 = gpus.body.data.find((g: any) => g.gpu_canonical_name === "h100-sxm")
        assert.deepStrictEqual(h100.gpus_per_instance, [1, 8])
        assert.deepStrictEqual(h100.vendors, ["v-alpha", "v-beta", "v-gamma"])
        assert.deepStrictEqual(h100.contract_types, ["ondemand", "spot"])
        const vendors = yield* supply("/vendors")
        assert.deepStrictEqual(vendors.body.data.map((v: any) => v.vendor), ["v-alpha", "v-beta", "v-gamma", "v-wide"])
        const regions = yield* supply("/regions")
        assert.deepStrictEqual(regions.body.data.map((r: any) => r.region), ["eu-west", "us-east"])
        const contracts = yield* supply("/contracts")
        assert.deepStrictEqual(contracts.body.data.map((c: any) => c.contract_type), ["ondemand", "spot"])
        assert.strictEqual(contracts.body.data[1].interruptible, true)
        const storage = yield* supply("/storage-options")
        assert.deepStrictEqual(storage.body.data.map((s: any) => s.storage_type), ["nvme", "block", "object"])
        expectProblem(yield* supply("/gpus?vendor=v-alpha"), 422, "validation_failed")
      }))

    it.effect("get_offers: offers match the request, are sorted, priced, stored and expire 30 minutes after", () =>
      Effect.gen(function* () {
        yield* atMinute(1)
        const r = yield* getOffers(`${H100_REQUEST}term_hours: 10\nstorage: { type: nvme, size_gb: 730 }\nlimit: 4\n`)
        assert.strictEqual(r.status, 200, r.text)
        const list = validList(r.body)
        assert.strictEqual(list.data.length, 4)
        assert.deepStrictEqual(list.meta, { returned: 4, sort: { by: "price_usd_per_gpu_hour", order: "asc" } })
        const prices = list.data.map((o) => o.price_usd_per_gpu_hour)
        assert.deepStrictEqual(prices, [...prices].sort((a, b) => a - b))
        for (const o of list.data) {
          assert.strictEqual(o.gpu_canonical_name, "h100-sxm")
          assert.strictEqual(o.region, "us-east")
          assert.strictEqual(o.contract_type, "ondemand")
          assert.strictEqual(o.gpu_count, 8)
          assert.strictEqual(o.instance_count * o.gpus_per_instance, 8)
          assert.match(o.offer_id, /^off_[A-Za-z0-9_-]{22}$/)
          assert.strictEqual(o.created_at, iso(NOW_MS + 60_000))
          assert.strictEqual(o.expires_at, iso(NOW_MS + 60_000 + 30 * 60_000))
          // 730 GB of NVMe at 0.08 USD per GB-month is 0.08 USD an hour per instance.
          assert.deepStrictEqual(o.storage, { type: "nvme", size_gb: 730, price_usd_per_hour: Math.round(0.08 * o.instance_count * 1e6) / 1e6 })
          assert.closeTo(o.price_usd_per_hour, o.price_usd_per_gpu_hour * 8 + 0.08 * o.instance_count, 1e-6)
          assert.closeTo(o.total_usd, o.price_usd_per_hour * 10, 1e-5)
          const one = yield* supply(`/offers/${o.offer_id}`)
          assert.deepStrictEqual(validOffer(one.body), o)
        }
        const byVendor = validList((yield* getOffers(`${H100_REQUEST}sort_by: vendor\nsort_order: desc\nlimit: 50\n`)).body)
        const vendors = byVendor.data.map((o) => o.vendor)
        assert.deepStrictEqual(vendors, [...vendors].sort().reverse())
        // A search term resolves as gpu_search does; a ceiling and count narrow.
        const search = validList((yield* getOffers("gpu: A100 SXM4\ngpu_count: 3\nmax_price_usd_per_gpu_hour: 2.2\nlimit: 50\n")).body)
        assert.isAbove(search.data.length, 0)
        for (const o of search.data) {
          assert.strictEqual(o.gpu_canonical_name, "a100-sxm-80gb")
          assert.deepStrictEqual([o.gpus_per_instance, o.instance_count], [1, 3])
          assert.isAtMost(o.price_usd_per_gpu_hour, 2.2)
        }
        const none = yield* getOffers("gpu: nothing-like-this\ngpu_count: 1\n")
        assert.deepStrictEqual(none.body.data, [])
      }))

    it.effect("get_offers: exactly 5 per minute per client, 429 with Retry-After, clients independent, next minute resets", () =>
      Effect.gen(function* () {
        yield* atMinute(2)
        for (let i = 1; i <= 5; i++) {
          const r = yield* getOffers(H100_REQUEST)
          assert.strictEqual(r.status, 200, r.text)
          assert.strictEqual(r.headers.get("x-ratelimit-limit"), "5")
          assert.strictEqual(r.headers.get("x-ratelimit-remaining"), String(5 - i))
          assert.strictEqual(r.headers.get("x-ratelimit-reset"), "60")
        }
        yield* TestClock.adjust(59_000)
        const sixth = yield* getOffers(H100_REQUEST)
        expectProblem(sixth, 429, "rate_limited")
        assert.strictEqual(sixth.headers.get("retry-after"), "1")
        assert.strictEqual(sixth.headers.get("x-ratelimit-remaining"), "0")
        // A bad body still counts: the budget is spent before the body is read.
        expectProblem(yield* getOffers("gpu: ["), 429, "rate_limited")
        assert.strictEqual((yield* getOffers(H100_REQUEST, "rival")).status, 200)
        // The other procurement endpoints are not limited, and carry no rate-limit headers.
        const gpus = yield* supply("/gpus")
        assert.strictEqual(gpus.status, 200)
        assert.isNull(gpus.headers.get("x-ratelimit-limit"))
        yield* TestClock.adjust(1_000)
        const next = yield* getOffers(H100_REQUEST)
        assert.strictEqual(next.status, 200, next.text)
        assert.strictEqual(next.headers.get("x-ratelimit-remaining"), "4")
      }))

    it.effect("offer expiry: procurable until the instant before expires_at, 410 offer_expired from it on", () =>
      Effect.gen(function* () {
        yield* atMinute(4)
        const offers = validList((yield* getOffers(`${H100_REQUEST}limit: 2\n`)).body).data
        yield* TestClock.adjust(30 * 60_000 - 1)
        const before = yield* procure(offers[0]!.offer_id, "expiry-before")
        assert.strictEqual(before.status, 201, before.text)
        yield* TestClock.adjust(1)
        const at = expectProblem(yield* procure(offers[1]!.offer_id, "expiry-at"), 410, "offer_expired")
        assert.include(at.detail, offers[1]!.expires_at)
        // The expired offer can still be read (its expires_at says why it cannot be procured).
        assert.strictEqual((yield* supply(`/offers/${offers[1]!.offer_id}`)).status, 200)
        // A retry of the procurement made in time answers with it, even after the offer expired.
        const replay = yield* procure(offers[0]!.offer_id, "expiry-before")
        assert.strictEqual(replay.status, 200)
        assert.strictEqual(replay.body.procurement_id, before.body.procurement_id)
      }))

    it.effect("get_offers: 415 for anything but application/yaml or application/json, 413 past the byte cap", () =>
      Effect.gen(function* () {
        const types = ["text/plain", "text/yaml", "application/x-yaml", "", "application/yaml; charset=latin1", "application/json; charset=latin1"]
        for (const [i, type] of types.entries()) {
          yield* atMinute(40 + i)
          const p = expectProblem(yield* getOffers(H100_REQUEST, "rival", type), 415, "unsupported_media_type")
          assert.include(p.detail, "application/yaml or application/json")
        }
        assert.strictEqual((yield* getOffers(`${H100_REQUEST}limit: 1\n`, "rival", "Application/YAML; charset=utf-8")).status, 200)
        expectProblem(yield* getOffers(`${H100_REQUEST}#${"x".repeat(20_000)}\n`, "rival"), 413, "payload_too_large")
      }))

    it.effect("get_offers: the same request as JSON answers as the YAML one, and fails as it does", () =>
      Effect.gen(function* () {
        const request = { gpu: "h100-sxm", gpu_count: 8, regions: ["us-east"], contract_type: "ondemand", term_hours: 10, storage: { type: "nvme", size_gb: 730 }, limit: 4 }
        yield* atMinute(60)
        const yaml = yield* getOffers(`${H100_REQUEST}term_hours: 10\nstorage: { type: nvme, size_gb: 730 }\nlimit: 4\n`, "rival")
        const json = yield* getOffers(JSON.stringify(request), "rival", "application/json; charset=utf-8")
        assert.strictEqual(json.status, 200, json.text)
        // The same offers in the same order, each its own (a new id) and held as long.
        const terms = (r: typeof json) => validList(r.body).data.map(({ offer_id: _, ...terms }) => JSON.stringify(terms))
        assert.deepStrictEqual(terms(json), terms(yaml))
        assert.isNotNull(json.headers.get("x-ratelimit-remaining"))
        // Invalid fields are named as they are for YAML (without a line: JSON has none to give).
        const cases: Array<[unknown, ReadonlyArray<string>]> = [
          [{ gpu_count: 8 }, ["gpu"]],
          [{ gpu: "h100", gpu_count: 8, regions: ["us-east", "US East"] }, ["regions[1]"]],
          [{ gpu: "h100", gpu_count: 8, colour: "red" }, ["colour"]],
          [["gpu", "h100"], ["body"]]
        ]
        yield* atMinute(61)
        for (const [body, fields] of cases) {
          const p = expectProblem(yield* getOffers(JSON.stringify(body), "rival", "application/json"), 422, "validation_failed")
          assert.deepStrictEqual(p.errors!.map((e) => e.parameter), fields, JSON.stringify(body))
          assert.notInclude(p.errors![0]!.message, "(line")
        }
        yield* atMinute(62)
        // Not JSON at all (YAML included: the media type says how to read the body).
        for (const text of ["{\"gpu\": \"h100\",", H100_REQUEST, ""]) {
          const p = expectProblem(yield* getOffers(text, "rival", "application/json"), 422, "validation_failed")
          assert.deepStrictEqual(p.errors!.map((e) => e.parameter), ["body"])
          assert.match(p.errors![0]!.message, /^invalid JSON: /)
        }
        const deep = expectProblem(yield* getOffers(`{"gpu": ${"[".repeat(5000)}${"]".repeat(5000)}}`, "rival", "application/json"), 422, "validation_failed")
        assert.include(deep.errors![0]!.message, "nested more than")
        yield* atMinute(63)
        expectProblem(yield* getOffers(JSON.stringify({ ...request, note: "x".repeat(20_000) }), "rival", "application/json"), 413, "payload_too_large")
      }))

    it.effect("get_offers: an invalid request is a 422 naming each field, with the YAML line", () =>
      Effect.gen(function* () {
        const cases: Array<[string, ReadonlyArray<string>]> = [
          ["gpu_count: 8\n", ["gpu"]],
          ["gpu: h100\ngpu_count: 0\n", ["gpu_count"]],
          ["gpu: h100\ngpu_count: 8\nregions:\n  - us-east\n  - US East\n", ["regions[1]"]],
          ["gpu: h100\ngpu_count: 8\nstorage:\n  type: nvme\n  size_gb: -1\n", ["storage.size_gb"]],
          ["gpu: h100\ngpu_count: 8\ncolour: red\n", ["colour"]],
          ["gpu: h100\ngpu_count: 8\ncontract_type: lease\n", ["contract_type"]],
          ["gpu: h100\ngpu_count: 8\ncontract_type: spot\nterm_hours: 1000\n", ["term_hours"]],
          ["gpu: h100\ngpu_count: 8\nstorage: { type: tape, size_gb: 10 }\n", ["storage.type"]],
          ["gpu: h100\ngpu_count: 8\nlimit: 51\nsort_by: speed\n", ["sort_by", "limit"]],
          ["- gpu\n- h100\n", ["body"]],
          ["", ["body"]]
        ]
        let minute = 50
        for (const [[yaml, fields], i] of cases.map((c, i) => [c, i] as const)) {
          if (i % 5 === 0) yield* atMinute(minute++)
          const p = expectProblem(yield* getOffers(yaml, "rival"), 422, "validation_failed")
          assert.deepStrictEqual(p.errors!.map((e) => e.parameter), fields, yaml)
        }
        yield* atMinute(minute++)
        const line = expectProblem(yield* getOffers("gpu: h100\ngpu_count: 8\nregions:\n  - us-east\n  - 7\n", "rival"), 422, "validation_failed")
        assert.include(line.errors![0]!.message, "(line 5)")
        const syntax = expectProblem(yield* getOffers("gpu: h100\ngpu_count: [8\n", "rival"), 422, "validation_failed")
        assert.match(syntax.errors![0]!.parameter, /^line \d+, column \d+$/)
        expectProblem(yield* getOffers("gpu: wide\ngpu_count: 1\n", "rival"), 400, "search_too_broad")
      }))
  })
})
