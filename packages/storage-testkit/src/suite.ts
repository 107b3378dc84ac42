import { assert, describe, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { baseProductKey, formatInstant, MICROS_PER_DAY, type Principal, productKey, type RentalPrice } from "@gpu-market/core"
import { currentVersions, evaluateRentalPlan, hashToken, type Predicate, putVersions, RateLimitStore, rentalPriceKeys, RentalPriceStore, SettingsStore, type Storage, TokenStore } from "@gpu-market/core/storage"
import { hardwareConformance, hardwareDay, hardwareRow, testListingKey } from "./hardware.js"
import { transactionConformance } from "./transactions.js"
import { llmTokenPriceConformance } from "./llm-token-prices.js"
import { indexConformance } from "./indexes.js"
import { procurementConformance } from "./procurement.js"
import { referenceDataConformance } from "./reference.js"
import { eventLogConformance } from "./events.js"
import { assertPagesMatchReference } from "./walk.js"
import { VERSION_SCOPES, versionConformance } from "./versions.js"
import { namespace } from "./namespace.js"

export { hardwareDay, hardwareRow, testListingKey } from "./hardware.js"
export { llmRow } from "./llm-token-prices.js"

const T0 = Date.UTC(2026, 0, 1) * 1000
const at = (day: number, hour = 0) => formatInstant(T0 + day * MICROS_PER_DAY + hour * 3_600_000_000)

/** A valid rental row; `over` replaces fields, and the keys are derived as ingest derives them. */
export const rentalRow = (over: Partial<RentalPrice> & Pick<RentalPrice, "vendor" | "gpu_canonical_name">): RentalPrice => {
  const { vendor, gpu_canonical_name, ...rest } = over
  const base: RentalPrice = {
    vendor,
    vendor_gpu_name: `${gpu_canonical_name.toUpperCase()} 80GB`,
    vendor_sku: "sku-1",
    vendor_region: "us-east-1",
    region: "us-east",
    gpu_canonical_name,
    gpu_manufacturer: "nvidia",
    gpu_model: gpu_canonical_name.toUpperCase(),
    gpu_count: 8,
    gpu_memory_gb: 80,
    vcpu: 96,
    ram_gb: 1024,
    os: "linux",
    form_factor: "sxm",
    interconnect: "nvlink",
    instance_type: "gpu.8x",
    instance_variant: null,
    contract_type: "ondemand",
    contract_term: null,
    contract_details: null,
    availability: "available",
    price_usd_per_gpu_hour: 2.5,
    raw_price: 20,
    raw_price_unit: "usd_per_hour",
    valid_from: at(0),
    valid_to: null,
    extracted_at: at(0),
    base_product_key: "",
    product_key: "",
    ...rest
  }
  const bpk = over.base_product_key ?? baseProductKey(base)
  return { ...base, base_product_key: bpk, product_key: over.product_key ?? productKey(bpk, base.valid_from, base) }
}

const principal = (id: string): Principal => ({
  id: id as Principal["id"],
  name: id,
  grants: { gpu_rental_prices: { history: { _tag: "unrestricted" } } },
  indices: "all",
  legacy_custom_index: false,
  procurement: false,
  rate_limit_per_minute: 60
})

/**
 * A small market under one namespace: three vendors, two GPUs, ties in every sort field, and
 * products with several versions, so scopes, sorts and keysets all have work to do.
 */
const market = (ns: string): Array<RentalPrice> => {
  const rows: Array<RentalPrice> = []
  const vendors = [`${ns}-a`, `${ns}-b`, `${ns}-c`]
  const gpus = [`${ns}-h100`, `${ns}-a100`]
  let n = 0
  for (const vendor of vendors) {
    for (const gpu of gpus) {
      for (const sku of ["s1", "s2", "s3"]) {
        const prices = [2 + (n % 3) * 0.5, 2 + ((n + 1) % 3) * 0.5, 1.5 + (n % 2)]
        const versions = 1 + (n % 3)
        for (let v = 0; v < versions; v++) {
          rows.push(rentalRow({
            vendor,
            gpu_canonical_name: gpu,
            vendor_sku: sku,
            region: n % 2 === 0 ? "us-east" : "eu-west",
            gpu_count: n % 2 === 0 ? 8 : 1,
            gpu_memory_gb: gpu.endsWith("h100") ? 80 : 40,
            price_usd_per_gpu_hour: prices[v]!,
            raw_price: prices[v]! * 8,
            valid_from: at(v * 10),
            extracted_at: at(v * 10),
            valid_to: v === versions - 1 ? null : at((v + 1) * 10)
          }))
        }
        n++
      }
    }
  }
  return rows
}

const sortFields = ["gpu_canonical_name", "gpu_count", "gpu_memory_gb", "price_usd_per_gpu_hour", "region", "valid_from", "vendor"]

/**
 * Registers the conformance tests of a storage backend, every store of the contract, under
 * vitest: `suite("sqlite", SqliteStorage.layer({ filename }))`. The layer is built once per suite
 * and shared, as a deployment shares one store; each test keeps to data it names with its own
 * prefix, so tests do not see each other.
 */
export const suite = <E>(name: string, storage: Layer.Layer<Storage, E>) =>
  describe(`storage conformance: ${name}`, () => {
    layer(storage, { timeout: "60 seconds" })((it) => {
      hardwareConformance(it)
      transactionConformance(it)
      llmTokenPriceConformance(it)
      indexConformance(it)
      procurementConformance(it)
      referenceDataConformance(it)
      eventLogConformance(it, {
        rental: (vendor, sku, day, price) =>
          rentalRow({ vendor, gpu_canonical_name: `${vendor}-gpu`, vendor_sku: sku, valid_from: at(day), price_usd_per_gpu_hour: price }),
        hardware: (listing, day) =>
          hardwareRow({ listing_key: testListingKey(listing), gpu_canonical_name: "h100-sxm", observed_date: hardwareDay(day) })
      })

      it.effect("settings: get, set, getOrSet keeps the first value", () =>
        Effect.gen(function* () {
          const s = yield* SettingsStore
          const key = namespace("setting")
          assert.isTrue(Option.isNone(yield* s.get(key)))
          assert.strictEqual(yield* s.getOrSet(key, "first"), "first")
          assert.strictEqual(yield* s.getOrSet(key, "second"), "first")
          yield* s.set(key, "third")
          assert.deepStrictEqual(yield* s.get(key), Option.some("third"))
        }))

      it.effect("settings: a lease has one holder until it expires, and its holder renews it", () =>
        Effect.gen(function* () {
          const s = yield* SettingsStore
          const name = namespace("lease")
          const now = 1_700_000_000_000
          assert.isTrue(yield* s.lease(name, "a", now, 1_000))
          assert.isFalse(yield* s.lease(name, "b|x", now + 999, 1_000))
          assert.isTrue(yield* s.lease(name, "a", now + 999, 1_000))
          // Renewed to now + 1999: b is refused until then, and takes it from that instant.
          assert.isFalse(yield* s.lease(name, "b|x", now + 1_998, 1_000))
          assert.isTrue(yield* s.lease(name, "b|x", now + 1_999, 1_000))
          assert.isFalse(yield* s.lease(name, "a", now + 2_000, 1_000))
          const raced = yield* Effect.all([s.lease(name, "c", now + 5_000, 1_000), s.lease(name, "d", now + 5_000, 1_000)], { concurrency: 2 })
          assert.deepStrictEqual(raced.filter((held) => held).length, 1)
        }))

      it.effect("tokens: put, find by hash, list by principal, revoke", () =>
        Effect.gen(function* () {
          const t = yield* TokenStore
          const ns = namespace("tok")
          const h1 = hashToken(`${ns}-1`), h2 = hashToken(`${ns}-2`)
          const p1 = principal(`${ns}-1`), p2 = principal(`${ns}-2`)
          yield* t.put(h1, p1)
          yield* t.put(h2, p2)
          assert.deepStrictEqual(yield* t.find(h1), Option.some({ tokenHash: h1, principal: p1 }))
          assert.isTrue(Option.isNone(yield* t.find("f".repeat(64))))
          const mine = (yield* t.list).filter((x) => x.principal.id.startsWith(ns))
          assert.deepStrictEqual(mine.map((x) => x.principal.id), [p1.id, p2.id])
          assert.isTrue(yield* t.revoke(p1.id))
          assert.isFalse(yield* t.revoke(p1.id))
          assert.isTrue(Option.isNone(yield* t.find(h1)))
          assert.isTrue(Option.isSome(yield* t.find(h2)))
        }))

      it.effect("tokens: the version moves with every put and every revoke that revoked, and only then", () =>
        Effect.gen(function* () {
          const t = yield* TokenStore
          const ns = namespace("tokv")
          const seen = [yield* t.version]
          const moved = Effect.gen(function* () {
            const v = yield* t.version
            assert.notInclude(seen, v, "a new version, never one seen before")
            seen.push(v)
          })
          yield* t.put(hashToken(`${ns}-1`), principal(`${ns}-1`))
          yield* moved
          // Replacing a token's principal is a change too.
          yield* t.put(hashToken(`${ns}-1`), { ...principal(`${ns}-1`), rate_limit_per_minute: 1 })
          yield* moved
          yield* t.find(hashToken(`${ns}-1`))
          yield* t.list
          assert.isFalse(yield* t.revoke(`${ns}-none`))
          assert.strictEqual(yield* t.version, seen.at(-1))
          assert.isTrue(yield* t.revoke(`${ns}-1`))
          yield* moved
        }))

      it.effect("rate limits: count within a window, reset in the next, keys independent", () =>
        Effect.gen(function* () {
          const r = yield* RateLimitStore
          const key = namespace("rl"), other = namespace("rl")
          const minute = 60_000_000
          const start = 1_000 * minute
          assert.deepStrictEqual(yield* r.hit(key, minute, start + 10_000_000), { count: 1, resetInMicros: 50_000_000 })
          assert.strictEqual((yield* r.hit(key, minute, start + 20_000_000)).count, 2)
          assert.strictEqual((yield* r.hit(other, minute, start + 20_000_000)).count, 1)
          assert.strictEqual((yield* r.hit(key, minute, start + minute - 1)).count, 3)
          assert.deepStrictEqual(yield* r.hit(key, minute, start + minute), { count: 1, resetInMicros: minute })
        }))

      it.effect("rate limits: thousands of keys over two windows each count their own, whatever a store collects", () =>
        Effect.gen(function* () {
          const r = yield* RateLimitStore
          const first = Array.from({ length: 2_500 }, () => namespace("rl-many"))
          const second = Array.from({ length: 2_500 }, () => namespace("rl-many"))
          const minute = 60_000_000
          const start = 2_000 * minute
          const counts = (keys: ReadonlyArray<string>, now: number) =>
            Effect.forEach(keys, (k) => Effect.map(r.hit(k, minute, now), (h) => h.count), { concurrency: 16 })
          const all = (keys: ReadonlyArray<string>, now: number, count: number) =>
            Effect.map(counts(keys, now), (cs) => assert.isTrue(cs.every((c) => c === count), `every key at ${count}`))
          yield* all(first, start, 1)
          yield* all(first, start + minute - 1, 2)
          // New keys in the next window, while the first ones' windows have ended: a store that
          // collects ended windows as it grows must keep every live one.
          yield* all(second, start + minute, 1)
          yield* all(second, start + minute + 1, 2)
          yield* all(first, start + minute + 2, 1)
          yield* all(first, start + minute + 3, 2)
        }))

      versionConformance(it, {
        label: "rental",
        tag: RentalPriceStore,
        keys: rentalPriceKeys,
        row: (ns, thing, price, from) =>
          rentalRow({
            vendor: ns, gpu_canonical_name: `${ns}-gpu`, vendor_sku: `sku-${thing}`, price_usd_per_gpu_hour: price,
            valid_from: from, extracted_at: from
          })
      })

      it.effect("rental: a closed row is served with its end in every window", () =>
        Effect.gen(function* () {
          const s = yield* RentalPriceStore
          const ns = namespace("apply")
          const v1 = rentalRow({ vendor: ns, gpu_canonical_name: `${ns}-gpu`, price_usd_per_gpu_hour: 2 })
          yield* putVersions(s.transact, rentalPriceKeys, [v1])
          const v2 = rentalRow({ vendor: ns, gpu_canonical_name: `${ns}-gpu`, price_usd_per_gpu_hour: 3, valid_from: at(1), extracted_at: at(1) })
          yield* s.transact([{ base: v1.base_product_key, at: at(1) }], () =>
            Either.right({ changes: { close: [{ key: v1.product_key, valid_to: at(1) }], open: [v2] }, result: undefined }))
          assert.deepStrictEqual(yield* currentVersions(s.transact, [v1.base_product_key]), [v2])
          const all = yield* s.page({
            scope: { _tag: "window", start: at(0), end: at(5) }, predicates: [{ op: "in", field: "vendor", values: [ns] }],
            sort: { by: "valid_from", order: "asc" }, after: undefined, limit: 10
          })
          assert.deepStrictEqual(all, [{ ...v1, valid_to: at(1) }, v2])
        }))

      it.effect("rental: pages follow scope, predicates, sort and keyset exactly", () =>
        Effect.gen(function* () {
          const s = yield* RentalPriceStore
          const ns = namespace("page")
          const rows = market(ns)
          yield* putVersions(s.transact, rentalPriceKeys, rows)
          const mine: Predicate = { op: "in", field: "vendor", values: [`${ns}-a`, `${ns}-b`, `${ns}-c`] }
          const scopes = VERSION_SCOPES
          const extra: Array<ReadonlyArray<Predicate>> = [
            [],
            [{ op: "in", field: "gpu_canonical_name", values: [`${ns}-h100`] }],
            [{ op: "eq", field: "region", value: "eu-west" }, { op: "gte", field: "price_usd_per_gpu_hour", value: 2 }],
            [{ op: "lte", field: "gpu_count", value: 1 }, { op: "gte", field: "gpu_memory_gb", value: 40 }],
            [{ op: "eq", field: "availability", value: "none-such" }]
          ]
          yield* assertPagesMatchReference(s.page, evaluateRentalPlan, rows, "product_key", { scopes, mine, extra, sorts: sortFields, limit: 4 })
          // Stated by hand: the current rows of vendor a, cheapest first, ties by product_key.
          const latestA = rows.filter((r) => r.vendor === `${ns}-a` && r.valid_to === null)
          const got = yield* s.page({
            scope: { _tag: "latest" }, predicates: [{ op: "in", field: "vendor", values: [`${ns}-a`] }],
            sort: { by: "price_usd_per_gpu_hour", order: "asc" }, after: undefined, limit: 100
          })
          assert.strictEqual(got.length, 6)
          assert.sameMembers(got.map((r) => r.product_key), latestA.map((r) => r.product_key))
          for (let i = 1; i < got.length; i++) {
            const a = got[i - 1]!, b = got[i]!
            assert.isTrue(a.price_usd_per_gpu_hour < b.price_usd_per_gpu_hour ||
              (a.price_usd_per_gpu_hour === b.price_usd_per_gpu_hour && a.product_key < b.product_key))
          }
        }))

      it.effect("rental: spellings and GPU summaries cover every version ever stored", () =>
        Effect.gen(function* () {
          const s = yield* RentalPriceStore
          const ns = namespace("spell")
          const gpu = `${ns}-h100`
          const old = rentalRow({ vendor: `${ns}-v1`, gpu_canonical_name: gpu, vendor_gpu_name: "Tesla H100 (old)", valid_to: at(5) })
          const now = rentalRow({ vendor: `${ns}-v2`, gpu_canonical_name: gpu, vendor_gpu_name: "NVIDIA H100 SXM5" })
          const gone = rentalRow({ vendor: `${ns}-v1`, gpu_canonical_name: `${ns}-v100`, vendor_gpu_name: "V100", gpu_model: "V100", valid_to: at(5) })
          // A vendor that writes the slug itself adds no second spelling.
          const slug = rentalRow({ vendor: `${ns}-v3`, gpu_canonical_name: `${ns}-v100`, vendor_gpu_name: `${ns}-v100`, gpu_model: "V100", valid_to: at(5) })
          yield* putVersions(s.transact, rentalPriceKeys, [old, now, gone, slug])
          const spellings = (yield* s.spellings).filter((x) => x.gpu_canonical_name.startsWith(ns))
          assert.deepStrictEqual(spellings, [
            { gpu_canonical_name: gpu, spelling: gpu },
            ...[gpu.toUpperCase(), "NVIDIA H100 SXM5", "Tesla H100 (old)"].sort().map((spelling) => ({ gpu_canonical_name: gpu, spelling })),
            { gpu_canonical_name: `${ns}-v100`, spelling: `${ns}-v100` },
            { gpu_canonical_name: `${ns}-v100`, spelling: "V100" }
          ])
          const gpus = (yield* s.gpus).filter((g) => g.gpu_canonical_name.startsWith(ns))
          assert.deepStrictEqual(gpus, [
            {
              gpu_canonical_name: gpu, gpu_manufacturer: "nvidia",
              spellings: [gpu.toUpperCase(), "NVIDIA H100 SXM5", "Tesla H100 (old)"].sort(),
              currently_listed: true, vendors: [`${ns}-v1`, `${ns}-v2`]
            },
            { gpu_canonical_name: `${ns}-v100`, gpu_manufacturer: "nvidia", spellings: [`${ns}-v100`, "V100"].sort(), currently_listed: false, vendors: [`${ns}-v1`, `${ns}-v3`] }
          ])
        }))
    })
  })
