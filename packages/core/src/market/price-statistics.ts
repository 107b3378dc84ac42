import { cmp } from "../storage/rules.js"

/**
 * The statistics of a set of offers, computed once here for every summary (the current market,
 * an as-of market, each point of a series): count, distinct vendors, min, p10, median, p90, max,
 * the cheapest offer and the lowest spot and on-demand prices.
 */

/** What the statistics read of an offer. */
export interface Offer {
  readonly vendor: string
  readonly contract_type: string
  readonly price_usd_per_gpu_hour: number
  readonly product_key: string
  readonly base_product_key: string
}

/** The statistics of a non-empty set of offers, prices in USD per GPU-hour. */
export interface OfferStatistics {
  readonly offers: number
  readonly vendors: number
  readonly price_min: number
  readonly price_p10: number
  readonly price_median: number
  readonly price_p90: number
  readonly price_max: number
  readonly cheapest: {
    readonly product_key: string
    readonly base_product_key: string
    readonly vendor: string
    readonly price_usd_per_gpu_hour: number
  }
  readonly spot_min: number | null
  readonly ondemand_min: number | null
}

/**
 * The `q` quantile of ascending `sorted` (non-empty): linear interpolation between the closest
 * ranks, as numpy's default and DuckDB's `quantile_cont` compute it.
 */
export const quantile = (sorted: ReadonlyArray<number>, q: number): number => {
  const position = (sorted.length - 1) * q
  const lo = Math.floor(position)
  const below = sorted[lo]!
  return lo === position ? below : below + (sorted[lo + 1]! - below) * (position - lo)
}

const lower = (a: number | null, b: number) => (a === null || b < a ? b : a)

/** The statistics of `offers`, which must not be empty; the cheapest is the lowest price, the smaller `product_key` on a tie. */
export const statisticsOf = (offers: ReadonlyArray<Offer>): OfferStatistics => {
  const prices = offers.map((o) => o.price_usd_per_gpu_hour).sort((a, b) => a - b)
  const vendors = new Set<string>()
  let cheapest = offers[0]!
  let spot: number | null = null
  let ondemand: number | null = null
  for (const o of offers) {
    vendors.add(o.vendor)
    const price = o.price_usd_per_gpu_hour
    if (price < cheapest.price_usd_per_gpu_hour || (price === cheapest.price_usd_per_gpu_hour && cmp(o.product_key, cheapest.product_key) < 0)) cheapest = o
    if (o.contract_type === "spot") spot = lower(spot, price)
    else if (o.contract_type === "ondemand") ondemand = lower(ondemand, price)
  }
  return {
    offers: offers.length,
    vendors: vendors.size,
    price_min: prices[0]!,
    price_p10: quantile(prices, 0.1),
    price_median: quantile(prices, 0.5),
    price_p90: quantile(prices, 0.9),
    price_max: prices[prices.length - 1]!,
    cheapest: {
      product_key: cheapest.product_key,
      base_product_key: cheapest.base_product_key,
      vendor: cheapest.vendor,
      price_usd_per_gpu_hour: cheapest.price_usd_per_gpu_hour
    },
    spot_min: spot,
    ondemand_min: ondemand
  }
}

/** How much below `ondemand` `spot` lies, in percent of `ondemand`; null without both. */
export const spotDiscountPct = (spot: number | null, ondemand: number | null): number | null =>
  spot === null || ondemand === null ? null : ((ondemand - spot) / ondemand) * 100
