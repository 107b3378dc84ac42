import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { LlmTokenPrice } from "../schema/llm-token-price.js"
import type { MarketEvent } from "../schema/market-event.js"
import type { RentalPrice } from "../schema/rental-price.js"
import type { VersionChanges, VersionView } from "./versions.js"
import type { StorageError } from "./errors.js"

/**
 * The durable log of market changes behind the change feed. Every write of a row the feed
 * reports appends its events in the same atomic step as the rows (SQLite: the same transaction;
 * Redis: the same script), so an event exists exactly when its write committed. Events of one
 * data type come in the order they were written; events of different types may interleave in
 * another order (Redis keeps a stream per type), as the conformance suite holds every backend to.
 * A position names a point of the log: a subscriber that saw up to it resumes after it.
 */

/** One event as the log holds it: its own id in the log, and the event. */
export interface LoggedEvent {
  /** The event's id in the log (SQLite: the row id; Redis: the stream entry id of its type's stream). */
  readonly id: string
  readonly event: MarketEvent
}

/** A position older than what the log retains: events after it were trimmed, so resuming would lose some. */
export class EventLogTrimmed extends Schema.TaggedError<EventLogTrimmed>()("EventLogTrimmed", {
  position: Schema.String
}) {}

/**
 * How a backend's positions work. They are opaque text to everyone else: SQLite's a row id,
 * Redis' one stream id per data type, since each type's stream lives in the slot of its rows.
 */
export interface EventPositions {
  /** The position before every event. */
  readonly start: string
  /** The canonical form of a position a client sent (`Last-Event-ID`), or `undefined` if it is not one. */
  readonly parse: (text: string) => string | undefined
  /** Whether `event` lies at or before `position` (a subscriber at `position` has seen it). */
  readonly covers: (position: string, event: LoggedEvent) => boolean
  /** The position just after `event`, from `position` at or after the one before it. */
  readonly advance: (position: string, event: LoggedEvent) => string
}

/** The change feed's log. */
export class EventLogStore extends Context.Tag("Market/Storage/EventLogStore")<
  EventLogStore,
  {
    readonly positions: EventPositions
    /** The position after the newest event: a subscriber starting now follows from here. */
    readonly head: Effect.Effect<string, StorageError>
    /**
     * Up to `limit` events after `position`, oldest first; none when it is the head. Fails with
     * `EventLogTrimmed` when events after `position` were trimmed away.
     */
    readonly read: (position: string, limit: number) => Effect.Effect<ReadonlyArray<LoggedEvent>, StorageError | EventLogTrimmed>
    /**
     * `read`, except that when nothing follows `position` it first waits for an event a while
     * (a blocking read on Redis, one poll interval on SQLite), and may then answer none. One
     * follower per process (`Feed`) calls it in a loop; it is how a write in any process
     * reaches subscribers in this one.
     */
    readonly follow: (position: string, limit: number) => Effect.Effect<ReadonlyArray<LoggedEvent>, StorageError | EventLogTrimmed>
  }
>() {}

/** An event of a versioned table: a market event whose row is one of the table's. */
export type VersionEvent<Row> = MarketEvent & { readonly row: Row }

/** The kinds of event a versioned table logs, each made from its row: a new row, and a withdrawal. */
export interface EventTypes<Row> {
  readonly row: (row: Row) => VersionEvent<Row>
  readonly withdrawal: (row: Row) => VersionEvent<Row>
}

/** The events of the rental price table. */
export const rentalPriceEvents: EventTypes<RentalPrice> = {
  row: (row) => ({ type: "rental_price", row }),
  withdrawal: (row) => ({ type: "rental_price_withdrawal", row })
}

/** The events of the LLM token price table. */
export const llmTokenPriceEvents: EventTypes<LlmTokenPrice> = {
  row: (row) => ({ type: "llm_token_price", row }),
  withdrawal: (row) => ({ type: "llm_token_price_withdrawal", row })
}

/**
 * Events a versioned write logs: each opened row (a price change or a new priced thing), and
 * each closed current row with no row of its priced thing opened beside it (a withdrawal), as
 * stored after the write.
 */
export const versionEvents = <Row extends { readonly valid_to: string | null }>(
  types: EventTypes<Row>,
  keys: { readonly key: (row: Row) => string; readonly base: (row: Row) => string },
  view: Pick<VersionView<Row>, "current">,
  changes: Pick<VersionChanges<Row>, "open" | "close" | "restate">
): Array<VersionEvent<Row>> => {
  const events: Array<VersionEvent<Row>> = []
  const reopened = new Set(changes.open.map(keys.base))
  // A row the change restates is closed as restated.
  const current = new Map([...view.current, ...(changes.restate ?? [])].map((r) => [keys.key(r), r]))
  for (const c of changes.close) {
    const row = current.get(c.key)
    if (row !== undefined && !reopened.has(keys.base(row))) {
      events.push(types.withdrawal({ ...row, valid_to: c.valid_to }))
    }
  }
  for (const row of changes.open) events.push(types.row(row))
  return events
}

/** Where a store's writes hand the events they log, inside their atomic step. */
export type EventSink = (events: ReadonlyArray<MarketEvent>) => void

/** How many events a log keeps by default: at least the newest 100,000 (per data type on Redis). */
export const DEFAULT_EVENT_RETENTION = 100_000
