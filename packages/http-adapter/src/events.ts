import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { type FeedItem, feedMessage } from "@gpu-market/core"
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

/**
 * The largest write to a subscriber's socket. The server writes the next one only once the socket
 * has taken the last (below its high-water mark, 16 KiB), so what a subscriber holds in the
 * process is under 32 KiB (or one larger event) however slow its client; the events it has yet
 * to take wait in the feed's ring, shared.
 */
export const MAX_WRITE_BYTES = 16_384

const encoder = new TextEncoder()
const PREAMBLE = encoder.encode(": gpu-market change feed\nretry: 1000\n\n")
const PING = encoder.encode(": ping\n\n")

/** The SSE text of an event or a drop. */
const sseOf = (item: Exclude<FeedItem, { readonly _tag: "idle" }>): string => {
  const message = feedMessage(item)
  return `id: ${item.id}\nevent: ${message.type}\ndata: ${JSON.stringify(message)}\n\n`
}

/**
 * Each event's frame with the id it was made for: every subscriber that follows the ring from
 * where it started sends an event with the same id, so the frame is encoded once and its bytes
 * shared by all of them. It lives as long as the event it is keyed by, which the ring holds.
 */
const frames = new WeakMap<object, { readonly id: string; readonly bytes: Uint8Array }>()
const frameOf = (item: Extract<FeedItem, { readonly _tag: "event" }>): Uint8Array => {
  const hit = frames.get(item.event)
  if (hit !== undefined && hit.id === item.id) return hit.bytes
  const bytes = encoder.encode(sseOf(item))
  frames.set(item.event, { id: item.id, bytes })
  return bytes
}

/** One write: its frames, copied together when there are several. */
const joined = (frames: ReadonlyArray<Uint8Array>): Uint8Array => frames.length === 1 ? frames[0]! : Buffer.concat(frames)

/**
 * The response of a subscription: `text/event-stream`, never cached or buffered by a proxy,
 * opening with a comment and a reconnection delay for `EventSource` (the feed yields at once,
 * so the headers leave at once), then the items in writes of at most `MAX_WRITE_BYTES`, each
 * written once the socket has taken the one before, with heartbeats between them.
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
  /** The writes of a chunk of items: their frames, grouped up to `MAX_WRITE_BYTES`. */
  const writesOf = (chunk: Chunk.Chunk<FeedItem>): Chunk.Chunk<ReadonlyArray<Uint8Array>> => {
    const now = Date.now()
    const writes: Array<ReadonlyArray<Uint8Array>> = []
    let group: Array<Uint8Array> = []
    let size = 0
    const add = (bytes: Uint8Array) => {
      if (size > 0 && size + bytes.length > MAX_WRITE_BYTES) {
        writes.push(group)
        group = []
        size = 0
      }
      group.push(bytes)
      size += bytes.length
    }
    if (!opened) add(PREAMBLE)
    opened = true
    for (const item of chunk) {
      if (item._tag === "event") add(frameOf(item))
      else if (item._tag === "dropped") add(encoder.encode(sseOf(item)))
      else if (now - written >= heartbeatMs) add(PING)
    }
    if (size > 0) {
      writes.push(group)
      written = now
    }
    return Chunk.unsafeFromArray(writes)
  }
  // One write per chunk of the body: the server waits for the socket to drain after a write that
  // filled it, before it takes the next.
  const body = items.pipe(Stream.mapChunks(writesOf), Stream.rechunk(1), Stream.map(joined))
  return HttpServerResponse.stream(body, {
    contentType: "text/event-stream",
    headers: { ...headers, "cache-control": "no-store", "x-accel-buffering": "no" }
  })
}
