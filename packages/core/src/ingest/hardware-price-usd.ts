import * as Either from "effect/Either"
import { type Bound, outOfBounds } from "./bounds.js"
import { dateOf } from "../query/time.js"
import type { UsdPerUnit } from "./fx.js"

/**
 * The USD price of a hardware observation: `price_amount` in `currency` converted at the rate of
 * its observed date, or the `price_usd` the source gave. When both are given they must agree, and
 * the source's own figure stands: the tolerance allows for its rate differing from the day's.
 */

/** How far a given `price_usd` may be from a USD `price_amount`: half a cent. */
export const USD_PRICE_TOLERANCE = 0.005
/** How far a given `price_usd` may be from a converted `price_amount`, relative: 0.5%, a day's FX spread and rounding. */
export const CONVERTED_PRICE_TOLERANCE = 0.005

/** What the USD price is computed from, and the range it must fall in. */
export interface HardwarePricing {
  readonly usdPerUnit: UsdPerUnit
  readonly bound: Bound
}

/** The currencies and dates a batch of raw hardware records converts at: what its FX rates are read for. */
export const hardwareFxNeeds = (records: ReadonlyArray<unknown>): Array<{ readonly currency: string; readonly date: string }> =>
  records.flatMap((r) => {
    if (typeof r !== "object" || r === null) return []
    const { currency, observed_date } = r as { readonly currency?: unknown; readonly observed_date?: unknown }
    const date = typeof observed_date === "string" ? dateOf(observed_date) : undefined
    return typeof currency === "string" && date !== undefined ? [{ currency, date }] : []
  })

/**
 * The `price_usd` of an observation on `date`, or why it has none: a price with no currency, a
 * currency with no rate covering the date, a given `price_usd` that disagrees with the
 * conversion, no price at all, or one outside `pricing.bound`.
 */
export const hardwarePriceUsd = (
  o: { readonly price_amount: number | null; readonly currency: string | null; readonly price_usd: number | null },
  date: string,
  pricing: HardwarePricing
): Either.Either<number, string> => {
  let price = o.price_usd
  if (o.price_amount !== null && o.currency === null) return Either.left("currency: price_amount needs its currency")
  if (o.price_amount !== null && o.currency !== null) {
    const rate = pricing.usdPerUnit(o.currency, date)
    if (Either.isLeft(rate)) return Either.left(`currency: ${rate.left}`)
    const usd = o.currency === "USD"
    const computed = usd ? o.price_amount : Math.round(o.price_amount * rate.right * 100) / 100
    const tolerance = usd ? USD_PRICE_TOLERANCE : computed * CONVERTED_PRICE_TOLERANCE
    if (price !== null && Math.abs(price - computed) > tolerance) {
      return Either.left(`price_usd: ${price} disagrees with ${computed} computed from price_amount ${o.price_amount} ${o.currency}${usd ? "" : ` at ${rate.right} USD per unit`}`)
    }
    price ??= computed
  }
  if (price === null) return Either.left("price_usd: no price: give price_usd, or price_amount and currency")
  if (price <= 0) return Either.left(`price_usd: ${price} is not a price`)
  const implausible = outOfBounds("price_usd", price, pricing.bound)
  return implausible === undefined ? Either.right(price) : Either.left(implausible)
}
