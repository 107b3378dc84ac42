import * as Schema from "effect/Schema"
import { IsoDate } from "./hardware-price.js"
import { CurrencyCode } from "./price-unit.js"

/**
 * One FX rate: what one unit of `currency` was worth in USD on `date`. A rate covers its date and
 * the 7 days after it, until the next dated rate (weekends, holidays, a late feed); a price on a
 * date no rate covers is refused, never converted at a guess. USD needs no rate.
 */
export class FxRate extends Schema.Class<FxRate>("FxRate")({
  currency: CurrencyCode.pipe(Schema.filter((c) => c !== "USD", { message: () => "USD needs no rate: it is the unit prices are normalised to" })),
  date: IsoDate,
  usd_per_unit: Schema.Number.pipe(Schema.positive(), Schema.finite())
}) {}
export type FxRateInput = Schema.Schema.Encoded<typeof FxRate>
