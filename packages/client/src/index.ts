/**
 * @gpu-market/client: the typed client of gpu-market's HTTP API and its change feed, for any fetch
 * runtime (browsers, Node, Deno, Bun, workers). No server inside: it builds on core's
 * browser-safe `@gpu-market/core/reads`, so a bundle carries the client and nothing of the market.
 */
export { type ClientOptions, createClient } from "./client.js"
export {
  type CallOptions, type EndpointName, type EventsOptions, type FeedMessage, type HardwarePriceQuery, type IndexQuery, type LlmTokenPriceQuery,
  type MarketFeed, MarketProblemError, type MarketReads, type Problem, type RentalPriceQuery, type TransactionQuery
} from "@gpu-market/core/reads"
