import * as Schema from "effect/Schema"
import { withMeanings } from "./fields.js"

/**
 * The rental market summarised: per GPU (and, when asked, per vendor, region and contract type)
 * the spread of current prices in USD per GPU-hour, the cheapest offer and the spot discount.
 * Percentiles interpolate linearly between the closest ranks (numpy's default).
 */

const Price = Schema.Number
const NullablePrice = Schema.NullOr(Schema.Number)

/** The offers of one group at one instant, as both the summary and its history report them. */
const marketFields = {
  offers: Schema.Int,
  vendors: Schema.Int,
  price_min: Price,
  price_p10: Price,
  price_median: Price,
  price_p90: Price,
  price_max: Price
}

const marketMeanings = {
  offers: "Offers (current rows) in the group.",
  vendors: "Distinct vendors among them.",
  price_min: "Lowest price, USD per GPU-hour.",
  price_p10: "10th percentile of the prices (linear interpolation between closest ranks).",
  price_median: "Median price.",
  price_p90: "90th percentile of the prices.",
  price_max: "Highest price.",
  spot_min: "Lowest `spot` price; null when the group has no spot offer.",
  ondemand_min: "Lowest `ondemand` price; null when the group has no on-demand offer."
} as const

const gpu = withMeanings({ gpu_canonical_name: Schema.String }, { gpu_canonical_name: "Catalog GPU slug; every summary is grouped by GPU." })

/** The group keys a summary may add to the GPU, in the order rows are sorted by them. */
const groupFields = {
  vendor: Schema.optional(Schema.String.annotations({ description: "Vendor slug; present exactly when grouped by `vendor`." })),
  region: Schema.optional(Schema.String.annotations({ description: "Region; present exactly when grouped by `region`." })),
  contract_type: Schema.optional(Schema.String.annotations({ description: "Contract type; present exactly when grouped by `contract_type`." }))
}

/** The cheapest offer of a group: the lowest price, the smaller `product_key` on a tie. */
export class CheapestOffer extends Schema.Class<CheapestOffer>("CheapestOffer")(withMeanings({
  product_key: Schema.String,
  base_product_key: Schema.String,
  vendor: Schema.String,
  price_usd_per_gpu_hour: Price
}, {
  product_key: "The offer's row (`/latest?product_key=`).",
  base_product_key: "The priced thing, across its price changes.",
  vendor: "Vendor slug.",
  price_usd_per_gpu_hour: "Its price, USD per GPU-hour."
})) {}

/** Now minus then, for one horizon: null when the group had no offers then (or then lies below the caller's history floor). */
export const PriceChange = Schema.NullOr(Schema.Struct(withMeanings({
  price_min: Price,
  price_median: Price,
  price_min_pct: Price,
  price_median_pct: Price
}, {
  price_min: "`price_min` now minus then.",
  price_median: "`price_median` now minus then.",
  price_min_pct: "That change in percent of the earlier `price_min`.",
  price_median_pct: "That change in percent of the earlier `price_median`."
}))).annotations({ identifier: "PriceChange" })
export type PriceChange = typeof PriceChange.Type

/** One row of `/summary`. */
export class RentalPriceSummaryRow extends Schema.Class<RentalPriceSummaryRow>("RentalPriceSummaryRow")({
  ...gpu,
  ...groupFields,
  ...withMeanings({
    as_of: Schema.String,
    ...marketFields,
    cheapest: CheapestOffer,
    spot_min: NullablePrice,
    ondemand_min: NullablePrice,
    spot_discount_pct: NullablePrice
  }, {
    as_of: "The instant summarised (now, or the `as_of` asked).",
    ...marketMeanings,
    cheapest: "The cheapest offer.",
    spot_discount_pct: "How much below `ondemand_min` `spot_min` lies, in percent; null without both."
  }),
  change: Schema.optional(Schema.Struct({ "1d": PriceChange, "7d": PriceChange, "30d": PriceChange }).annotations({
    description: "Change of `price_min` and `price_median` against 1, 7 and 30 days before `as_of`; absent when the token reads current prices only."
  }))
}) {}

/** A `/summary` row as plain data. */
export type RentalPriceSummary = Schema.Schema.Encoded<typeof RentalPriceSummaryRow>

/** One point of `/summary/history`: the market of one group as of `at`. */
export class RentalPriceSummaryPointRow extends Schema.Class<RentalPriceSummaryPointRow>("RentalPriceSummaryPointRow")({
  ...withMeanings({ at: Schema.String }, { at: "The instant: the market as `/as-of?at=` answers it." }),
  ...gpu,
  ...groupFields,
  ...withMeanings({ ...marketFields, spot_min: NullablePrice, ondemand_min: NullablePrice }, marketMeanings)
}) {}

/** A `/summary/history` point as plain data. */
export type RentalPriceSummaryPoint = Schema.Schema.Encoded<typeof RentalPriceSummaryPointRow>
