import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type { Principal } from "@gpu-market/core"
import type { RequestOrigin } from "@gpu-market/core/adapters"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as Runtime from "effect/Runtime"
import type { IncomingMessage, ServerResponse } from "node:http"
import type { Cors } from "./cors.js"
import { NOSNIFF } from "./nosniff.js"
import { codingOf, compressible, encode, varyWith } from "./transfer.js"

/**
 * The lean request path's two ends: what a data request is to the app (`Exchange`: method, target,
 * the headers its answer follows from, the origin its links lead to) and what it answers
 * (`Answer`: status, headers, bytes). The Node server writes an answer to its `ServerResponse`
 * directly (`writeAnswer`); the platform app, which the fetch handler and an embedding app mount,
 * turns it into an `HttpServerResponse` (`toResponse`). Both run the same function in between.
 */

/** One request as the data routes read it. */
export interface Exchange {
  readonly method: string
  /** Path and query, as the request line has it (the base URL's prefix already taken off). */
  readonly url: string
  readonly headers: {
    readonly authorization?: string | undefined
    readonly "if-none-match"?: string | undefined
    readonly "accept-encoding"?: string | undefined
    readonly origin?: string | undefined
  }
  /** Where its links lead (`origin.ts`). */
  readonly origin: RequestOrigin
}

/** One answer: its status, headers, and body (none on a 304). */
export interface Answer {
  readonly status: number
  readonly headers: Record<string, string>
  readonly contentType: string
  readonly body: Uint8Array | undefined
  /** Who it was made for, once admitted: the request log names them. */
  readonly caller?: Principal
}

/** `answer` as the platform's response, for the app a host mounts. */
export const toResponse = (answer: Answer): HttpServerResponse.HttpServerResponse =>
  answer.body === undefined
    ? HttpServerResponse.empty({ status: answer.status, headers: answer.headers })
    : HttpServerResponse.uint8Array(answer.body, { status: answer.status, contentType: answer.contentType, headers: answer.headers })

/**
 * `answer` as it goes out of the lean path: what the platform app's middleware does to the same
 * answer (`withCompression`, `withCors`, `withNosniff`), in the same order and with the same
 * functions: coded when the client asks and it is worth it, with the CORS headers for its
 * origin, and `nosniff`.
 */
export const finish = (exchange: Exchange, answer: Answer, cors: Cors | undefined): Effect.Effect<Answer> => {
  const { body } = answer
  const withHeaders = (coded: Answer): Answer => {
    const headers = cors === undefined ? coded.headers : { ...coded.headers, ...cors.headers(exchange.headers.origin, coded.headers["vary"]) }
    return { ...coded, headers: { ...headers, ...NOSNIFF } }
  }
  if (body === undefined || !compressible(answer.contentType)) return Effect.succeed(withHeaders(answer))
  const varied: Record<string, string> = { ...answer.headers, vary: varyWith(answer.headers["vary"], "Accept-Encoding") }
  const coding = codingOf(body.length, exchange.headers["accept-encoding"])
  if (coding === "identity") return Effect.succeed(withHeaders({ ...answer, headers: varied }))
  return Effect.map(Effect.promise(() => encode(body, coding, varied["etag"])), (encoded) =>
    withHeaders({ ...answer, body: encoded.bytes, headers: { ...varied, ...encoded.headers } }))
}

/** Writes `answer` to a Node response, with the `Content-Type` and `Content-Length` of its body. */
export const writeAnswer = (res: ServerResponse, answer: Answer): void => {
  if (res.writableEnded) return
  const { body } = answer
  res.writeHead(answer.status, body === undefined
    ? answer.headers
    : { ...answer.headers, "content-type": answer.contentType, "content-length": String(body.length) })
  res.end(body)
}

/** A data request's route on the lean path: its template, for the request log, and its answer. */
export interface LeanRoute {
  readonly path: string
  readonly answer: Effect.Effect<Answer>
}

/**
 * A Node `(req, res)` listener: a data route's GET on the lean path (`lean`), run as one fiber of
 * `runtime` and written directly, anything else to `platform` (the app through the platform's
 * Node handler). `observe` logs and counts the lean answers (the standalone server's request
 * log). A client that leaves first interrupts the fiber; nothing is written then.
 */
export const nodeListener = (
  lean: (req: IncomingMessage) => LeanRoute | undefined,
  platform: (req: IncomingMessage, res: ServerResponse) => void,
  runtime: Runtime.Runtime<never>,
  observe?: (method: string, route: string, answer: Effect.Effect<Answer>) => Effect.Effect<Answer>
) => {
  const run = Runtime.runFork(runtime)
  return (req: IncomingMessage, res: ServerResponse): void => {
    const route = lean(req)
    if (route === undefined) return platform(req, res)
    const fiber = run(observe === undefined ? route.answer : observe("GET", route.path, route.answer))
    // A page read without waiting (SQLite, memory) has its answer already: written at once.
    const done = fiber.unsafePoll()
    if (done !== null) {
      if (Exit.isSuccess(done)) writeAnswer(res, done.value)
      return
    }
    fiber.addObserver((exit) => {
      if (Exit.isSuccess(exit)) writeAnswer(res, exit.value)
    })
    res.on("close", () => {
      if (!res.writableEnded) fiber.unsafeInterruptAsFork(FiberId.none)
    })
  }
}
