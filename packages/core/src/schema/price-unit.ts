import * as Schema from "effect/Schema"

/**
 * The units a vendor's rental price may be written in: `<ccy>_per_<basis>_<period>`, with `<ccy>`
 * a lower-case ISO 4217 code, `<basis>` `gpu` (the price of one GPU) or `instance` (of the whole
 * product, `gpu_count` GPUs), and `<period>` one of `PRICE_PERIOD_HOURS`. The one definition of
 * the set: the observation schema, the normalisation to USD per GPU-hour and the docs follow it.
 */

/** An ISO 4217 currency code, upper case (its form; whether it is assigned is not checked). */
export const CurrencyCode = Schema.String.pipe(Schema.pattern(/^[A-Z]{3}$/))

/** Hours in each period a price may be quoted for; a month is 730 h (8,760 / 12), a year 8,760 h. */
export const PRICE_PERIOD_HOURS = { hour: 1, day: 24, week: 168, month: 730, year: 8760 } as const
export type PricePeriod = keyof typeof PRICE_PERIOD_HOURS

/** What a price is of: one GPU, or the whole product of `gpu_count` GPUs. */
export const PRICE_BASES = ["gpu", "instance"] as const
export type PriceBasis = (typeof PRICE_BASES)[number]

const UNIT = new RegExp(`^([a-z]{3})_per_(${PRICE_BASES.join("|")})_(${Object.keys(PRICE_PERIOD_HOURS).join("|")})$`)

/** The accepted form, as a refusal names it. */
export const RAW_PRICE_UNIT_FORM = `<ccy>_per_<${PRICE_BASES.join("|")}>_<${Object.keys(PRICE_PERIOD_HOURS).join("|")}>, <ccy> a lower-case ISO 4217 code (e.g. usd_per_instance_hour, eur_per_gpu_month)`

/** A rental price unit, e.g. `usd_per_instance_hour`; anything else (`USD/hr`) is refused naming the form. */
export const RawPriceUnit = Schema.String.pipe(
  Schema.filter((s) => UNIT.test(s), { message: (issue) => `expected ${RAW_PRICE_UNIT_FORM}, got ${JSON.stringify(issue.actual)}` })
)

/** A unit taken apart: its currency (upper case), what the price is of, and the hours it covers. */
export interface PriceUnit {
  readonly currency: string
  readonly basis: PriceBasis
  readonly hours: number
}

// The unit last taken apart: a batch mostly repeats one, and the write path takes each row's apart three times.
let last: { readonly unit: string; readonly parts: PriceUnit } | undefined

/** The parts of a unit `RawPriceUnit` accepted. */
export const parsePriceUnit = (unit: string): PriceUnit => {
  if (last?.unit === unit) return last.parts
  const [, ccy, basis, period] = UNIT.exec(unit)!
  const parts: PriceUnit = { currency: ccy!.toUpperCase(), basis: basis as PriceBasis, hours: PRICE_PERIOD_HOURS[period as PricePeriod] }
  last = { unit, parts }
  return parts
}
