/**
 * @gpu-market/core/reads: the read API's shape for a client that talks to a market elsewhere.
 * Each read endpoint's dotted name, path and paging (`readEndpoints`), the query and answer types
 * (`MarketReads`), `buildReads` to make the namespaces over a transport, and the error a problem
 * is thrown as (`MarketProblemError`). It loads no Node module and no service: safe in a browser
 * bundle, which is what `@gpu-market/client` builds on.
 */
export * from "./adapters/reads.js"
export { MarketProblemError } from "./adapters/problem.js"
export type { EventsOptions, MarketFeed } from "./adapters/feed.js"
export type { FeedMessage } from "./feed/feed.js"
export type { Problem } from "./schema/problem.js"
