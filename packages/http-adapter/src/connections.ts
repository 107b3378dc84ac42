import { createServer, type IncomingMessage, type OutgoingHttpHeader, type OutgoingHttpHeaders, type Server, ServerResponse } from "node:http"
import type { Socket } from "node:net"
import type { Duplex } from "node:stream"
import { randomUUID } from "node:crypto"
import type { ProblemError } from "@gpu-market/core/adapters"
import { NOSNIFF } from "./nosniff.js"
import { toProblem } from "./problem.js"

/**
 * The standalone server's connections: how long a client may take to send a request, how long
 * an idle connection stays open, what a client gets when Node's parser (or the server itself:
 * no `Host`, an `Expect` it cannot meet) refuses its request before the app sees it, and that a
 * body left unread is never read to keep a connection alive.
 */

/** How long clients may take; every field in milliseconds. */
export interface ServerTimeouts {
  /** To send a request's head (request line and headers); else 408. Default 10 000. */
  readonly headersMs: number
  /**
   * To send a whole request, head and body; else 408. Default 30 000: the largest body (16 KiB)
   * at 550 bytes a second. It bounds receiving the request only: the app takes what it takes.
   */
  readonly requestMs: number
  /** An idle keep-alive connection stays open; default 5 000 (behind a proxy, set it above the proxy's own idle timeout). */
  readonly keepAliveMs: number
}

/** The timeouts a server has unless told otherwise. */
export const DEFAULT_TIMEOUTS: ServerTimeouts = { headersMs: 10_000, requestMs: 30_000, keepAliveMs: 5_000 }

/** Why `timeouts` cannot work, or undefined: Node refuses a head timeout longer than the request's. */
export const timeoutsProblem = (timeouts: ServerTimeouts): string | undefined => {
  const names: Record<keyof ServerTimeouts, string> = { headersMs: "headers", requestMs: "request", keepAliveMs: "keep-alive" }
  for (const [key, name] of Object.entries(names)) {
    const ms = timeouts[key as keyof ServerTimeouts]
    if (!Number.isSafeInteger(ms) || ms <= 0) return `the ${name} timeout is ${ms} ms; expected a whole number of milliseconds above 0`
  }
  return timeouts.headersMs > timeouts.requestMs
    ? `the headers timeout (${timeouts.headersMs} ms) is longer than the request timeout (${timeouts.requestMs} ms) it is part of`
    : undefined
}

/** Whether a request's head announces a body (RFC 9112 §6.3): chunked, or a length above 0. */
const hasBody = (req: IncomingMessage): boolean =>
  req.headers["transfer-encoding"] !== undefined || (req.headers["content-length"] !== undefined && req.headers["content-length"] !== "0")

/**
 * A response that closes its connection when it is sent before the request's body has arrived
 * in full (a 413, a 401 before the body was read, any answer to a GET carrying a body), and
 * reads no more of that body: Node would otherwise read all of it, however large, to keep the
 * connection for the next request, or discard it as fast as it comes until the connection
 * closes. (Marked as being read, the body is not drained by Node; the connection, paused, takes
 * no more than its buffers hold.) A request framed without a body is
 * never cut short: an answer made within its `request` event (a page read from SQLite,
 * which waits for nothing) comes before Node has marked even such a request complete.
 */
class BodyAwareResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  override writeHead(statusCode: number, ...rest: Array<string | OutgoingHttpHeaders | Array<OutgoingHttpHeader> | undefined>): this {
    if (!this.req.complete && hasBody(this.req)) {
      this.shouldKeepAlive = false
      this.req.pause()
      // Marks the body as being read, so Node does not dump it (read it all and drop it) once the
      // answer is sent. `read(0)` set the same mark only while the stream's buffer had room: a
      // body that filled it before a slower answer (a Redis read under load) was dumped, 100 MB.
      // (`_consuming` is Node's own field, which its types do not name.)
      Reflect.set(this.req, "_consuming", true)
      this.req.socket.pause()
    }
    // Node takes `(status, headers)` and `(status, message, headers)`: the arguments go on as they came.
    return super.writeHead(statusCode, ...(rest as [string | undefined, (OutgoingHttpHeaders | Array<OutgoingHttpHeader>)?]))
  }
}

/** How long a connection stays open after its last answer, for the client to read it, unless the client closes it first. */
const LINGER_MS = 2_000

/**
 * Node closes a connection after its last answer with `destroySoon`: end it, and destroy it as
 * soon as the answer is written. Destroying a connection the client is still sending on (a body
 * the server did not read) resets it, and a client that meets the reset while still writing
 * loses the answer it has not read yet: a 413 or a 431 would reach no one. So the connection is
 * ended and left to the client to close, for `LINGER_MS` at most.
 */
const lingerOnClose = (socket: Socket) => {
  socket.destroySoon = () => {
    socket.end()
    const timer = setTimeout(() => socket.destroy(), LINGER_MS)
    timer.unref()
    socket.once("close", () => clearTimeout(timer))
  }
}

/** The problem Node's refusal of a request becomes, by the error's code. */
const refusalOf = (error: NodeJS.ErrnoException & { readonly reason?: string }, timeouts: ServerTimeouts): ProblemError => {
  switch (error.code) {
    case "HPE_HEADER_OVERFLOW":
      return { _tag: "HeaderFieldsTooLarge", detail: "the request's head (request line and headers) is larger than the server reads" }
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return { _tag: "HeaderFieldsTooLarge", detail: "the body's chunk extensions are larger than the server reads" }
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return {
        _tag: "RequestTimeout",
        detail: `the request did not arrive in time: the head within ${timeouts.headersMs / 1000} s, the whole request within ${timeouts.requestMs / 1000} s`
      }
    default:
      return { _tag: "MalformedRequest", detail: `the request is not valid HTTP/1.1${error.reason === undefined ? "" : `: ${error.reason}`}` }
  }
}

/** A problem as an answer's status, headers and body, under a fresh request id. */
const problemAnswer = (error: ProblemError) => {
  const requestId = randomUUID()
  const { problem, headers } = toProblem(error, requestId)
  const body = JSON.stringify(problem)
  return {
    problem,
    body,
    headers: {
      "content-type": "application/problem+json",
      "content-length": String(Buffer.byteLength(body)),
      "x-request-id": requestId,
      ...NOSNIFF,
      ...headers
    }
  }
}

/** A problem as raw HTTP/1.1 on a socket no response object owns, closing the connection after it. */
const rawProblem = (error: ProblemError): string => {
  const { problem, body, headers } = problemAnswer(error)
  const lines = [`HTTP/1.1 ${problem.status} ${problem.title}`, "connection: close", ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`)]
  return `${lines.join("\r\n")}\r\n\r\n${body}`
}

/**
 * Answers a request Node refused (`clientError`) with a problem, where the connection can still
 * take one: it is writable and no response on it has begun (the check Node's own default makes,
 * through the socket's current response). A connection reset needs no answer.
 */
const answerRefusal = (timeouts: ServerTimeouts) => (error: Error, socket: Duplex) => {
  const inFlight = (socket as { readonly _httpMessage?: ServerResponse })._httpMessage
  if ((error as NodeJS.ErrnoException).code === "ECONNRESET" || !socket.writable || inFlight?.headersSent === true) {
    socket.destroy()
    return
  }
  socket.write(rawProblem(refusalOf(error, timeouts)))
  ;(socket as Socket).destroySoon()
}

/** What Node takes for `100-continue` (and answers with a `100 Continue` before the request goes on): the same test here. */
const CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i

/**
 * What the server refuses of a request Node parsed, before the app sees it, or
 * undefined. HTTP/1.1 requires `Host` (RFC 9112 §3.2: 400 without it), and an expectation other
 * than `100-continue` cannot be met (RFC 9110 §10.1.1: 417); HTTP/1.0 has neither rule, and
 * ignores `Expect`.
 */
const refusalAtTheDoor = (req: IncomingMessage): ProblemError | undefined => {
  if (req.httpVersion !== "1.1") return undefined
  if (req.headers.host === undefined) return { _tag: "MalformedRequest", detail: "the request has no Host header, which HTTP/1.1 requires" }
  const expect = req.headers.expect
  return expect !== undefined && !CONTINUE.test(expect)
    ? { _tag: "ExpectationFailed", detail: `the server meets no expectation but 100-continue; got Expect: ${JSON.stringify(expect)}` }
    : undefined
}

/**
 * `handle` behind the server's own refusals (`refusalAtTheDoor`), each answered with its problem.
 * A request without `Host` closes its connection, as Node's own refusal does; a 417 keeps it,
 * for the client to send the request again without the expectation.
 */
export const atTheDoor = (handle: (req: IncomingMessage, res: ServerResponse) => void) => (req: IncomingMessage, res: ServerResponse): void => {
  const refusal = refusalAtTheDoor(req)
  if (refusal === undefined) return handle(req, res)
  const { problem, body, headers } = problemAnswer(refusal)
  res.writeHead(problem.status, refusal._tag === "MalformedRequest" ? { ...headers, connection: "close" } : headers)
  res.end(body)
}

/**
 * A Node HTTP server with these timeouts, problem answers to what Node refuses, and unread
 * bodies left unread. Node's own bare answers are turned off (`requireHostHeader`, the default
 * 417 of `checkExpectation`): both events reach `handle`, which `atTheDoor` puts in front of.
 */
export const createHttpServer = (timeouts: ServerTimeouts, handle: (req: IncomingMessage, res: ServerResponse) => void): Server => {
  const server = createServer({
    headersTimeout: timeouts.headersMs,
    requestTimeout: timeouts.requestMs,
    keepAliveTimeout: timeouts.keepAliveMs,
    // How often Node looks for requests past their timeouts (default 30 s): a timeout is kept to within a second.
    connectionsCheckingInterval: Math.min(1_000, timeouts.headersMs),
    requireHostHeader: false,
    ServerResponse: BodyAwareResponse
  })
  server.on("connection", lingerOnClose)
  server.on("clientError", answerRefusal(timeouts))
  const door = atTheDoor(handle)
  server.on("request", door)
  server.on("checkExpectation", door)
  return server
}
