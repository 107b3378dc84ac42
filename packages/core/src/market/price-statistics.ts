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
export const quantile = (sorted: ReadonlyArray<number>, q: number): number => quantileOf(sorted.length, q, (i) => sorted[i]!)

/** `quantile` over `count` ascending values that `at` reads by position. */
const quantileOf = (count: number, q: number, at: (i: number) => number): number => {
  const position = (count - 1) * q
  const lo = Math.floor(position)
  const below = at(lo)
  return lo === position ? below : below + (at(lo + 1) - below) * (position - lo)
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

/** How many items of each rank are counted, as a Fenwick tree: a change and the n-th counted rank cost O(log ranks). */
class RankCounts {
  private readonly tree: Int32Array
  private readonly top: number
  total = 0

  constructor(private readonly ranks: number) {
    this.tree = new Int32Array(ranks + 1)
    let top = 1
    while (top * 2 <= ranks) top *= 2
    this.top = top
  }

  add(rank: number, by: 1 | -1): void {
    this.total += by
    for (let i = rank + 1; i <= this.ranks; i += i & -i) this.tree[i]! += by
  }

  /** The rank of the `n`-th counted item (from 0; `n < total`). */
  nth(n: number): number {
    let rank = 0
    let rest = n + 1
    for (let step = this.top; step > 0; step >>= 1) {
      const next = rank + step
      if (next <= this.ranks && this.tree[next]! < rest) {
        rank = next
        rest -= this.tree[next]!
      }
    }
    return rank
  }
}

/**
 * The offers of a set of versions in force at an instant that moves forward: each version is
 * ranked by price once, and counted in while in force, so moving to the next instant costs the
 * versions that began or ended in between, and the statistics a few lookups by rank, rather
 * than a sort of every offer in force at each instant.
 */
export class LiveOffers {
  private readonly byRank: ReadonlyArray<OfferVersion>
  private readonly rankOf = new Map<OfferVersion, number>()
  private readonly byStart: ReadonlyArray<OfferVersion>
  private readonly byEnd: ReadonlyArray<OfferVersion>
  private started = 0
  private ended = 0
  private readonly all: RankCounts
  private readonly spot: RankCounts
  private readonly ondemand: RankCounts
  private readonly vendors = new Map<string, number>()

  constructor(versions: ReadonlyArray<OfferVersion>) {
    this.byRank = [...versions].sort(byPrice)
    this.byRank.forEach((v, rank) => this.rankOf.set(v, rank))
    this.byStart = [...versions].sort((a, b) => cmp(a.valid_from, b.valid_from))
    this.byEnd = versions.filter((v) => v.valid_to !== null).sort((a, b) => cmp(a.valid_to!, b.valid_to!))
    this.all = new RankCounts(versions.length)
    this.spot = new RankCounts(versions.length)
    this.ondemand = new RankCounts(versions.length)
  }

  /**
   * Moves to `at`, which is not before the instant moved to last: counts in the versions with
   * `valid_from <= at` and out those with `valid_to <= at`, as the as-of rules read a version.
   */
  moveTo(at: string): void {
    for (; this.started < this.byStart.length && this.byStart[this.started]!.valid_from <= at; this.started++) this.count(this.byStart[this.started]!, 1)
    for (; this.ended < this.byEnd.length && this.byEnd[this.ended]!.valid_to! <= at; this.ended++) this.count(this.byEnd[this.ended]!, -1)
  }

  /** The statistics of the offers in force, or undefined when there are none. */
  statistics(): OfferStatistics | undefined {
    const offers = this.all.total
    if (offers === 0) return undefined
    const price = (n: number) => this.byRank[this.all.nth(n)]!.price_usd_per_gpu_hour
    const lowest = (counts: RankCounts) => (counts.total === 0 ? null : this.byRank[counts.nth(0)]!.price_usd_per_gpu_hour)
    const cheapest = this.byRank[this.all.nth(0)]!
    return {
      offers,
      vendors: this.vendors.size,
      price_min: cheapest.price_usd_per_gpu_hour,
      price_p10: quantileOf(offers, 0.1, price),
      price_median: quantileOf(offers, 0.5, price),
      price_p90: quantileOf(offers, 0.9, price),
      price_max: price(offers - 1),
      cheapest: {
        product_key: cheapest.product_key,
        base_product_key: cheapest.base_product_key,
        vendor: cheapest.vendor,
        price_usd_per_gpu_hour: cheapest.price_usd_per_gpu_hour
      },
      spot_min: lowest(this.spot),
      ondemand_min: lowest(this.ondemand)
    }
  }

  private count(v: OfferVersion, by: 1 | -1): void {
    const rank = this.rankOf.get(v)!
    this.all.add(rank, by)
    if (v.contract_type === "spot") this.spot.add(rank, by)
    else if (v.contract_type === "ondemand") this.ondemand.add(rank, by)
    const n = (this.vendors.get(v.vendor) ?? 0) + by
    if (n === 0) this.vendors.delete(v.vendor)
    else this.vendors.set(v.vendor, n)
  }
}

/** How much below `ondemand` `spot` lies, in percent of `ondemand`; null without both. */
export const spotDiscountPct = (spot: number | null, ondemand: number | null): number | null =>
  spot === null || ondemand === null ? null : ((ondemand - spot) / ondemand) * 100
