import type { FeedMessage } from "../feed/feed.js"
import type { CallOptions } from "./reads.js"

/**
 * The change feed in the Promise API and the HTTP client: an async iterator of feed messages,
 * the same messages `GET /v2/events` sends as Server-Sent Events.
 */

/** A comma list: one value, or several. */
type List = string | ReadonlyArray<string>

/** What a subscription selects; each list optional (none: everything the token may see). */
export interface EventsQuery {
  /** Data types: `gpu_rental_prices`, `gpu_rental_indexes`, `gpu_rental_transactions`, `gpu_hardware_prices`, `llm_token_prices`. */
  readonly data_type?: List
  /** GPU canonical names; rows without a GPU (index values, LLM prices) are not narrowed by it. */
  readonly gpu?: List
  /** Index ids (each must be held, else 404). */
  readonly index_id?: List
}

/** Options of a subscription. */
export interface EventsOptions extends CallOptions {
  /** Resume after this id (a message's `id`): every later event exactly once. Without it, from now. */
  readonly lastEventId?: string | undefined
}

/** The change feed of a market. */
export interface MarketFeed {
  /**
   * The market's changes as they happen: new rental and LLM price rows and withdrawals,
   * hardware observations, transaction blends and index values, filtered to what the token may
   * see and the query asks for. A subscription that cannot start rejects the first `next()`
   * with a `MarketProblemError` (403, 404, 410 `event_id_expired`, 422). Leaving the loop
   * (`break`) ends the subscription.
   *
   * @example
   * for await (const message of market.events({ data_type: "gpu_rental_prices", gpu: "h100-sxm" }, { token })) {
   *   if (message.type === "dropped") break // resume later with { lastEventId: message.id }
   *   console.log(message.id, message.type, message.row)
   * }
   */
  readonly events: (query?: EventsQuery, options?: EventsOptions) => AsyncIterable<FeedMessage>
}
