import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { type RequestOrigin, requestOrigin } from "@gpu-market/core/adapters"
import type { IncomingMessage } from "node:http"

/**
 * Where a request's links lead: the configured base URL's origin and path, or, with none, the
 * origin the request came to, so an app listening on port 0, or reached by several names, hands
 * out links that lead back to it. Only the request's own `Host` is read, never `X-Forwarded-*`,
 * which any client can send: behind a proxy that rewrites the host or ends TLS, configure
 * `baseUrl`.
 */

/** `host[:port]`, a name or an IPv4 or bracketed IPv6 address, and nothing else (no user, no path). */
const HOST = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::\d{1,5})?$/

/** The origin a Node request came to: its `Host`, else the address and port it reached; `https:` over TLS. */
const nodeOrigin = (req: IncomingMessage): string => {
  const scheme = "encrypted" in req.socket && req.socket.encrypted === true ? "https" : "http"
  const host = req.headers.host
  if (host !== undefined && HOST.test(host)) return `${scheme}://${host}`
  const address = req.socket.localAddress
  if (address === undefined) return `${scheme}://localhost`
  return `${scheme}://${address.includes(":") ? `[${address}]` : address}:${req.socket.localPort}`
}

/** Where links lead for requests: the base URL's when one is configured, else each request's own. */
export interface Origins {
  /** The path every route is served under as well as without it (`/market`); "" without a base URL. */
  readonly prefix: string
  readonly ofNode: (req: IncomingMessage) => RequestOrigin
  readonly of: (request: HttpServerRequest.HttpServerRequest) => RequestOrigin
}

export const makeOrigins = (baseUrl: string | undefined): Origins => {
  if (baseUrl !== undefined) {
    const origin = requestOrigin(baseUrl)
    return { prefix: origin.prefix, ofNode: () => origin, of: () => origin }
  }
  const ofNode = (req: IncomingMessage): RequestOrigin => ({ origin: nodeOrigin(req), prefix: "" })
  return {
    prefix: "",
    ofNode,
    // A web request's URL is absolute (a fetch handler's); a Node request's is its path alone.
    of: (request) => URL.canParse(request.originalUrl)
      ? { origin: new URL(request.originalUrl).origin, prefix: "" }
      : ofNode(NodeHttpServerRequest.toIncomingMessage(request))
  }
}
