import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type { InvalidRecords, StorageUnavailable } from "../errors.js"
import { parsePriceUnit } from "../schema/price-unit.js"
import { type RentalPrice, RentalPriceObservation } from "../schema/rental-price.js"
import { RentalPriceStore } from "../storage/contract.js"
import type { MarkedWrite } from "../storage/marks.js"
import { ReferenceDataStore } from "../storage/reference.js"
import { rentalPriceKeys } from "../storage/tables.js"
import type * as Scope from "effect/Scope"
import { unavailable } from "../market/storage.js"
import { countedIngest, decodeRecords, instantOf, markReader, refuseIf, type Timed } from "./batch.js"
import { type Bound, IngestBounds } from "./bounds.js"
import { recordDecoder } from "./record-decoder.js"
import { type ReferenceReader, referenceReader } from "./reference-data.js"
import { normaliseRental, type RentalObservation, resolvedGpuSlug } from "./rental-normalise.js"
import { conflictingPrices, type VersionRules, withdrawVersions, writeVersions } from "./versions.js"
import { hash32 } from "./key-hash.js"

/** Fields that identify one priced thing across price changes (`base_product_key`). */
const IDENTITY = [
  "vendor", "vendor_sku", "vendor_gpu_name", "vendor_region", "region", "gpu_canonical_name", "gpu_count",
  "instance_type", "instance_variant", "os", "contract_type", "contract_term"
] as const

/**
 * `base_product_key`: SHA-256 (first 128 bits, hex) of the identity fields in a fixed order. A
 * field left out counts as null, as ingest reads it; `gpu_canonical_name` is the row's slug (as
 * resolved from `vendor_gpu_name` when the observation did not give one).
 */
export const baseProductKey = (o: { readonly [K in (typeof IDENTITY)[number]]?: unknown }): string =>
  hash32(IDENTITY.map((f) => o[f] ?? null))

/** `product_key`: SHA-256 (first 128 bits, hex) of the base key, `valid_from` and the price. */
export const productKey = (base: string, validFrom: string, o: Pick<RentalPrice, "price_usd_per_gpu_hour" | "raw_price" | "raw_price_unit">): string =>
  hash32([base, validFrom, o.price_usd_per_gpu_hour, o.raw_price, o.raw_price_unit])

const samePrice = (a: RentalPrice, b: RentalObservation) =>
  a.price_usd_per_gpu_hour === b.price_usd_per_gpu_hour && a.raw_price === b.raw_price && a.raw_price_unit === b.raw_price_unit

const decodeObservation = recordDecoder(RentalPriceObservation)

/**
 * Validates a batch, reads the reference data it needs (the GPU catalog; the FX rates of its
 * currencies over its dates) and completes each observation (`normaliseRental`). Every bad
 * record is reported with its index and each of its problems.
 */
const decodeObservations = (
  input: ReadonlyArray<unknown>,
  reference: ReferenceReader,
  bound: Bound
): Effect.Effect<ReadonlyArray<Timed<RentalObservation>>, InvalidRecords | StorageUnavailable> =>
  Effect.gen(function* () {
    const valid: Array<{ readonly index: number; readonly o: RentalPriceObservation; readonly at: string }> = []
    const issues = decodeRecords(input, decodeObservation, (o, index, issues) => {
      const at = instantOf(o.extracted_at, index, issues)
      if (at !== undefined) valid.push({ index, o, at })
    })
    const catalog = yield* reference.catalog
    const usdPerUnit = yield* reference.usdPerUnit(valid.map(({ o, at }) => ({ currency: parsePriceUnit(o.raw_price_unit).currency, date: at.slice(0, 10) })))
    const out: Array<Timed<RentalObservation>> = []
    for (const { index, o, at } of valid) {
      const complete = normaliseRental(o, at.slice(0, 10), { catalog, usdPerUnit, bound })
      if (Either.isLeft(complete)) for (const message of complete.left) issues.push({ index, message })
      else out.push({ index, observation: complete.right, at, base: baseProductKey(complete.right) })
    }
    yield* refuseIf([...issues, ...conflictingPrices(out, rules)])
    return out
  })

const rules: VersionRules<RentalObservation, RentalPrice> = {
  ...rentalPriceKeys,
  samePrice,
  price: (r) => `${r.price_usd_per_gpu_hour} USD per GPU-hour (raw_price ${r.raw_price} ${r.raw_price_unit})`,
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

/** Observations one import batch writes at least (an import's batch where no bulk load is offered): enough to amortise a commit, small enough to stream. */
export const MIN_IMPORT_BATCH = 500

/** A bulk load as the write path offers it (`RentalPriceIngest.bulkLoad`). */
export interface BulkLoad {
  /** Observations to pass to one `ingest`: one transaction's worth. */
  readonly batch: number
  /** Ends the load, once its last batch is written. */
  readonly end: Effect.Effect<void, StorageUnavailable>
}

/** The write path of GPU rental prices. */
export class RentalPriceIngest extends Effect.Service<RentalPriceIngest>()("Market/RentalPriceIngest", {
  effect: Effect.gen(function* () {
    const store = yield* RentalPriceStore
    const reference = referenceReader(yield* ReferenceDataStore)
    const bounds = yield* IngestBounds

    /**
     * Ingests vendor price observations, normalised with the reference data as it stands when
     * the batch starts (the GPU catalog, the FX rates of its dates) and checked against the
     * rental bounds (`IngestBounds`). Invalid records, or one that cannot be placed, refuse
     * the whole batch, every problem named. The batch is written in chunks of whole products
     * (`writeVersions`), each planned and written in one transaction; a failure part-way leaves
     * earlier chunks stored, and sending the batch again completes it. `options.mark` is written
     * with the last chunk.
     */
    const ingest = Effect.fn("RentalPriceIngest.ingest")(function* (observations: ReadonlyArray<unknown>, options: MarkedWrite = {}) {
      return (yield* writeVersions(store.transact, yield* decodeObservations(observations, reference, bounds.rental), rules, { mark: options.mark, rowsPerWrite: store.rowsPerWrite })).summary
    }, countedIngest("rental"))

    /**
     * Marks products as no longer listed from `at`: their current rows close. Unknown keys are
     * ignored. `options.mark` is written with the last rows closed.
     */
    const withdraw = Effect.fn("RentalPriceIngest.withdraw")((baseProductKeys: ReadonlyArray<string>, at: string, options: MarkedWrite = {}) =>
      withdrawVersions(store.transact, baseProductKeys, at, rules, options.mark))

    /**
     * The base product keys of the observations that validate and name a GPU the catalog
     * resolves, whatever their prices: the products a snapshot of them lists.
     */
    const baseKeys = Effect.fn("RentalPriceIngest.baseKeys")(function* (observations: ReadonlyArray<unknown>) {
      const catalog = yield* reference.catalog
      const bases = new Set<string>()
      for (const input of observations) {
        const decoded = decodeObservation(input)
        if (Either.isLeft(decoded)) continue
        const slug = resolvedGpuSlug(decoded.right, catalog)
        if (slug !== undefined) bases.add(baseProductKey({ ...decoded.right, gpu_canonical_name: slug }))
      }
      return bases
    })

    /**
     * For the life of the scope, a load of about `rows` observations (an import): the store
     * prepares for it (`RentalPriceStore.bulkLoad`). `batch` is how many observations of new or
     * changed products one `ingest` writes in one transaction; `end` ends the load once its last
     * batch is written (SQLite builds its serving indexes again then).
     */
    const bulkLoad = (rows: number): Effect.Effect<BulkLoad, StorageUnavailable, Scope.Scope> =>
      Effect.mapError(
        Effect.map(store.bulkLoad === undefined ? Effect.succeed(Effect.void) : store.bulkLoad(rows), (end): BulkLoad => ({
          // Each product a batch names may close a stored row and open one.
          batch: Math.max(MIN_IMPORT_BATCH, Math.floor((store.rowsPerWrite ?? 0) / 2)),
          end: Effect.mapError(end, unavailable)
        })),
        unavailable
      )

    /** A progress mark written with a write of this type (`options.mark`). */
    return { ingest, withdraw, baseKeys, bulkLoad, mark: markReader(store.mark) } as const
  })
}) {}
