import * as Schema from "effect/Schema"
import { parseDate } from "../query/time.js"
import { MetadataBody } from "./envelope.js"
import { GpuCanonicalName, VendorSlug } from "./rental-price.js"
import { withMeanings } from "./fields.js"
import { StoredInstant } from "./versioned.js"

/**
 * GPU price indexes: stored definitions (what feeds an index and how it is published), the
 * published values, the fleet weights behind the GPU reference price, and the bodies of the
 * index metadata and the two legacy v1 endpoints.
 */

const Text = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))
const LongText = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(2000))
const PositiveNumber = Schema.Number.pipe(Schema.positive(), Schema.finite())

/** An index id, e.g. `gpu-h100-sxm-na-daily`: what the data endpoints take as `id`. */
export const IndexId = Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,99}$/), Schema.brand("IndexId"))
export type IndexId = typeof IndexId.Type

/** `daily` (one value per UTC day) or `intraday` (one value per 30-minute interval). */
export const IndexRowType = Schema.Literal("daily", "intraday")
export type IndexRowType = typeof IndexRowType.Type

/** `computed` by this service (with a p5/p95 envelope) or `administered` by a third party (none). */
export const IndexSource = Schema.Literal("computed", "administered")
export type IndexSource = typeof IndexSource.Type

/** A calendar date `YYYY-MM-DD` that exists. */
export const IndexDate = Schema.String.pipe(
  Schema.pattern(/^\d{4}-\d{2}-\d{2}$/),
  Schema.filter((s) => parseDate(s) !== undefined, { message: () => "expected an existing YYYY-MM-DD date" })
)

/** The ISO 8601 duration of each row type's interval. */
export const INTERVAL_OF: { readonly [T in IndexRowType]: "P1D" | "PT30M" } = { daily: "P1D", intraday: "PT30M" }

/**
 * Rental rows that feed a computed index: a row is eligible when its GPU, contract type, region
 * (any when `regions` is null) and vendor (any when `vendors` is null) are listed.
 */
export const RentalInputs = Schema.Struct({
  kind: Schema.Literal("rental"),
  /** First UTC day computed. */
  starts_at: IndexDate,
  gpus: Schema.Array(GpuCanonicalName).pipe(Schema.minItems(1), Schema.maxItems(200)),
  contract_types: Schema.Array(Text).pipe(Schema.minItems(1), Schema.maxItems(200)),
  regions: Schema.NullOr(Schema.Array(Text).pipe(Schema.minItems(1), Schema.maxItems(200))),
  vendors: Schema.NullOr(Schema.Array(VendorSlug).pipe(Schema.minItems(1), Schema.maxItems(200)))
})

/**
 * A GPU reference price: the fleet-weighted mean of per-GPU indices (computed rental indices of
 * one GPU each, of the same row type), weighted by the fleet weight of each index's GPU.
 */
export const ReferenceInputs = Schema.Struct({
  kind: Schema.Literal("reference"),
  /** First UTC day computed. */
  starts_at: IndexDate,
  components: Schema.Array(IndexId).pipe(Schema.minItems(1), Schema.maxItems(200))
})

/** A third-party index: its values are published through the write path, never computed. */
export const AdministeredInputs = Schema.Struct({
  kind: Schema.Literal("administered"),
  administrator: Text
})

/** What feeds an index: rental rows, other indices (the reference price), or an administrator. */
export const IndexInputs = Schema.Union(RentalInputs, ReferenceInputs, AdministeredInputs)
export type IndexInputs = typeof IndexInputs.Type

/**
 * An index definition: data, not code. The first fifteen fields are the metadata entry the
 * spec lists; `gpu_model` names the one GPU model the index covers (null for several), for the
 * legacy records; `inputs` says what feeds it. Unknown fields are refused.
 */
export const IndexDefinition = Schema.Struct({
  id: IndexId,
  index_type: Text,
  row_type: IndexRowType,
  asset: Text,
  tenor: Text,
  publication: Text,
  interval: Schema.Literal("P1D", "PT30M"),
  title: Text,
  description: LongText,
  gpu_family: Text,
  gpu_group: Text,
  region_group: Text,
  contract_type: Text,
  vendor_category: Text,
  source: IndexSource,
  gpu_model: Schema.NullOr(Text),
  inputs: IndexInputs
}).pipe(
  Schema.filter((d) => {
    if (d.interval !== INTERVAL_OF[d.row_type]) return `interval of a ${d.row_type} index is ${INTERVAL_OF[d.row_type]}`
    if ((d.source === "administered") !== (d.inputs.kind === "administered")) {
      return "an administered index has administered inputs, and a computed one rental or reference inputs"
    }
    return true
  })
)
export type IndexDefinition = typeof IndexDefinition.Type
export type IndexDefinitionInput = typeof IndexDefinition.Encoded

/** One entry of `data.indices` in the index metadata: the spec's fifteen fields, in its order. */
export const IndexMetadataEntry = Schema.Struct({
  id: Schema.String,
  index_type: Schema.String,
  row_type: IndexRowType,
  asset: Schema.String,
  tenor: Schema.String,
  publication: Schema.String,
  interval: Schema.Literal("P1D", "PT30M"),
  title: Schema.String,
  description: Schema.String,
  gpu_family: Schema.String,
  gpu_group: Schema.String,
  region_group: Schema.String,
  contract_type: Schema.String,
  vendor_category: Schema.String,
  source: IndexSource
})
export type IndexMetadataEntry = typeof IndexMetadataEntry.Type

/** The unit of every index value. */
export const INDEX_UNITS = "usd_per_gpu_per_hr"

/** Body of `GET /v2/gpu/rental/indexes/metadata`. */
export const IndexMetadata = MetadataBody("gpu_rental_indexes", {
  index_units: Schema.Literal(INDEX_UNITS),
  /** Only the indices the token holds, ordered by id; empty when it holds none. */
  indices: Schema.Array(IndexMetadataEntry)
})
export type IndexMetadata = typeof IndexMetadata.Type

const DailyTimestamp = /^\d{4}-\d{2}-\d{2}$/
const IntradayTimestamp = /^\d{4}-\d{2}-\d{2}T\d{2}:(00|30):00\.000000Z$/

/**
 * One published index value, fields in the spec's order. `timestamp` is the UTC date of a daily
 * value and the instant its 30-minute interval starts for an intraday one (27-character form).
 * `p5`/`p95` are null for administered indices.
 */
export const IndexValueRow = Schema.Struct(withMeanings({
  id: IndexId,
  type: IndexRowType,
  timestamp: Schema.String,
  value: PositiveNumber,
  p5: Schema.NullOr(PositiveNumber),
  p95: Schema.NullOr(PositiveNumber)
}, {
  id: "Index id.",
  type: "`daily` or `intraday`.",
  timestamp: "Daily: the calendar date (`YYYY-MM-DD`). Intraday: the UTC instant the 30-minute interval starts.",
  value: "Index value, USD per GPU per hour.",
  p5: "Lower bound of the envelope bracketing `value`; null where no envelope is published.",
  p95: "Upper bound of the envelope bracketing `value`; null where no envelope is published."
})).pipe(
  Schema.filter((r) =>
    (r.type === "daily" ? DailyTimestamp : IntradayTimestamp).test(r.timestamp) ||
    `timestamp of a ${r.type} value is ${r.type === "daily" ? "YYYY-MM-DD" : "the 27-character instant an interval starts"}`
  )
)

/** An index value as plain data (what storage returns and what is serialised). */
export type IndexValue = typeof IndexValueRow.Encoded

/** Field names of the index row, in the spec's order. */
export const indexValueFields = ["id", "type", "timestamp", "value", "p5", "p95"] as const

/**
 * The fleet weight of one GPU over `[valid_from, valid_to)` (`valid_to` null: open-ended). The
 * reference price weighs each GPU's index by the weight in force when an interval starts.
 */
export const FleetWeight = Schema.Struct({
  gpu_canonical_name: GpuCanonicalName,
  weight: PositiveNumber,
  valid_from: StoredInstant,
  valid_to: Schema.NullOr(StoredInstant)
}).pipe(Schema.filter((w) => w.valid_to === null || w.valid_to > w.valid_from || "valid_to must be after valid_from"))
export type FleetWeight = typeof FleetWeight.Encoded

/**
 * One value of an administered index as its administrator publishes it: a daily value names its
 * date, an intraday one the instant its interval starts (any ISO 8601 form, on a :00 or :30
 * boundary). There is no envelope.
 */
export const AdministeredValue = Schema.Struct({
  id: IndexId,
  timestamp: Schema.String,
  value: PositiveNumber
})
export type AdministeredValueInput = typeof AdministeredValue.Encoded

/** A record of `GET /v1/custom-index/current`. */
export const LegacyCurrentIndex = Schema.Struct({
  blended_value: Schema.Number,
  contract_type: Schema.String,
  gpu_family: Schema.String,
  gpu_model: Schema.String,
  index_id: Schema.String,
  index_name: Schema.String,
  index_units: Schema.String,
  index_value: Schema.Number,
  p5: Schema.Number,
  p95: Schema.Number,
  region_group: Schema.String,
  timestamp: Schema.String,
  vendor_category: Schema.String
})
export type LegacyCurrentIndex = typeof LegacyCurrentIndex.Type

/** Body of `GET /v1/custom-index/current`. */
export const LegacyCurrentIndexBody = Schema.Struct({
  data: Schema.Array(LegacyCurrentIndex),
  filters: Schema.Struct({
    contract_type: Schema.String,
    index_id: Schema.String,
    region_group: Schema.String,
    vendor_category: Schema.String
  }),
  total_count: Schema.Int
})
export type LegacyCurrentIndexBody = typeof LegacyCurrentIndexBody.Type

/** A record of `GET /v1/info-index/available`. */
export const LegacyAvailableIndex = Schema.Struct({
  first_date: Schema.String,
  gpu_family: Schema.String,
  gpu_model: Schema.NullOr(Schema.String),
  index_name: Schema.String,
  index_units: Schema.String,
  last_date: Schema.String,
  total_days: Schema.Int
})
export type LegacyAvailableIndex = typeof LegacyAvailableIndex.Type

/** Body of `GET /v1/info-index/available`. */
export const LegacyAvailableIndexBody = Schema.Struct({
  data: Schema.Array(LegacyAvailableIndex),
  total: Schema.Int
})
export type LegacyAvailableIndexBody = typeof LegacyAvailableIndexBody.Type
