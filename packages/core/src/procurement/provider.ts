import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { StorageError } from "../storage/contract.js"
import { RentalPriceStore } from "../storage/contract.js"
import type { Position, Predicate } from "../storage/plan.js"
import type { RentalPrice } from "../schema/rental-price.js"
import type { Offer, OfferStorage, SupplyContract, SupplyStorageOption } from "../schema/procurement.js"
import { MICROS_PER_MS } from "../query/time.js"

/**
 * The supply side: who actually sells the capacity. The core asks a `SupplyProvider` for quotes,
 * hands it orders and polls its operations; the simulated provider sells the market's current
 * rental products and runs on Effect's `Clock`, so tests drive it with `TestClock`.
 */

/** The provider could not answer (network, outage); the caller may retry. */
export class ProviderError extends Schema.TaggedError<ProviderError>()("ProviderError", {
  detail: Schema.String
}) {}

/** A product purchasable now. */
export interface SupplyProduct {
  readonly vendor: string
  readonly gpu_canonical_name: string
  readonly gpu_manufacturer: string
  readonly gpu_model: string
  readonly gpu_memory_gb: number
  readonly gpus_per_instance: number
  readonly region: string
  readonly contract_type: string
  readonly contract_term: string | null
  readonly price_usd_per_gpu_hour: number
}

/** A contract type the provider sells, with the terms it accepts (`vendors` comes from products). */
export type ContractTerms = Omit<SupplyContract, "vendors">

/** The provider's terms: contract types and storage options. */
export interface SupplyCatalog {
  readonly contracts: ReadonlyArray<ContractTerms>
  readonly storage: ReadonlyArray<SupplyStorageOption>
}

/** What a buyer asked for, with its GPU resolved to catalog names and its term checked. */
export interface QuoteRequest {
  readonly gpus: ReadonlyArray<string>
  readonly gpu_count: number
  readonly regions: ReadonlyArray<string> | undefined
  readonly contract_type: string | undefined
  readonly term_hours: number
  readonly max_price_usd_per_gpu_hour: number | undefined
  readonly storage: { readonly type: string; readonly size_gb: number } | undefined
}

/** One quote: a product in whole instances covering the GPUs asked for. */
export interface Quote extends Omit<SupplyProduct, "gpu_manufacturer"> {
  /** Opaque to the core; handed back in the order. */
  readonly quote_ref: string
  readonly instance_count: number
  readonly storage: OfferStorage | null
}

/** An order to provision an offer, made once per procurement. */
export interface ProvisionOrder {
  readonly procurement_id: string
  readonly offer: Offer
  readonly quote_ref: string
  /** When the procurement was made (epoch µs). A provider treats a repeated order as the same one. */
  readonly requested_at: number
}

/** Where an operation (provisioning or termination) stands. */
export type OperationStatus =
  | { readonly _tag: "running" }
  | { readonly _tag: "succeeded"; readonly at: number; readonly instances: ReadonlyArray<string> }
  | { readonly _tag: "failed"; readonly at: number; readonly reason: string }

/** A source of GPU capacity. Operations are opaque strings the core stores and polls. */
export class SupplyProvider extends Context.Tag("Procurement/SupplyProvider")<
  SupplyProvider,
  {
    /** Every product purchasable now. */
    readonly products: Effect.Effect<ReadonlyArray<SupplyProduct>, ProviderError>
    /** Contract terms and storage options (cheap: no product is read). */
    readonly catalog: Effect.Effect<SupplyCatalog, ProviderError>
    /** Quotes for a request, in no particular order. */
    readonly quote: (request: QuoteRequest) => Effect.Effect<ReadonlyArray<Quote>, ProviderError>
    /** Starts provisioning; idempotent per `procurement_id`. Returns the operation to poll. */
    readonly provision: (order: ProvisionOrder) => Effect.Effect<string, ProviderError>
    /** Where an operation stands; `succeeded` of a provisioning lists one ref per instance. */
    readonly status: (operation: string) => Effect.Effect<OperationStatus, ProviderError>
    /** Starts terminating an instance; idempotent per `instance_ref` and `requested_at`. */
    readonly terminate: (instance: { readonly instance_ref: string; readonly requested_at: number }) => Effect.Effect<string, ProviderError>
  }
>() {}

/** Options of the simulated provider. */
export interface SimulatedProviderOptions {
  /** How long provisioning takes, in ms of the `Clock`. Default 2000. */
  readonly provisionMillis?: number
  /** How long termination takes. Default 0 (done when asked). */
  readonly terminateMillis?: number
  /** Makes an order fail when provisioning ends; a string is the failure reason. */
  readonly failWhen?: (order: ProvisionOrder) => boolean | string
}

/** Contract terms of the simulated provider. */
export const SIMULATED_CONTRACTS: ReadonlyArray<ContractTerms> = [
  { contract_type: "ondemand", description: "Pay by the hour, stop any time.", min_term_hours: 1, max_term_hours: 8_760, interruptible: false },
  { contract_type: "spot", description: "Spare capacity at a discount; may be reclaimed.", min_term_hours: 1, max_term_hours: 720, interruptible: true },
  { contract_type: "reserved", description: "Committed capacity, one to three years.", min_term_hours: 8_760, max_term_hours: 26_280, interruptible: false }
]

/** Storage options of the simulated provider. */
export const SIMULATED_STORAGE: ReadonlyArray<SupplyStorageOption> = [
  { storage_type: "nvme", description: "Local NVMe scratch, lost when the instance is deleted.", min_size_gb: 100, max_size_gb: 30_000, price_usd_per_gb_month: 0.08 },
  { storage_type: "block", description: "Network block storage.", min_size_gb: 10, max_size_gb: 64_000, price_usd_per_gb_month: 0.1 },
  { storage_type: "object", description: "Object storage bucket.", min_size_gb: 1, max_size_gb: 1_000_000, price_usd_per_gb_month: 0.023 }
]

/** Hours in a billing month (365 × 24 / 12). */
const HOURS_PER_MONTH = 730

/** Rounds money to 1e-6 USD, so figures carry no binary-float noise. */
export const roundUsd = (n: number): number => Math.round(n * 1e6) / 1e6

/** The price per hour of `size_gb` of storage on every one of `instances`. */
export const storagePrice = (option: SupplyStorageOption, size_gb: number, instances: number): number =>
  roundUsd((option.price_usd_per_gb_month * size_gb * instances) / HOURS_PER_MONTH)

const Operation = Schema.parseJson(Schema.Struct({
  kind: Schema.Literal("provision", "terminate"),
  id: Schema.String,
  start: Schema.Number,
  done: Schema.Number,
  instances: Schema.Int,
  fail: Schema.NullOr(Schema.String)
}))
const encodeOperation = Schema.encodeSync(Operation)
const decodeOperation = Schema.decodeUnknownEither(Operation)

/** Most current rental rows one quote reads, cheapest first. */
const QUOTE_ROWS = 1000

const nowMicros = Effect.map(Clock.currentTimeMillis, (ms) => ms * MICROS_PER_MS)

const providerError = (e: StorageError) => new ProviderError({ detail: `the market is unavailable (${e.operation})` })

/**
 * The simulated provider: sells every current rental row of the market as a product, at its
 * price. Operations carry their own timeline (start, end, outcome), so any process sharing the
 * store answers `status` alike, and nothing runs in the background.
 */
export const makeSimulated = (options: SimulatedProviderOptions = {}) =>
  Effect.gen(function* () {
    const rental = yield* RentalPriceStore
    const provisionMicros = (options.provisionMillis ?? 2000) * MICROS_PER_MS
    const terminateMicros = (options.terminateMillis ?? 0) * MICROS_PER_MS

    /** Current rows matching `predicates`, cheapest first, at most `QUOTE_ROWS`. */
    const currentRows = (predicates: ReadonlyArray<Predicate>) =>
      Effect.mapError(
        rental.page({ scope: { _tag: "latest" }, predicates, sort: { by: "price_usd_per_gpu_hour", order: "asc" }, after: undefined, limit: QUOTE_ROWS }),
        providerError
      )

    /** Every current row, walked a page at a time (keyset, so each page costs the same). */
    const everyCurrentRow = Effect.gen(function* () {
      const out: Array<RentalPrice> = []
      let after: Position | undefined
      for (;;) {
        const rows = yield* Effect.mapError(rental.page({
          scope: { _tag: "latest" }, predicates: [], sort: { by: "price_usd_per_gpu_hour", order: "asc" }, after, limit: QUOTE_ROWS
        }), providerError)
        out.push(...rows)
        if (rows.length < QUOTE_ROWS) return out
        const last = rows[rows.length - 1]!
        after = { value: last.price_usd_per_gpu_hour, tie: last.product_key }
      }
    })

    const provider: SupplyProvider["Type"] = {
      products: Effect.map(everyCurrentRow, (rows) => rows.map((r) => ({
        vendor: r.vendor, gpu_canonical_name: r.gpu_canonical_name, gpu_manufacturer: r.gpu_manufacturer, gpu_model: r.gpu_model,
        gpu_memory_gb: r.gpu_memory_gb, gpus_per_instance: r.gpu_count, region: r.region, contract_type: r.contract_type,
        contract_term: r.contract_term, price_usd_per_gpu_hour: r.price_usd_per_gpu_hour
      }))),
      catalog: Effect.succeed({ contracts: SIMULATED_CONTRACTS, storage: SIMULATED_STORAGE }),
      quote: (request) => {
        const predicates: Array<Predicate> = [
          { op: "in", field: "gpu_canonical_name", values: request.gpus },
          { op: "lte", field: "gpu_count", value: request.gpu_count }
        ]
        if (request.regions !== undefined) predicates.push({ op: "in", field: "region", values: request.regions })
        if (request.contract_type !== undefined) predicates.push({ op: "in", field: "contract_type", values: [request.contract_type] })
        if (request.max_price_usd_per_gpu_hour !== undefined) {
          predicates.push({ op: "lte", field: "price_usd_per_gpu_hour", value: request.max_price_usd_per_gpu_hour })
        }
        const storageOption = request.storage === undefined
          ? undefined
          : SIMULATED_STORAGE.find((s) => s.storage_type === request.storage!.type)
        return Effect.map(currentRows(predicates), (rows) => rows.flatMap((r): Array<Quote> => {
          const terms = SIMULATED_CONTRACTS.find((c) => c.contract_type === r.contract_type)
          if (terms === undefined || request.term_hours < terms.min_term_hours || request.term_hours > terms.max_term_hours) return []
          if (request.gpu_count % r.gpu_count !== 0) return []
          const instance_count = request.gpu_count / r.gpu_count
          return [{
            quote_ref: r.product_key, vendor: r.vendor, gpu_canonical_name: r.gpu_canonical_name, gpu_model: r.gpu_model,
            gpu_memory_gb: r.gpu_memory_gb, gpus_per_instance: r.gpu_count, instance_count, region: r.region,
            contract_type: r.contract_type, contract_term: r.contract_term, price_usd_per_gpu_hour: r.price_usd_per_gpu_hour,
            storage: request.storage === undefined || storageOption === undefined
              ? null
              : { ...request.storage, price_usd_per_hour: storagePrice(storageOption, request.storage.size_gb, instance_count) }
          }]
        }))
      },
      provision: (order) => Effect.sync(() => {
        const fail = options.failWhen?.(order) ?? false
        return encodeOperation({
          kind: "provision", id: order.procurement_id, start: order.requested_at, done: order.requested_at + provisionMicros,
          instances: order.offer.instance_count,
          fail: fail === false ? null : fail === true ? "the provider could not provision the order" : fail
        })
      }),
      terminate: ({ instance_ref, requested_at }) => Effect.succeed(encodeOperation({
        kind: "terminate", id: instance_ref, start: requested_at, done: requested_at + terminateMicros, instances: 0, fail: null
      })),
      status: (operation) => Effect.flatMap(nowMicros, (now): Effect.Effect<OperationStatus, ProviderError> => {
        const op = decodeOperation(operation)
        if (Either.isLeft(op)) return Effect.fail(new ProviderError({ detail: "unknown operation" }))
        const { kind, id, done, instances, fail } = op.right
        if (now < done) return Effect.succeed({ _tag: "running" })
        if (fail !== null) return Effect.succeed({ _tag: "failed", at: done, reason: fail })
        return Effect.succeed({
          _tag: "succeeded",
          at: done,
          instances: kind === "provision" ? Array.from({ length: instances }, (_, i) => `sim/${id}/${i + 1}`) : []
        })
      })
    }
    return provider
  })

/** The simulated provider over the market's rental store. */
export const simulatedLayer = (options: SimulatedProviderOptions = {}): Layer.Layer<SupplyProvider, never, RentalPriceStore> =>
  Layer.effect(SupplyProvider, makeSimulated(options))
