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

/**
 * The statistics of offers added one at a time, keeping their prices and little else, so a
 * market of a million rows is summarised without holding its rows.
 */
export class OfferTally {
  private readonly prices: Array<number> = []
  private readonly vendors = new Set<string>()
  private cheapest: Offer | undefined
  private spot: number | null = null
  private ondemand: number | null = null

  /** Counts one offer. */
  add(o: Offer): void {
    const price = o.price_usd_per_gpu_hour
    this.prices.push(price)
    this.vendors.add(o.vendor)
    const c = this.cheapest
    if (c === undefined || price < c.price_usd_per_gpu_hour || (price === c.price_usd_per_gpu_hour && cmp(o.product_key, c.product_key) < 0)) this.cheapest = o
    if (o.contract_type === "spot") this.spot = lower(this.spot, price)
    else if (o.contract_type === "ondemand") this.ondemand = lower(this.ondemand, price)
  }

  /** The statistics of the offers added (at least one); the cheapest is the lowest price, the smaller `product_key` on a tie. */
  statistics(): OfferStatistics {
    const prices = this.prices.sort((a, b) => a - b)
    const cheapest = this.cheapest!
    return {
      offers: prices.length,
      vendors: this.vendors.size,
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
      spot_min: this.spot,
      ondemand_min: this.ondemand
    }
  }
}

/** An offer with the instants its version was in force: from `valid_from`, until `valid_to` (null: still). */
export interface OfferVersion extends Offer {
  readonly valid_from: string
  readonly valid_to: string | null
}

/** Orders offers by price, then `product_key`: the first is the cheapest. */
const byPrice = (a: Offer, b: Offer) => a.price_usd_per_gpu_hour - b.price_usd_per_gpu_hour || cmp(a.product_key, b.product_key)

/**
 * The offers in force at a moving instant, kept sorted by price with a count per vendor, so a
 * series of instants costs a merge of the versions that began and a drop of those that ended
 * between two of them, rather than a sort of the whole market at each.
 */
export class LiveOffers {
  private live: Array<OfferVersion> = []
  private readonly vendors = new Map<string, number>()

  /**
   * Moves to `at`: adds the versions `began` (each `valid_from <= at`) and drops every version
   * that ended at or before `at`, as the as-of rules read a version's interval.
   */
  advance(began: ReadonlyArray<OfferVersion>, at: string): void {
    const inForce = (v: OfferVersion) => v.valid_to === null || v.valid_to > at
    const added = began.filter(inForce).sort(byPrice)
    const kept: Array<OfferVersion> = []
    for (const v of this.live) {
      if (inForce(v)) kept.push(v)
      else this.count(v.vendor, -1)
    }
    for (const v of added) this.count(v.vendor, 1)
    if (added.length === 0) {
      this.live = kept
      return
    }
    const merged = new Array<OfferVersion>(kept.length + added.length)
    let i = 0
    let j = 0
    for (let k = 0; k < merged.length; k++) merged[k] = j >= added.length || (i < kept.length && byPrice(kept[i]!, added[j]!) <= 0) ? kept[i++]! : added[j++]!
    this.live = merged
  }

  /** The statistics of the offers in force, or undefined when there are none. */
  statistics(): OfferStatistics | undefined {
    const live = this.live
    if (live.length === 0) return undefined
    const prices = live.map((v) => v.price_usd_per_gpu_hour)
    const cheapest = live[0]!
    return {
      offers: live.length,
      vendors: this.vendors.size,
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
      spot_min: live.find((v) => v.contract_type === "spot")?.price_usd_per_gpu_hour ?? null,
      ondemand_min: live.find((v) => v.contract_type === "ondemand")?.price_usd_per_gpu_hour ?? null
    }
  }

  private count(vendor: string, by: 1 | -1): void {
    const n = (this.vendors.get(vendor) ?? 0) + by
    if (n === 0) this.vendors.delete(vendor)
    else this.vendors.set(vendor, n)
  }
}

/** How much below `ondemand` `spot` lies, in percent of `ondemand`; null without both. */
export const spotDiscountPct = (spot: number | null, ondemand: number | null): number | null =>
  spot === null || ondemand === null ? null : ((ondemand - spot) / ondemand) * 100
