import * as Schema from "effect/Schema"
import type { DataType } from "../auth/principal.js"
import { type HardwarePrice, HardwarePriceRow } from "./hardware-price.js"
import { type IndexValue, IndexValueRow } from "./indexes.js"
import { type LlmTokenPrice, LlmTokenPriceRow } from "./llm-token-price.js"
import { type RentalPrice, RentalPriceRow } from "./rental-price.js"
import { type AggregatedTransaction, TransactionRow } from "./transaction.js"

/**
 * One change of the market as the change feed (`GET /v2/events`) carries it: what happened and
 * the row exactly as the data type's endpoints return it, so a subscriber needs no second lookup.
 */

const eventOf = <const T extends string, R extends Schema.Schema.AnyNoContext>(type: T, row: R) =>
  Schema.Struct({ type: Schema.Literal(type), row })

/** A new rental price row: a price change or a new product (`valid_to` null). */
export const RentalPriceEvent = eventOf("rental_price", RentalPriceRow)
/** A rental product withdrawn: its last row, closed (`valid_to` set) with no row after it. */
export const RentalWithdrawalEvent = eventOf("rental_price_withdrawal", RentalPriceRow)
/** A hardware listing observed on a day (a new observation, or the day's observation restated). */
export const HardwareObservationEvent = eventOf("hardware_observation", HardwarePriceRow)
/** A published transaction blend. */
export const TransactionBlendEvent = eventOf("transaction_blend", TransactionRow)
/** A published index value (computed or administered; a republished interval is published again). */
export const IndexValueEvent = eventOf("index_value", IndexValueRow)
/** A new LLM token price row: a price change or a new price. */
export const LlmTokenPriceEvent = eventOf("llm_token_price", LlmTokenPriceRow)
/** An LLM token price withdrawn: its last row, closed with no row after it. */
export const LlmWithdrawalEvent = eventOf("llm_token_price_withdrawal", LlmTokenPriceRow)

/** Every event of the change feed. */
export const MarketEvent = Schema.Union(
  RentalPriceEvent, RentalWithdrawalEvent, HardwareObservationEvent, TransactionBlendEvent, IndexValueEvent, LlmTokenPriceEvent,
  LlmWithdrawalEvent
).annotations({ identifier: "MarketEvent" })

/** An event as plain data: what storage logs and what is serialised. */
export type MarketEvent =
  | { readonly type: "rental_price" | "rental_price_withdrawal"; readonly row: RentalPrice }
  | { readonly type: "hardware_observation"; readonly row: HardwarePrice }
  | { readonly type: "transaction_blend"; readonly row: AggregatedTransaction }
  | { readonly type: "index_value"; readonly row: IndexValue }
  | { readonly type: "llm_token_price" | "llm_token_price_withdrawal"; readonly row: LlmTokenPrice }

/** The kinds of event, in the order the docs list them. */
export type MarketEventType = MarketEvent["type"]
export const marketEventTypes: ReadonlyArray<MarketEventType> = [
  "rental_price", "rental_price_withdrawal", "hardware_observation", "transaction_blend", "index_value", "llm_token_price",
  "llm_token_price_withdrawal"
]

/** The data type (the grant) each kind of event belongs to. */
export const eventDataType: { readonly [T in MarketEventType]: DataType } = {
  rental_price: "gpu_rental_prices",
  rental_price_withdrawal: "gpu_rental_prices",
  hardware_observation: "gpu_hardware_prices",
  transaction_blend: "gpu_rental_transactions",
  index_value: "gpu_rental_indexes",
  llm_token_price: "llm_token_prices",
  llm_token_price_withdrawal: "llm_token_prices"
}

/**
 * The instant or date an event's row is about, which the history floor is held against: a
 * version's start (its end for a withdrawal), the day observed or published, the index interval.
 */
export const eventInstant = (event: MarketEvent): string => {
  switch (event.type) {
    case "rental_price":
    case "llm_token_price":
      return event.row.valid_from
    case "rental_price_withdrawal":
    case "llm_token_price_withdrawal":
      return event.row.valid_to ?? event.row.valid_from
    case "hardware_observation":
      return event.row.observed_date ?? ""
    case "transaction_blend":
      return event.row.transaction_date
    case "index_value":
      return event.row.timestamp
  }
}

/** The GPU an event's row names, or `undefined` for rows without one (index values, LLM prices). */
export const eventGpu = (event: MarketEvent): string | undefined =>
  "gpu_canonical_name" in event.row ? event.row.gpu_canonical_name : undefined
