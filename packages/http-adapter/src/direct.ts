import type { MarketError, RequestOrigin } from "@gpu-market/core"
import { type Admission, bodyBytes, type ReadCall, replayOf, runAsFarAsItGoes } from "@gpu-market/core/adapters"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type * as Runtime from "effect/Runtime"
import { randomUUID } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"
import { type Answered, CLIENT_CLOSED_REQUEST, type Heard } from "./observe.js"
import { NOSNIFF } from "./nosniff.js"
import type { Replay } from "./replay.js"
import { asksExport } from "./export.js"
import { queryOf, rateHeaders } from "./request.js"
import { codingOf, encode, validate, varyWith } from "./transfer.js"

/**
 * The direct lane: the cold path of a Node server. A data page the replay cannot answer is
 * admitted and read in one run of the market's services, and its bytes written to the Node
 * response, without the platform's request, router, middleware and response objects, which
 * cost a busy server more than the page's own read. The answer is the app's to the byte: the
 * same validator, caching and coding headers (`validate`, `encode`), the rate-limit headers, `nosniff`, a
 * request id, `Vary: Origin` when CORS is on; it is kept for the replay as the app's would be.
 *
 * Only the plain case goes this way: a GET of a data route with no `Origin` (CORS answers belong
 * to the app) and no `If-None-Match` (a 304 does). A refusal or a read that fails is handed on to
 * the app with its admission and the read's failure noted, so the problem is the app's, the
 * request counted once and the read not made again.
 */

/** A data route the lane serves: its read, and its template for the request log and metrics. */
export interface DirectRoute {
  readonly path: string
  readonly call: ReadCall
}

/** What the lane needs of the app. */
export interface DirectOptions {
  readonly routes: ReadonlyArray<DirectRoute>
  /** The base URL's path (`/market`), served with and without it as the app is; "" for none. */
  readonly prefix: string
  /** Where a request's links lead (`origin.ts`). */
  readonly originOf: (req: IncomingMessage) => RequestOrigin
  /** Admits a request by its `Authorization` header (`admit`). */
  readonly admit: (authorization: string | undefined) => Effect.Effect<Admission, MarketError>
  readonly replay: Replay
  /** CORS is on: every answer varies by `Origin`, as `withCors` says of the app's. */
  readonly varyOrigin: boolean
  readonly runtime: Runtime.Runtime<never>
}

/** The lane of one app. */
export interface Direct {
  /**
   * Takes a plain data GET and returns true: it then answers it (and tells `answered`), or hands
   * it on to `next` with its admission noted. Returns false, having done nothing, for any other request.
   */
  readonly take: (req: IncomingMessage, res: ServerResponse, next: () => void, answered?: (answered: Answered) => void) => boolean
}

const JSON_TYPE = "application/json"

export const makeDirect = (options: DirectOptions): Direct => {
  const { prefix, originOf, admit, replay, varyOrigin, runtime } = options
  const routes = new Map(options.routes.map((route) => [route.path, route]))

  const take = (req: IncomingMessage, res: ServerResponse, next: () => void, answered?: (answered: Answered) => void): boolean => {
    if (req.method !== "GET" || req.headers["if-none-match"] !== undefined || req.headers.origin !== undefined) return false
    const url = req.url ?? ""
    const q = url.indexOf("?")
    const full = q < 0 ? url : url.slice(0, q)
    const route = routes.get(prefix !== "" && full.startsWith(`${prefix}/`) ? full.slice(prefix.length) : full)
    if (route === undefined) return false
    const arrived = performance.now()
    const record = (status: number, requestId: string, principalId: string | undefined) =>
      answered?.({ method: "GET", route: route.path, status, requestId, principalId, seconds: (performance.now() - arrived) / 1000 })

    const send = (admission: Admission, page: unknown, bytes: Uint8Array, headers: Record<string, string>, requestId: string) => {
      if (res.destroyed) return record(CLIENT_CLOSED_REQUEST, requestId, admission.principal.id)
      const sent = { ...headers, ...NOSNIFF, "content-type": JSON_TYPE, "content-length": String(bytes.length) }
      res.writeHead(200, sent)
      res.end(bytes)
      const replayable = replayOf(page)
      if (replayable !== undefined) replay.keep(req, replayable, admission.principal, route.path, sent, bytes)
      record(200, requestId, admission.principal.id)
    }

    const answer = (admission: Admission, page: unknown) => {
      const body = bodyBytes(page)
      const requestId = randomUUID()
      const { headers } = validate(undefined, undefined, {
        body, contentType: JSON_TYPE, headers: { ...rateHeaders(admission.status), "x-request-id": requestId }, caller: admission.principal
      })
      if (varyOrigin) headers.vary = varyWith(headers.vary, "Origin")
      const coding = codingOf(body.length, req.headers["accept-encoding"])
      if (coding === "identity") return send(admission, page, body, headers, requestId)
      encode(body, coding, headers.etag).then(
        (encoded) => guarded(admission, () => send(admission, page, encoded.bytes, { ...headers, ...encoded.headers }, requestId)),
        // The coder failed (it does not on bytes it was given): the app answers, and fails as it does.
        () => handOn(Either.right(admission))
      )
    }

    /**
     * Runs `write`; should it throw (a bug, as the app's defects are), the app answers instead
     * while nothing is sent yet (its 500, if it fails too), else the connection is cut: the
     * server never goes down with a request.
     */
    const guarded = (admission: Admission, write: () => void) => {
      try {
        write()
      } catch (error) {
        if (!res.headersSent) handOn(Either.right(admission))
        else res.destroy(error instanceof Error ? error : undefined)
      }
    }

    /**
     * The app answers, with the admission noted (and the read's failure, which it then renders
     * rather than reading again); not a client that has left meanwhile, which is recorded as the
     * app records it, 499: the app would wait for a socket that is gone.
     */
    const handOn = (admission: Either.Either<Admission, MarketError> | undefined, failure?: MarketError) => {
      if (res.destroyed) {
        return record(CLIENT_CLOSED_REQUEST, randomUUID(), admission !== undefined && Either.isRight(admission) ? admission.right.principal.id : undefined)
      }
      if (admission !== undefined) replay.note(req, admission, failure)
      next()
    }

    let admission = replay.noted(req)
    const settle = (exit: Exit.Exit<unknown, MarketError>) => {
      if (admission !== undefined && Either.isRight(admission) && Exit.isSuccess(exit)) {
        const admitted = admission.right
        return guarded(admitted, () => answer(admitted, exit.value))
      }
      // Refused, or the read failed: the app answers the problem (for a defect, its 500, reading again).
      const failure = Exit.isFailure(exit) && admission !== undefined && Either.isRight(admission) ? Cause.failureOption(exit.cause) : Option.none()
      handOn(admission, Option.getOrUndefined(failure))
    }

    const admitted = admission !== undefined ? Effect.succeed(admission) : Effect.tap(Effect.either(admit(req.headers.authorization)), (a) => {
      admission = a
    })
    const read = Effect.flatMap(admitted, (a) =>
      Either.isLeft(a) ? Effect.fail(a.left) : route.call({ principal: a.right.principal, query: queryOf(url), origin: originOf(req) }))
    // No tracer reports the services' spans here, as none does for the app behind a Node server.
    const started = runAsFarAsItGoes(runtime, Effect.withTracerEnabled(read, false))
    if (Exit.isExit(started)) settle(started)
    else started.addObserver(settle)
    return true
  }

  return { take }
}

/** An app's lanes before it: its replay and its direct lane. */
export interface Lanes {
  readonly replay: Replay
  readonly direct: Direct
}

/**
 * A Node request handler over an app's lanes: replayed answers first, then the direct lane, and
 * `handle` (the app's handler) for the rest and whatever those hand on.
 */
export const nodeLanes = (
  lanes: Lanes,
  handle: (req: IncomingMessage, res: ServerResponse) => void,
  heard: Heard = {}
) => {
  const { replay, direct } = lanes
  const directOrApp = (req: IncomingMessage, res: ServerResponse) => {
    if (!direct.take(req, res, () => handle(req, res), heard.answered)) handle(req, res)
  }
  return (req: IncomingMessage, res: ServerResponse): void => {
    // An export is the app's alone: the lanes answer pages.
    if (asksExport(req.url ?? "", req.headers.accept)) return handle(req, res)
    if (!replay.take(req, res, () => directOrApp(req, res), heard)) directOrApp(req, res)
  }
}
