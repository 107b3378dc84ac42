import * as Either from "effect/Either"
import { formatDate, MICROS_PER_DAY, parseDate } from "../query/time.js"
import type { FxRateInput } from "../schema/fx-rate.js"

/** Days after its date a rate still covers, when no later rate came: a weekend, a holiday, a late feed. */
export const FX_COVER_DAYS = 7

/** USD per unit of a currency on a date, or why there is none; USD is 1. */
export type UsdPerUnit = (currency: string, date: string) => Either.Either<number, string>

/** The date `days` after `date` (both `YYYY-MM-DD`). */
const addDays = (date: string, days: number): string => formatDate(parseDate(date)! + days * MICROS_PER_DAY)

/**
 * The rates a write path converts with: for a date, the latest rate of the currency on or before
 * it, if it is at most `FX_COVER_DAYS` old. Rates of one currency and date: the last given stands.
 */
export const fxTable = (rates: ReadonlyArray<FxRateInput>): UsdPerUnit => {
  const byCurrency = new Map<string, Array<FxRateInput>>()
  for (const r of rates) {
    const list = byCurrency.get(r.currency)
    if (list === undefined) byCurrency.set(r.currency, [r])
    else list.push(r)
  }
  for (const list of byCurrency.values()) list.sort((a, b) => (a.date < b.date ? -1 : a.date > b.date ? 1 : 0))
  return (currency, date) => {
    if (currency === "USD") return Either.right(1)
    const list = byCurrency.get(currency) ?? []
    let latest: FxRateInput | undefined
    for (const r of list) {
      if (r.date > date) break
      latest = r
    }
    if (latest !== undefined && addDays(latest.date, FX_COVER_DAYS) >= date) return Either.right(latest.usd_per_unit)
    const before = latest === undefined ? "none before it" : `latest before it: ${latest.date}`
    return Either.left(`no ${currency}→USD rate covers ${date} (${before}); import one with gpu-market import --type fx`)
  }
}
