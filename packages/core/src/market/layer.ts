import * as Layer from "effect/Layer"
import { Auth } from "../auth/auth.js"
import { RateLimits } from "../auth/rate-limits.js"
import { RentalPriceIngest } from "../ingest/rental-prices.js"
import { PageTokens } from "../query/page-token.js"
import type { Storage, StorageError } from "../storage/contract.js"
import { RentalPrices } from "./rental-prices.js"
import { HardwarePriceIngest } from "../ingest/hardware-prices.js"
import { HardwarePrices } from "./hardware-prices.js"
import { LlmTokenPriceIngest } from "../ingest/llm-token-prices.js"
import { LlmTokenPrices } from "./llm-token-prices.js"
import { TransactionIngest } from "../ingest/transactions.js"
import { Transactions } from "./transactions.js"
import { IndexComputation } from "../ingest/index-computation.js"
import { IndexIngest } from "../ingest/indexes.js"
import { Indexes } from "./indexes.js"
import { FormatImport } from "../ingest/formats/import.js"
import { DefaultIndexes } from "../ingest/default-indexes.js"
import { ReferenceDataIngest } from "../ingest/reference-data.js"
import { PageCache } from "./page-cache.js"
import { Feed } from "../feed/feed.js"

/** Every service of the market. */
export type MarketServices = RentalPrices | RentalPriceIngest | Auth | RateLimits | PageTokens
  | HardwarePrices | HardwarePriceIngest
  | LlmTokenPrices | LlmTokenPriceIngest
  | Transactions | TransactionIngest
  | Indexes | IndexIngest | IndexComputation
  | FormatImport | DefaultIndexes
  | ReferenceDataIngest
  | PageCache
  | Feed

/**
 * The whole market over a storage backend: read services, write paths (and the public-format
 * imports over them), auth and rate limits, with page tokens signed by the secret kept in that
 * storage, and one page cache every read service shares (sized by `PageCacheBytes`).
 */
export const layer: Layer.Layer<MarketServices, StorageError, Storage> = FormatImport.Default.pipe(Layer.provideMerge(DefaultIndexes.Default), Layer.provideMerge(Layer.mergeAll(
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
  IndexIngest.Default,
  ReferenceDataIngest.Default,
  Feed.Default
).pipe(
  // One computation shared by reads and writes: its lock and its record of what is done are per process.
  Layer.provideMerge(IndexComputation.Default),
  Layer.provideMerge(PageTokens.layerFromStorage),
  // The services' own dependency, built once per market and shown, so one budget bounds every type's pages.
  Layer.provideMerge(PageCache.Default)
)))
