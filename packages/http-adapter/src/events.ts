import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { type FeedItem, feedMessage } from "@gpu-market/core"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"

/**
 * The change feed as Server-Sent Events (`GET /v2/events`): each event a message whose `id` is
 * the position to resume after it (`Last-Event-ID`), whose `event` is its type and whose `data`
 * is the feed message as JSON; a comment line every heartbeat interval, so proxies and load
 * balancers do not close a quiet stream; a dropped subscription ends with an `event: dropped`
 * message carrying its id, then the response ends.
 */

/** How often a quiet stream gets a `: ping` comment, by default: under the 30–60 s idle timeouts proxies use. */
export const DEFAULT_HEARTBEAT_MS = 15_000

/** The SSE text of one item. */
export const sseOf = (item: FeedItem): string => {
  const message = feedMessage(item)
  return `id: ${message.id}\nevent: ${message.type}\ndata: ${JSON.stringify(message)}\n\n`
}

/**
 * The response of a subscription: `text/event-stream`, never cached or buffered by a proxy,
 * opening with a comment (so the headers and a first byte leave at once) and a reconnection
 * delay for `EventSource`, then the items with heartbeats between them.
 */
export const sseResponse = (
  items: Stream.Stream<FeedItem>,
  heartbeatMs: number,
  headers: Record<string, string>
): HttpServerResponse.HttpServerResponse => {
  const heartbeats = Stream.repeatEffect(Effect.as(Effect.sleep(heartbeatMs), ": ping\n\n"))
  const body = Stream.make(": gpu-market change feed\nretry: 1000\n\n").pipe(
    Stream.concat(Stream.merge(Stream.map(items, sseOf), heartbeats, { haltStrategy: "left" })),
    Stream.encodeText
  )
  return HttpServerResponse.stream(body, {
    contentType: "text/event-stream",
    headers: { ...headers, "cache-control": "no-store", "x-accel-buffering": "no" }
  })
}
