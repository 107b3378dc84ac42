import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { createHash } from "node:crypto"
import type { InvalidRecords } from "../errors.js"
import { type RentalPrice, RentalPriceObservation } from "../schema/rental-price.js"
import { RentalPriceStore } from "../storage/contract.js"
import type { MarkedWrite } from "../storage/marks.js"
import { rentalPriceKeys } from "../storage/tables.js"
import { decodeTimed, markReader, type Timed } from "./batch.js"
import { recordDecoder } from "./record-decoder.js"
import { type VersionRules, withdrawVersions, writeVersions } from "./versions.js"

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

const decodeObservation = recordDecoder(RentalPriceObservation)

/** Validates a batch; every bad record is reported with its index. */
export const decodeObservations = (
  input: ReadonlyArray<unknown>
): Either.Either<ReadonlyArray<Timed<RentalPriceObservation>>, InvalidRecords> =>
  decodeTimed(input, decodeObservation, baseProductKey)

const rules: VersionRules<RentalPriceObservation, RentalPrice> = {
  ...rentalPriceKeys,
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

/** The write path of GPU rental prices. */
export class RentalPriceIngest extends Effect.Service<RentalPriceIngest>()("Market/RentalPriceIngest", {
  effect: Effect.gen(function* () {
    const store = yield* RentalPriceStore

    /**
     * Ingests vendor price observations. Invalid records, or one that cannot be placed, refuse
     * the whole batch. The batch is written in chunks of whole products (`writeVersions`), each
     * planned and written in one transaction; a failure part-way leaves earlier chunks stored,
     * and sending the batch again completes it. `options.mark` is written with the last chunk.
     */
    const ingest = Effect.fn("RentalPriceIngest.ingest")(function* (observations: ReadonlyArray<unknown>, options: MarkedWrite = {}) {
      return (yield* writeVersions(store.transact, yield* decodeObservations(observations), rules, { mark: options.mark, rowsPerWrite: store.rowsPerWrite })).summary
    })

    /**
     * Marks products as no longer listed from `at`: their current rows close. Unknown keys are
     * ignored. `options.mark` is written with the last rows closed.
     */
    const withdraw = Effect.fn("RentalPriceIngest.withdraw")((baseProductKeys: ReadonlyArray<string>, at: string, options: MarkedWrite = {}) =>
      withdrawVersions(store.transact, baseProductKeys, at, rules, options.mark))

    /** A progress mark written with a write of this type (`options.mark`). */
    return { ingest, withdraw, mark: markReader(store.mark) } as const
  })
}) {}
