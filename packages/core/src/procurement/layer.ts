import { Layer } from "effect"
import type { RateLimits } from "../auth/rate-limits"
import type { PageTokens } from "../query/page-token"
import type { RentalPriceStore } from "../storage/contract"
import type { ProcurementStore } from "../storage/procurement"
import { Discovery } from "./discovery"
import { Lifecycle } from "./lifecycle"
import { Offers } from "./offers"
import { Procurements } from "./procurements"
import type { SupplyProvider } from "./provider"
import { Resources } from "./resources"

/** Every service of the procurement service. */
export type ProcurementServices = Discovery | Offers | Procurements | Resources | Lifecycle

/**
 * The procurement service over a store, a supply provider, and the market's rate limits and
 * page tokens (`marketLayer` provides those two).
 */
export const layer: Layer.Layer<
  ProcurementServices,
  never,
  ProcurementStore | RentalPriceStore | SupplyProvider | RateLimits | PageTokens
> = Layer.mergeAll(Discovery.Default, Offers.Default, Procurements.Default, Resources.Default, Lifecycle.Default)
