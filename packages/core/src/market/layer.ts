import { Layer } from "effect"
import { Auth } from "../auth/auth"
import { RateLimits } from "../auth/rate-limits"
import { RentalPriceIngest } from "../ingest/rental-prices"
import { PageTokens } from "../query/page-token"
import type { Storage, StorageError } from "../storage/contract"
import { RentalPrices } from "./rental-prices"
import { HardwarePriceIngest } from "../ingest/hardware-prices"
import { HardwarePrices } from "./hardware-prices"
import { LlmTokenPriceIngest } from "../ingest/llm-token-prices"
import { LlmTokenPrices } from "./llm-token-prices"
import { TransactionIngest } from "../ingest/transactions"
import { Transactions } from "./transactions"
import { IndexComputation } from "../ingest/index-computation"
import { IndexIngest } from "../ingest/indexes"
import { Indexes } from "./indexes"

/** Every service of the market. */
export type MarketServices = RentalPrices | RentalPriceIngest | Auth | RateLimits | PageTokens
  | HardwarePrices | HardwarePriceIngest
  | LlmTokenPrices | LlmTokenPriceIngest
  | Transactions | TransactionIngest
  | Indexes | IndexIngest | IndexComputation

/**
 * The whole market over a storage backend: read services, write paths, auth and rate limits,
 * with page tokens signed by the secret kept in that storage.
 */
export const layer: Layer.Layer<MarketServices, StorageError, Storage> = Layer.mergeAll(
  RentalPrices.Default,
  RentalPriceIngest.Default,
  HardwarePrices.Default,
  HardwarePriceIngest.Default,
  Auth.Default,
  RateLimits.Default,
  LlmTokenPrices.Default,
  LlmTokenPriceIngest.Default,
  Transactions.Default,
  TransactionIngest.Default,
  Indexes.Default,
  IndexIngest.Default
).pipe(
  // One computation shared by reads and writes: its lock and its record of what is done are per process.
  Layer.provideMerge(IndexComputation.Default),
  Layer.provideMerge(PageTokens.layerFromStorage)
)
