import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { eventDataType, type FeedItem, feedMessage } from "@gpu-market/core"
import * as Chunk from "effect/Chunk"
import * as Stream from "effect/Stream"

/**
 * The change feed as Server-Sent Events (`GET /v2/events`): each event a message whose `id` is
 * the position to resume after it (`Last-Event-ID`), whose `event` is its type and whose `data`
 * is the feed message as JSON; a comment line every heartbeat interval, so proxies and load
 * balancers do not close a quiet stream; a dropped subscription ends with an `event: dropped`
 * message carrying its id, then the response ends.
 */

/** The change feed's path. */
export const EVENTS_PATH = "/v2/events"

/**
 * How often a quiet stream gets a `: ping` comment, by default: under the 30–60 s idle timeouts
 * proxies use. Pings go out on the feed's idle ticks, so the interval is rounded up to a whole
 * tick (`IDLE_TICK_MS`, 1 s).
 */
export const DEFAULT_HEARTBEAT_MS = 15_000

/** What is wrong with a `feedHeartbeatMs` option, if anything: it must be a whole number of ms above 0. */
export const heartbeatProblem = (ms: number | undefined): string | undefined =>
  ms === undefined || (Number.isSafeInteger(ms) && ms > 0) ? undefined : `feedHeartbeatMs must be a whole number of ms above 0, got ${ms}`

/** The JSON of each event's row, made once however many subscribers it goes to. */
const rowJson = new WeakMap<object, string>()

/** The SSE text of an event or a drop: the message's JSON, with the row's made once per event. */
const sseOf = (item: Exclude<FeedItem, { readonly _tag: "idle" }>): string => {
  if (item._tag === "dropped") {
    const message = feedMessage(item)
    return `id: ${message.id}\nevent: dropped\ndata: ${JSON.stringify(message)}\n\n`
  }
  const { event } = item
  let row = rowJson.get(event)
  if (row === undefined) rowJson.set(event, row = JSON.stringify(event.row))
  const id = JSON.stringify(item.id)
  return `id: ${item.id}\nevent: ${event.type}\ndata: {"id":${id},"type":"${event.type}","data_type":"${eventDataType[event.type]}","row":${row}}\n\n`
}

const encoder = new TextEncoder()

/**
 * The bytes of each event's message with the id it was last sent with: subscribers that are
 * caught up send an event with the same id, so a write to many of them is encoded once.
 */
const encoded = new WeakMap<object, { readonly id: string; readonly bytes: Uint8Array }>()
const bytesOf = (item: Extract<FeedItem, { readonly _tag: "event" }>): Uint8Array => {
  const hit = encoded.get(item.event)
  if (hit !== undefined && hit.id === item.id) return hit.bytes
  const bytes = encoder.encode(sseOf(item))
  encoded.set(item.event, { id: item.id, bytes })
  return bytes
}

/**
 * The response of a subscription: `text/event-stream`, never cached or buffered by a proxy,
 * opening with a comment and a reconnection delay for `EventSource` (the feed yields at once,
 * so the headers leave at once), then the items, each chunk of them one write, with heartbeats
 * between them.
 */
export const sseResponse = (
  items: Stream.Stream<FeedItem>,
  heartbeatMs: number,
  headers: Record<string, string>
): HttpServerResponse.HttpServerResponse => {
  // Heartbeats ride on the feed's idle ticks (one timer for every subscriber, not a merged timer
  // stream each, which costs more than the events): a comment once `heartbeatMs` passed without
  // anything written.
  let opened = false
  let written = Date.now()
  const body = Stream.mapChunks(items, (chunk) => {
    const now = Date.now()
    const only = Chunk.size(chunk) === 1 ? Chunk.unsafeHead(chunk) : undefined
    if (opened && only !== undefined && only._tag === "event") {
      written = now
      return Chunk.of(bytesOf(only))
    }
    let text = opened ? "" : ": gpu-market change feed\nretry: 1000\n\n"
    opened = true
    for (const item of chunk) {
      if (item._tag !== "idle") text += sseOf(item)
      else if (now - written >= heartbeatMs) text += ": ping\n\n"
    }
    if (text === "") return Chunk.empty()
    written = now
    return Chunk.of(encoder.encode(text))
  })
  return HttpServerResponse.stream(body, {
    contentType: "text/event-stream",
    headers: { ...headers, "cache-control": "no-store", "x-accel-buffering": "no" }
  })
}
