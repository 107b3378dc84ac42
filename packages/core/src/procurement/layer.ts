import * as Layer from "effect/Layer"
import type { RateLimits } from "../auth/rate-limits.js"
import type { PageTokens } from "../query/page-token.js"
import type { RentalPriceStore } from "../storage/contract.js"
import type { ProcurementStore } from "../storage/procurement.js"
import { Discovery } from "./discovery.js"
import { Lifecycle } from "./lifecycle.js"
import { Offers } from "./offers.js"
import { Procurements } from "./procurements.js"
import type { SupplyProvider } from "./provider.js"
import { Resources } from "./resources.js"

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
