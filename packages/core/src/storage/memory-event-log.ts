import * as Effect from "effect/Effect"
import type { MarketEvent } from "../schema/market-event.js"
import { DEFAULT_EVENT_RETENTION, EventLogTrimmed, type EventLogStore, type EventPositions, type EventSink, type LoggedEvent } from "./event-log.js"

/**
 * The in-memory event log: a sequence numbered from 1, trimmed to the newest `retention`
 * events. The memory stores append to it as they write (`sink`); one process holds it, so a
 * follower waits one short poll for news.
 */

/** Positions that are event numbers: SQLite's and the memory log's. */
export const numberedPositions: EventPositions = {
  start: "0",
  parse: (text) => (/^(0|[1-9]\d{0,15})$/.test(text) ? text : undefined),
  covers: (position, event) => Number(event.id) <= Number(position),
  advance: (position, event) => (Number(event.id) > Number(position) ? event.id : position)
}

/** How long the memory log's follower waits before it looks again. */
const POLL_MS = 25

/** A fresh in-memory log, and the sink its stores append through. */
export const makeMemoryEventLog = (retention = DEFAULT_EVENT_RETENTION): {
  readonly sink: EventSink
  readonly store: EventLogStore["Type"]
} => {
  // The events kept are `events[start..]`; the ones before `start` are trimmed, and the array is
  // copied down only once they are as many as the kept ones, so an append costs O(1) on average.
  let events: Array<LoggedEvent> = []
  let start = 0
  let last = 0
  const read = (position: string, limit: number) => Effect.suspend(() => {
    const after = Number(position)
    const kept = events[start]
    const first = kept === undefined ? last + 1 : Number(kept.id)
    if (after < first - 1 || after > last) return Effect.fail(new EventLogTrimmed({ position }))
    const from = start + after - first + 1
    return Effect.succeed(events.slice(from, from + limit))
  })
  return {
    sink: (logged: ReadonlyArray<MarketEvent>) => {
      for (const event of logged) events.push({ id: String(++last), event })
      start = Math.max(start, events.length - retention)
      if (start >= retention) {
        events = events.slice(start)
        start = 0
      }
    },
    store: {
      positions: numberedPositions,
      head: Effect.sync(() => String(last)),
      read,
      follow: (position, limit) =>
        Effect.flatMap(read(position, limit), (found) =>
          found.length > 0 ? Effect.succeed(found) : Effect.zipRight(Effect.sleep(POLL_MS), read(position, limit)))
    }
  }
}
