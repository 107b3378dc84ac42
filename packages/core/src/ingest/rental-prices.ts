import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { createHash } from "node:crypto"
import type { InvalidRecords } from "../errors.js"
import { type RentalPrice, RentalPriceObservation } from "../schema/rental-price.js"
import { type RentalPriceChanges, RentalPriceStore } from "../storage/contract.js"
import {
  atomically, chunkVersionChanges, decodeTimed, type InForce, type IngestSummary, planVersions, staleObservations, type Timed, type VersionRules, versionsInForce,
  withdrawVersions
} from "./batch.js"

/** Fields that identify one priced thing across price changes (`base_product_key`). */
const IDENTITY = [
  "vendor", "vendor_sku", "vendor_gpu_name", "vendor_region", "region", "gpu_canonical_name", "gpu_count",
  "instance_type", "instance_variant", "os", "contract_type", "contract_term"
] as const

const hash32 = (parts: ReadonlyArray<unknown>): string =>
  createHash("sha256").update(JSON.stringify(parts)).digest("hex").slice(0, 32)

/** `base_product_key`: SHA-256 (first 128 bits, hex) of the identity fields in a fixed order. */
export const baseProductKey = (o: { readonly [K in (typeof IDENTITY)[number]]: unknown }): string =>
  hash32(IDENTITY.map((f) => o[f]))

/** `product_key`: SHA-256 (first 128 bits, hex) of the base key, `valid_from` and the price. */
export const productKey = (base: string, validFrom: string, o: Pick<RentalPrice, "price_usd_per_gpu_hour" | "raw_price" | "raw_price_unit">): string =>
  hash32([base, validFrom, o.price_usd_per_gpu_hour, o.raw_price, o.raw_price_unit])

const samePrice = (a: RentalPrice, b: RentalPriceObservation) =>
  a.price_usd_per_gpu_hour === b.price_usd_per_gpu_hour && a.raw_price === b.raw_price && a.raw_price_unit === b.raw_price_unit

const decodeObservation = Schema.decodeUnknownEither(RentalPriceObservation, { errors: "all", onExcessProperty: "error" })

/** Validates a batch; every bad record is reported with its index. */
export const decodeObservations = (
  input: ReadonlyArray<unknown>
): Either.Either<ReadonlyArray<Timed<RentalPriceObservation>>, InvalidRecords> =>
  decodeTimed(input, decodeObservation, baseProductKey)

const rules: VersionRules<RentalPriceObservation, RentalPrice> = {
  key: (r) => r.product_key,
  base: (r) => r.base_product_key,
  samePrice,
  open: (o, at, base): RentalPrice => ({
    vendor: o.vendor, vendor_gpu_name: o.vendor_gpu_name, vendor_sku: o.vendor_sku, vendor_region: o.vendor_region,
    region: o.region, gpu_canonical_name: o.gpu_canonical_name, gpu_manufacturer: o.gpu_manufacturer,
    gpu_model: o.gpu_model, gpu_count: o.gpu_count, gpu_memory_gb: o.gpu_memory_gb, vcpu: o.vcpu, ram_gb: o.ram_gb,
    os: o.os, form_factor: o.form_factor, interconnect: o.interconnect, instance_type: o.instance_type,
    instance_variant: o.instance_variant, contract_type: o.contract_type, contract_term: o.contract_term,
    contract_details: o.contract_details, availability: o.availability,
    price_usd_per_gpu_hour: o.price_usd_per_gpu_hour, raw_price: o.raw_price, raw_price_unit: o.raw_price_unit,
    valid_from: at, valid_to: null, extracted_at: at, base_product_key: base,
    product_key: productKey(base, at, o)
  })
}

/**
 * Turns validated observations into a change against the current rows. Observations of one
 * product apply in time order; an unchanged price touches nothing; a changed one closes the
 * current row at the observation's time and opens a new one. An observation not after the
 * current row is unchanged when the version `inForce` at its instant has its price (it is
 * already stored), else it cannot be placed and refuses the batch.
 */
export const planChanges = (
  decoded: ReadonlyArray<Timed<RentalPriceObservation>>,
  current: ReadonlyArray<RentalPrice>,
  inForce: InForce<RentalPrice> = () => undefined
): Either.Either<{ readonly changes: RentalPriceChanges; readonly summary: IngestSummary }, InvalidRecords> =>
  Either.map(planVersions(decoded, current, rules, inForce), ({ close, open, summary }) => ({
    changes: { close: close.map(({ key, valid_to }) => ({ product_key: key, valid_to })), open },
    summary
  }))

/** The write path of GPU rental prices. */
export class RentalPriceIngest extends Effect.Service<RentalPriceIngest>()("Market/RentalPriceIngest", {
  effect: Effect.gen(function* () {
    const store = yield* RentalPriceStore

    /**
     * Ingests vendor price observations. Invalid records, or one that cannot be placed, refuse
     * the whole batch. The change is written in chunks of at most `MAX_ROWS_PER_WRITE` rows, each
     * atomic and holding every row of its products; a failure part-way leaves earlier chunks
     * stored, and sending the batch again completes it. A concurrent writer that moves a
     * product's current row makes the batch re-plan.
     */
    const ingest = Effect.fn("RentalPriceIngest.ingest")(function* (observations: ReadonlyArray<unknown>) {
      const decoded = yield* decodeObservations(observations)
      const bases = [...new Set(decoded.map((d) => d.base))]
      return yield* Effect.gen(function* () {
        const current = yield* store.current(bases)
        const inForce = yield* versionsInForce(staleObservations(decoded, current, rules), "base_product_key", store.page)
        const { changes, summary } = yield* planChanges(decoded, current, inForce)
        const baseOf = new Map(current.map((r) => [r.product_key, r.base_product_key]))
        const chunks = chunkVersionChanges(changes.close, changes.open, (c) => baseOf.get(c.product_key)!, (r) => r.base_product_key)
        for (const chunk of chunks) yield* store.apply(chunk)
        return summary
      }).pipe(atomically)
    })

    /** Marks products as no longer listed from `at`: their current rows close. Unknown keys are ignored. */
    const withdraw = Effect.fn("RentalPriceIngest.withdraw")((baseProductKeys: ReadonlyArray<string>, at: string) =>
      withdrawVersions(baseProductKeys, at, store.current, (rows, valid_to) =>
        store.apply({ close: rows.map((r) => ({ product_key: r.product_key, valid_to })), open: [] })))

    return { ingest, withdraw } as const
  })
}) {}
