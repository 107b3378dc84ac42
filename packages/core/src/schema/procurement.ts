import * as Schema from "effect/Schema"

/**
 * The procurement service's bodies: the YAML offer request, offers, procurements, resources and
 * the discovery lists. Ids are opaque random strings with a kind prefix, so a path id of the
 * wrong kind is simply not found.
 */

const randomId = (prefix: string, brand: string, what: string) =>
  Schema.String.pipe(
    Schema.pattern(new RegExp(`^${prefix}_[A-Za-z0-9_-]{22}$`)),
    Schema.brand(brand),
    Schema.annotations({ identifier: brand, description: `${what}: \`${prefix}_\` and 22 random base64url characters` })
  )

/** Id of an offer returned by `POST /get_offers`. */
export const OfferId = randomId("off", "OfferId", "Offer id")
export type OfferId = typeof OfferId.Type

/** Id of a procurement made from an offer. */
export const ProcurementId = randomId("prc", "ProcurementId", "Procurement id")
export type ProcurementId = typeof ProcurementId.Type

/** Id of a provisioned resource (one instance). */
export const ResourceId = randomId("res", "ResourceId", "Resource id")
export type ResourceId = typeof ResourceId.Type

const Slug = Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,99}$/, {
  message: () => "expected a lower-case slug ([a-z0-9._-], at most 100 characters)"
}))

/** Storage attached to every instance of an offer. */
export const StorageRequest = Schema.Struct({
  /** A `storage_type` from `GET /storage-options`. */
  type: Slug,
  size_gb: Schema.Int.pipe(Schema.between(1, 1_000_000))
}).pipe(Schema.annotations({ identifier: "StorageRequest", description: "Storage per instance." }))
export type StorageRequest = typeof StorageRequest.Type

/** Sort fields of offers. */
export const OfferSortBy = Schema.Literal("price_usd_per_gpu_hour", "total_usd", "vendor", "region")
export type OfferSortBy = typeof OfferSortBy.Type

/** Most offers one request returns. */
export const MAX_OFFERS = 50

/** The YAML body of `POST /get_offers`: what the buyer wants. Unknown keys are refused. */
export const OfferRequest = Schema.Struct({
  /** A canonical GPU name (`h100-sxm`) or a search term (`H100`), matched as `gpu_search` is. */
  gpu: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(100)),
  /** GPUs wanted in total; an offer splits them into whole instances of one product. */
  gpu_count: Schema.Int.pipe(Schema.between(1, 4096)),
  /** Normalised cloud regions, any of which will do. */
  regions: Schema.optional(Schema.Array(Slug).pipe(Schema.minItems(1), Schema.maxItems(20))),
  /** A `contract_type` from `GET /contracts`; any when absent. */
  contract_type: Schema.optional(Slug),
  /** How long the capacity is wanted, in hours; must fit the contract's term. Default 1. */
  term_hours: Schema.optional(Schema.Int.pipe(Schema.between(1, 87_600))),
  /** Highest acceptable price per GPU-hour (USD). */
  max_price_usd_per_gpu_hour: Schema.optional(Schema.Number.pipe(Schema.positive(), Schema.finite())),
  storage: Schema.optional(StorageRequest),
  sort_by: Schema.optional(OfferSortBy),
  sort_order: Schema.optional(Schema.Literal("asc", "desc")),
  /** Offers to return, 1 to 50, default 10. */
  limit: Schema.optional(Schema.Int.pipe(Schema.between(1, MAX_OFFERS)))
}).pipe(Schema.annotations({ identifier: "OfferRequest", description: "The YAML body of POST /get_offers." }))
export type OfferRequest = typeof OfferRequest.Type

/** Storage as quoted in an offer. */
export const OfferStorage = Schema.Struct({
  type: Schema.String,
  size_gb: Schema.Int,
  price_usd_per_hour: Schema.Number
}).pipe(Schema.annotations({ identifier: "OfferStorage", description: "Storage per instance and its price for all instances." }))
export type OfferStorage = typeof OfferStorage.Type

/** One offer: a price held for 30 minutes for the buyer who asked. */
export const Offer = Schema.Struct({
  offer_id: OfferId,
  vendor: Schema.String,
  gpu_canonical_name: Schema.String,
  gpu_model: Schema.String,
  gpu_memory_gb: Schema.Number,
  /** GPUs in total: `instance_count × gpus_per_instance`. */
  gpu_count: Schema.Int,
  instance_count: Schema.Int,
  gpus_per_instance: Schema.Int,
  region: Schema.String,
  contract_type: Schema.String,
  contract_term: Schema.NullOr(Schema.String),
  term_hours: Schema.Int,
  price_usd_per_gpu_hour: Schema.Number,
  storage: Schema.NullOr(OfferStorage),
  /** GPUs and storage together, per hour. */
  price_usd_per_hour: Schema.Number,
  /** `price_usd_per_hour × term_hours`. */
  total_usd: Schema.Number,
  created_at: Schema.String,
  /** `created_at` + 30 minutes; from this instant on the offer cannot be procured. */
  expires_at: Schema.String
}).pipe(Schema.annotations({ identifier: "Offer", description: "A quote held for 30 minutes." }))
export type Offer = typeof Offer.Type

/** Body of `POST /get_offers`. */
export const OfferList = Schema.Struct({
  data: Schema.Array(Offer),
  meta: Schema.Struct({ returned: Schema.Int, sort: Schema.Struct({ by: OfferSortBy, order: Schema.Literal("asc", "desc") }) })
}).pipe(Schema.annotations({ identifier: "OfferList", description: "Offers, best first by the sort asked for." }))
export type OfferList = typeof OfferList.Type

/** States of a procurement: `pending → provisioning → fulfilled | failed` (`pending → failed` when refused). */
export const ProcurementStatus = Schema.Literal("pending", "provisioning", "fulfilled", "failed")
export type ProcurementStatus = typeof ProcurementStatus.Type

/** The JSON body of `POST /procurements`. */
export const ProcurementRequest = Schema.Struct({ offer_id: Schema.String }).pipe(
  Schema.annotations({ identifier: "ProcurementRequest", description: "The offer to provision." })
)
export type ProcurementRequest = typeof ProcurementRequest.Type

/** A procurement: provisioning one offer. */
export const Procurement = Schema.Struct({
  procurement_id: ProcurementId,
  offer_id: OfferId,
  status: ProcurementStatus,
  vendor: Schema.String,
  gpu_canonical_name: Schema.String,
  gpu_count: Schema.Int,
  instance_count: Schema.Int,
  region: Schema.String,
  contract_type: Schema.String,
  term_hours: Schema.Int,
  price_usd_per_gpu_hour: Schema.Number,
  total_usd: Schema.Number,
  created_at: Schema.String,
  /** When the status last changed. */
  updated_at: Schema.String,
  /** Why it failed; null unless `failed`. */
  failure_reason: Schema.NullOr(Schema.String),
  /** The resources it created; empty until `fulfilled`. */
  resource_ids: Schema.Array(ResourceId)
}).pipe(Schema.annotations({ identifier: "Procurement", description: "Provisioning of one offer." }))
export type Procurement = typeof Procurement.Type

/** States of a resource: `running → deleting → deleted`. */
export const ResourceStatus = Schema.Literal("running", "deleting", "deleted")
export type ResourceStatus = typeof ResourceStatus.Type

/** One provisioned instance. */
export const Resource = Schema.Struct({
  resource_id: ResourceId,
  procurement_id: ProcurementId,
  status: ResourceStatus,
  vendor: Schema.String,
  gpu_canonical_name: Schema.String,
  gpu_count: Schema.Int,
  region: Schema.String,
  contract_type: Schema.String,
  price_usd_per_gpu_hour: Schema.Number,
  storage: Schema.NullOr(Schema.Struct({ type: Schema.String, size_gb: Schema.Int })),
  created_at: Schema.String,
  updated_at: Schema.String,
  deleted_at: Schema.NullOr(Schema.String)
}).pipe(Schema.annotations({ identifier: "Resource", description: "One provisioned GPU instance." }))
export type Resource = typeof Resource.Type

/** A GPU purchasable now. */
export const SupplyGpu = Schema.Struct({
  gpu_canonical_name: Schema.String,
  gpu_manufacturer: Schema.String,
  gpu_model: Schema.String,
  gpu_memory_gb: Schema.Number,
  /** GPUs per instance on offer. */
  gpus_per_instance: Schema.Array(Schema.Int),
  vendors: Schema.Array(Schema.String),
  regions: Schema.Array(Schema.String),
  contract_types: Schema.Array(Schema.String),
  min_price_usd_per_gpu_hour: Schema.Number
}).pipe(Schema.annotations({ identifier: "SupplyGpu" }))
export type SupplyGpu = typeof SupplyGpu.Type

/** A vendor selling now. */
export const SupplyVendor = Schema.Struct({
  vendor: Schema.String,
  gpus: Schema.Array(Schema.String),
  regions: Schema.Array(Schema.String),
  contract_types: Schema.Array(Schema.String)
}).pipe(Schema.annotations({ identifier: "SupplyVendor" }))
export type SupplyVendor = typeof SupplyVendor.Type

/** A region with capacity now. */
export const SupplyRegion = Schema.Struct({
  region: Schema.String,
  vendors: Schema.Array(Schema.String),
  gpus: Schema.Array(Schema.String)
}).pipe(Schema.annotations({ identifier: "SupplyRegion" }))
export type SupplyRegion = typeof SupplyRegion.Type

/** A contract type and the terms it accepts. */
export const SupplyContract = Schema.Struct({
  contract_type: Schema.String,
  description: Schema.String,
  min_term_hours: Schema.Int,
  max_term_hours: Schema.Int,
  /** Whether the provider may reclaim the capacity early (spot). */
  interruptible: Schema.Boolean,
  vendors: Schema.Array(Schema.String)
}).pipe(Schema.annotations({ identifier: "SupplyContract" }))
export type SupplyContract = typeof SupplyContract.Type

/** Storage that can be attached to instances. */
export const SupplyStorageOption = Schema.Struct({
  storage_type: Schema.String,
  description: Schema.String,
  min_size_gb: Schema.Int,
  max_size_gb: Schema.Int,
  price_usd_per_gb_month: Schema.Number
}).pipe(Schema.annotations({ identifier: "SupplyStorageOption" }))
export type SupplyStorageOption = typeof SupplyStorageOption.Type

/** A discovery body: `{ data: [...] }`, not paged (the lists are small). */
export const DiscoveryList = <A, I, R>(item: Schema.Schema<A, I, R>) => Schema.Struct({ data: Schema.Array(item) })
