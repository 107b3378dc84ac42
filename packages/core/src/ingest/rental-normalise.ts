import * as Either from "effect/Either"
import { type GpuCatalog, type GpuCatalogEntry, resolveGpu, spellingKey } from "../catalog/gpu-catalog.js"
import { parsePriceUnit } from "../schema/price-unit.js"
import type { RentalPrice, RentalPriceObservation } from "../schema/rental-price.js"
import { type Bound, outOfBounds } from "./bounds.js"
import type { UsdPerUnit } from "./fx.js"

/**
 * Normalisation of a rental observation: what the vendor published (a raw price in its unit, a
 * GPU as the vendor spells it) made into the row's terms (USD per GPU-hour, a catalog GPU).
 */

/** A rental observation with every published field known: what a row is opened from. */
export type RentalObservation = Omit<RentalPrice, "valid_from" | "valid_to" | "extracted_at" | "base_product_key" | "product_key">

/** What normalisation reads besides the observation: the GPU catalog, the FX rates and the price's plausible range. */
export interface RentalReference {
  readonly catalog: GpuCatalog
  readonly usdPerUnit: UsdPerUnit
  readonly bound: Bound
}

/** Decimal places `price_usd_per_gpu_hour` is computed to. */
export const USD_PER_GPU_HOUR_PLACES = 6

/**
 * How far a given `price_usd_per_gpu_hour` may be from the computed one: agreement at 4 decimals
 * (half a unit of the 4th), and a hair for binary fractions.
 */
export const USD_PER_GPU_HOUR_TOLERANCE = 0.00005 + 1e-9

const roundTo = (n: number, places: number) => Math.round(n * 10 ** places) / 10 ** places

/** The price in USD per GPU-hour of `raw_price` in `raw_price_unit` for `gpu_count` GPUs, at `usdPerUnit` USD per unit. */
export const usdPerGpuHour = (o: Pick<RentalPriceObservation, "raw_price" | "raw_price_unit" | "gpu_count">, usdPerUnit: number): number => {
  const unit = parsePriceUnit(o.raw_price_unit)
  return roundTo(o.raw_price * usdPerUnit / (unit.basis === "instance" ? o.gpu_count : 1) / unit.hours, USD_PER_GPU_HOUR_PLACES)
}

const GPU_IMPORT = "gpu-market import --type gpus"

/**
 * The catalog entry of an observation's GPU, or why it has none. A known spelling resolves by
 * `resolveGpu` (memory tells variants apart); a given slug must be one of the entries the
 * spelling names. A spelling the catalog does not know needs a slug: one in the catalog, or a
 * new one with manufacturer, model and memory (`null` entry: the observation describes it).
 */
const gpuEntry = (o: RentalPriceObservation, catalog: GpuCatalog): Either.Either<GpuCatalogEntry | null, string> => {
  const named = catalog.bySpelling.get(spellingKey(o.vendor_gpu_name))
  const slug = o.gpu_canonical_name
  if (named !== undefined) {
    if (slug === null) return Either.right(resolveGpu(catalog, o.vendor_gpu_name, o.gpu_memory_gb)!)
    const entry = named.find((e) => e.gpu_canonical_name === slug)
    return entry !== undefined
      ? Either.right(entry)
      : Either.left(`gpu_canonical_name: "${slug}" disagrees with the GPU catalog, where vendor_gpu_name "${o.vendor_gpu_name}" names ${named.map((e) => `"${e.gpu_canonical_name}"`).join(" or ")}`)
  }
  if (slug === null) return Either.left(`vendor_gpu_name: unknown GPU spelling "${o.vendor_gpu_name}": add it to the GPU catalog (${GPU_IMPORT})`)
  const entry = catalog.bySlug.get(slug)
  if (entry !== undefined) return Either.right(entry)
  return o.gpu_manufacturer !== null && o.gpu_model !== null && o.gpu_memory_gb !== null
    ? Either.right(null)
    : Either.left(`gpu_canonical_name: "${slug}" is not in the GPU catalog: give gpu_manufacturer, gpu_model and gpu_memory_gb, or add it (${GPU_IMPORT})`)
}

/** The catalog slug an observation's GPU resolves to, by the rules of `normaliseRental`, if it resolves. */
export const resolvedGpuSlug = (o: RentalPriceObservation, catalog: GpuCatalog): string | undefined => {
  const entry = gpuEntry(o, catalog)
  return Either.isLeft(entry) ? undefined : o.gpu_canonical_name ?? entry.right?.gpu_canonical_name
}

/**
 * Completes an observation extracted on the UTC date `date`: its price in USD per GPU-hour
 * (computed; a given one must agree within `USD_PER_GPU_HOUR_TOLERANCE`, and it must be within
 * `reference.bound`) and its GPU (resolved; given fields win over the catalog's). Returns every
 * problem found, each naming its field.
 */
export const normaliseRental = (
  o: RentalPriceObservation,
  date: string,
  reference: RentalReference
): Either.Either<RentalObservation, ReadonlyArray<string>> => {
  const issues: Array<string> = []
  const unit = parsePriceUnit(o.raw_price_unit)
  if (o.currency !== null && o.currency !== unit.currency) {
    issues.push(`currency: ${o.currency} is not the currency of raw_price_unit ${o.raw_price_unit} (${unit.currency})`)
  }
  const rate = reference.usdPerUnit(unit.currency, date)
  let price = 0
  if (Either.isLeft(rate)) issues.push(`raw_price_unit: ${rate.left}`)
  else {
    price = usdPerGpuHour(o, rate.right)
    const given = o.price_usd_per_gpu_hour
    if (given !== null && Math.abs(given - price) > USD_PER_GPU_HOUR_TOLERANCE) {
      issues.push(`price_usd_per_gpu_hour: ${given} disagrees with ${price} computed from raw_price ${o.raw_price} ${o.raw_price_unit} for ${o.gpu_count} GPU(s)`)
    } else if (price <= 0) {
      issues.push(`raw_price: ${o.raw_price} ${o.raw_price_unit} is 0 USD per GPU-hour at ${USD_PER_GPU_HOUR_PLACES} decimals`)
    } else {
      const implausible = outOfBounds("price_usd_per_gpu_hour", price, reference.bound)
      if (implausible !== undefined) issues.push(implausible)
    }
  }
  const entry = gpuEntry(o, reference.catalog)
  if (Either.isLeft(entry)) issues.push(entry.left)
  if (issues.length > 0 || Either.isLeft(entry)) return Either.left(issues)
  const gpu = entry.right
  const { currency: _, extracted_at: __, ...published } = o
  return Either.right({
    ...published,
    gpu_canonical_name: o.gpu_canonical_name ?? gpu!.gpu_canonical_name,
    gpu_manufacturer: o.gpu_manufacturer ?? gpu!.gpu_manufacturer,
    gpu_model: o.gpu_model ?? gpu!.gpu_model,
    gpu_memory_gb: o.gpu_memory_gb ?? gpu!.gpu_memory_gb,
    price_usd_per_gpu_hour: price
  })
}
