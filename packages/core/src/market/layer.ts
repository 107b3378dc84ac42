import { Layer } from "effect"
import { Auth } from "../auth/auth"
import { RateLimits } from "../auth/rate-limits"
import { RentalPriceIngest } from "../ingest/rental-prices"
import { PageTokens } from "../query/page-token"
import type { Storage, StorageError } from "../storage/contract"
import { RentalPrices } from "./rental-prices"

/** Every service of the market. */
export type MarketServices = RentalPrices | RentalPriceIngest | Auth | RateLimits | PageTokens

/**
 * The whole market over a storage backend: read services, write paths, auth and rate limits,
 * with page tokens signed by the secret kept in that storage.
 */
export const layer: Layer.Layer<MarketServices, StorageError, Storage> = Layer.mergeAll(
  RentalPrices.Default,
  RentalPriceIngest.Default,
  Auth.Default,
  RateLimits.Default
).pipe(Layer.provideMerge(PageTokens.layerFromStorage))
