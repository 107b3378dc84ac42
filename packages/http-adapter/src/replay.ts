import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import type * as HttpApp from "@effect/platform/HttpApp"
import type { DataType, MarketError, Principal, RateLimitCount, StorageError } from "@gpu-market/core"
import {
  type Admission, boundedCache, type Replayable, runAsFarAsItGoes, type StampedCount, startedTogether
} from "@gpu-market/core/adapters"
import type { StampedCounts } from "@gpu-market/core/storage"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import type * as Runtime from "effect/Runtime"
import { randomUUID } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"
import { CLIENT_CLOSED_REQUEST, currentRoute, type Heard } from "./observe.js"
import { rateHeaders } from "./request.js"
import { audienceOf } from "./transfer.js"

/**
 * Replayed answers: the hot path of a Node server. A `/latest` answer (`Replayable`: nothing in
 * it moves with the clock) is kept whole, compressed and with every header, under what its bytes
 * follow from: the request target, the `Authorization`, `Accept-Encoding` and `Origin` headers.
 * The same request again is admitted as any other (the token authenticated under the token
 * store's version, the rate limit counted) while the data version of the page's type is read
 * beside it, in one round trip where the store pipelines; when the caller still sees what the
 * answer was made for and the version still holds, the kept bytes go out with this request's
 * rate-limit headers and request id, and nothing else runs. Anything else (another principal or
 * entitlements, a write since, a refusal, a conditional request) goes to the app, with the
 * admission already made, so a request is counted once.
 *
 * An answer replayed also keeps a stamp of the store read before its checks and the principal
 * they admitted: while the stamp stays the same, nothing stored changed (no token put or revoked,
 * no write to the type), so the same request again is only counted against the rate limit. Over
 * a store that takes a `StoreChangeStamp` at once (SQLite) that is a count and no read; over one
 * with `StoreStampedCounts` (Redis) the count and the stamp travel in one script, shared by the
 * requests of one event-loop turn, and the request runs no fiber.
 */

/** An answer kept to be replayed, under the data version its page was read at (`Replayable`). */
interface Recorded extends Replayable {
  /** The route template the app routed it by, for the request log and metrics. */
  readonly route: string
  /** `audienceOf` the caller it was made for. */
  readonly audience: string
  /** Its headers, less those of one request (rate limit, request id). */
  readonly headers: Readonly<Record<string, string>>
  readonly body: Uint8Array
  /** The stamp read before the last checks that replayed it, and the principal they admitted. */
  checked?: { readonly stamp: string; readonly principal: Principal }
}

/** What a replay checks: the request's admission, and the data version of the page's type now. */
type Checked = readonly [Either.Either<Admission, MarketError>, Either.Either<string, StorageError>]

/** Headers that belong to one request and are set afresh on every replay. */
const PER_REQUEST = new Set(["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "x-request-id", "date"])

/** What a header counts for in the budget besides its text. */
const HEADER_OVERHEAD = 32

type HeaderValue = string | ReadonlyArray<string> | undefined

/**
 * The key of a request's answer: everything its bytes follow from that the replay does not check
 * itself; `Host` too, which the links follow when no base URL is configured.
 */
const keyOf = (url: string, headers: Readonly<Record<string, HeaderValue>>): string =>
  `${url}\n${String(headers["authorization"] ?? "")}\n${String(headers["accept-encoding"] ?? "")}\n${String(headers["origin"] ?? "")}\n${String(headers["host"] ?? "")}`

/** The replay of one app: what the server's request handler and the app's data routes share. */
export interface Replay {
  /**
   * Takes a request it holds an answer for and returns true: it then answers it (and tells
   * `heard.replayed`), or hands it on to `next` with its admission noted (a client that left meanwhile
   * is told to `heard.answered` as 499 instead). Returns false, having done
   * nothing, for any other request.
   */
  readonly take: (req: IncomingMessage, res: ServerResponse, next: () => void, heard?: Heard) => boolean
  /** The admission a request handed on already carries (by the request's `source`). */
  readonly admissionOf: (request: HttpServerRequest.HttpServerRequest) => Either.Either<Admission, MarketError> | undefined
  /** The admission noted for a Node request, by `take` or `note`. */
  readonly noted: (req: IncomingMessage) => Either.Either<Admission, MarketError> | undefined
  /**
   * Notes a request's admission, so the app it is handed on to does not admit (and count) it
   * again, and the failure of its read if it was read, so the app answers it without reading again.
   */
  readonly note: (req: IncomingMessage, admission: Either.Either<Admission, MarketError>, failure?: MarketError) => void
  /** The failure of the read a request handed on already made (by the request's `source`). */
  readonly failureOf: (request: HttpServerRequest.HttpServerRequest) => MarketError | undefined
  /**
   * Keeps an answer given without the app (the direct lane) as `recording` keeps the app's:
   * `headers` as sent, of which those of one request are dropped.
   */
  readonly keep: (
    req: IncomingMessage, replay: Replayable, principal: Principal, route: string, headers: Readonly<Record<string, string>>, body: Uint8Array
  ) => void
  /** Notes that the answer the app is building for `request` may be replayed, for the caller `principal`. */
  readonly mark: (request: HttpServerRequest.HttpServerRequest, replay: Replayable, principal: Principal) => void
  /** Answers kept and their counted bytes; requests replayed, and those taken but handed on to the app. */
  readonly stats: () => { readonly entries: number; readonly bytes: number; readonly replayed: number; readonly handedOn: number }
  /** The app, keeping every marked answer it gives with status 200 and bytes in hand. */
  readonly recording: <E, R>(app: HttpApp.Default<E, R>) => HttpApp.Default<E, R | HttpServerRequest.HttpServerRequest>
}

/** How a replay admits requests. */
export interface Admitting {
  /** Admits a request by its `Authorization` header (`admit`). */
  readonly admit: (authorization: string | undefined) => Effect.Effect<Admission, MarketError>
  /** Admits a principal whose token's lookup still stands: its rate limit only (`charge`). */
  readonly charge: (principal: Principal) => Effect.Effect<Admission, MarketError>
  /** The storage's `StoreChangeStamp`, where it has one. */
  readonly changeStamp: (() => string) | undefined
  /** Where the storage counts and stamps in one round trip (`StoreStampedCounts`). */
  readonly stamped: Stamped | undefined
}

/** A request counted and stamped in one round trip, and what follows when the stamp moved. */
export interface Stamped {
  /** The storage's `StoreStampedCounts`. */
  readonly counts: StampedCounts
  /** Counts a request of `principal` for a page of `type`, with its stamp (`countStamped`). */
  readonly count: (principal: Principal, type: DataType) => Promise<Either.Either<StampedCount, MarketError>>
  /** The admission of a request of `principal` counted as `counted` (`judgeCount`). */
  readonly judge: (principal: Principal, counted: RateLimitCount) => Either.Either<Admission, MarketError>
  /** Admits a request already counted under `guess` (`admitCounted`). */
  readonly admitCounted: (authorization: string | undefined, guess: Principal, counted: RateLimitCount) => Effect.Effect<Admission, MarketError>
}

/** The storage's change stamp now, or undefined when it has none or cannot take one. */
const stampOf = (changeStamp: (() => string) | undefined): string | undefined => {
  if (changeStamp === undefined) return undefined
  try {
    return changeStamp()
  } catch {
    return undefined
  }
}

/**
 * A replay within `budget` bytes (0: off), admitting requests as `admitting` says in `runtime`.
 */
export const makeReplay = (budget: number, admitting: Admitting, runtime: Runtime.Runtime<never>): Replay => {
  const { admit, charge, changeStamp, stamped } = admitting
  const kept = boundedCache<Recorded>(budget, (key, r) => {
    let size = key.length + r.body.length
    for (const name in r.headers) size += name.length + r.headers[name]!.length + HEADER_OVERHEAD
    return size
  })
  const admissions = new WeakMap<object, Either.Either<Admission, MarketError>>()
  const failures = new WeakMap<object, MarketError>()
  const marks = new WeakMap<object, { readonly replay: Replayable; readonly audience: string }>()
  let replays = 0
  let handedOn = 0

  const take = (req: IncomingMessage, res: ServerResponse, next: () => void, heard: Heard = {}): boolean => {
    if (budget === 0 || req.method !== "GET" || req.headers["if-none-match"] !== undefined) return false
    const key = keyOf(req.url ?? "", req.headers)
    const entry = kept.peek(key)
    if (entry === undefined) return false
    const arrived = performance.now()
    const authorization = req.headers.authorization
    const handOn = () => {
      handedOn++
      // A client that left meanwhile (the checks waited for storage) is recorded as the app
      // records it, 499: the app would wait for a socket that is gone.
      if (res.destroyed) {
        const admission = admissions.get(req)
        return heard.answered?.({
          method: "GET", route: entry.route, status: CLIENT_CLOSED_REQUEST, requestId: randomUUID(),
          principalId: admission !== undefined && Either.isRight(admission) ? admission.right.principal.id : undefined,
          seconds: (performance.now() - arrived) / 1000
        })
      }
      next()
    }
    const answer = (admission: Admission) => {
      const requestId = randomUUID()
      res.writeHead(200, { ...entry.headers, ...rateHeaders(admission.status), "x-request-id": requestId })
      res.end(entry.body)
      replays++
      heard.replayed?.({
        method: "GET", route: entry.route, status: 200, requestId, principalId: admission.principal.id,
        seconds: (performance.now() - arrived) / 1000
      })
    }
    /** Settles the checks; a replay they allow records `stamp` (read before them) with the principal they admitted. */
    const settle = (exit: Exit.Exit<Checked>, stamp: string | undefined) => {
      if (Exit.isFailure(exit)) return handOn()
      const [admission, version] = exit.value
      if (Either.isRight(admission) && Either.isRight(version) && version.right === entry.version &&
        audienceOf(admission.right.principal) === entry.audience && kept.get(key, entry.version) !== undefined) {
        if (stamp !== undefined) entry.checked = { stamp, principal: admission.right.principal }
        return answer(admission.right)
      }
      if (Either.isRight(version) && version.right !== entry.version) kept.delete(key)
      admissions.set(req, admission)
      handOn()
    }
    /** Runs `checks`: settled right here when every store answers at once (SQLite, memory), else when the reads come back. */
    const check = <A>(checks: Effect.Effect<A>, settled: (exit: Exit.Exit<A>) => void) => {
      const started = runAsFarAsItGoes(runtime, checks)
      if (Exit.isExit(started)) settled(started)
      else started.addObserver(settled)
    }
    // Started together, so a store that pipelines sends the version read with the admission's reads.
    const admissionAndVersion = (admission: Effect.Effect<Admission, MarketError>): Effect.Effect<Checked> =>
      startedTogether(Effect.either(admission), Effect.either(entry.current))

    if (stamped === undefined || !stamped.counts.covers(entry.dataType)) {
      const stamp = stampOf(changeStamp)
      const known = stamp !== undefined && entry.checked?.stamp === stamp ? entry.checked.principal : undefined
      if (known !== undefined) {
        check(Effect.map(Effect.either(charge(known)), (admission): Checked => [admission, Either.right(entry.version)]), (exit) => settle(exit, undefined))
      } else {
        check(admissionAndVersion(admit(authorization)), (exit) => settle(exit, stamp))
      }
      return true
    }

    // A store that stamps its counts (Redis). With a principal checked at a stamp, the request is
    // counted and the stamp read in one round trip shared by the turn's requests, and no fiber
    // runs: an unchanged stamp means no token and none of the type's rows changed since those
    // checks. The first time, the stamp is read before the checks (sent first on the connection).
    const checked = entry.checked
    if (checked === undefined) {
      const stampRead = Effect.either(Effect.tryPromise(() => stamped.counts.stamp(entry.dataType)))
      check(startedTogether(stampRead, admissionAndVersion(admit(authorization))), (exit) =>
        settle(Exit.map(exit, ([, checks]) => checks), Exit.isSuccess(exit) ? Either.getOrUndefined(exit.value[0]) : undefined))
      return true
    }
    stamped.count(checked.principal, entry.dataType).then((result) => {
      // The storage failed: the app answers its 503, and the request is not counted again.
      if (Either.isLeft(result)) {
        admissions.set(req, Either.left(result.left))
        return handOn()
      }
      const { counted, stamp } = result.right
      if (stamp !== checked.stamp) {
        if (entry.checked === checked) delete entry.checked
        // Something changed: checked in full with this count, and recorded under this stamp,
        // which was read with the count, before the checks' reads.
        return check(admissionAndVersion(stamped.admitCounted(authorization, checked.principal, counted)), (exit) => settle(exit, stamp))
      }
      const admission = stamped.judge(checked.principal, counted)
      if (Either.isRight(admission) && kept.get(key, entry.version) !== undefined) return answer(admission.right)
      // Past the limit (or the answer since dropped): the app answers, with this count.
      admissions.set(req, admission)
      handOn()
    }, handOn)
    return true
  }

  /** Keeps an answer of `status` 200 with its bytes: `headers` as sent, less those of one request. */
  const keepAnswer = (
    url: string, requestHeaders: Readonly<Record<string, HeaderValue>>, mark: { readonly replay: Replayable; readonly audience: string },
    route: string, sent: Readonly<Record<string, string>>, body: Uint8Array
  ) => {
    const headers: Record<string, string> = {}
    for (const name in sent) if (!PER_REQUEST.has(name)) headers[name] = sent[name]!
    kept.set(keyOf(url, requestHeaders), { ...mark.replay, route, audience: mark.audience, headers, body })
  }

  return {
    take,
    stats: () => ({ ...kept.stats(), replayed: replays, handedOn }),
    admissionOf: (request) => admissions.get(request.source as object),
    noted: (req) => admissions.get(req),
    note: (req, admission, failure) => {
      admissions.set(req, admission)
      if (failure !== undefined) failures.set(req, failure)
    },
    failureOf: (request) => failures.get(request.source as object),
    keep: (req, replay, principal, route, headers, body) => {
      if (budget > 0) keepAnswer(req.url ?? "", req.headers, { replay, audience: audienceOf(principal) }, route, headers, body)
    },
    mark: (request, replay, principal) => {
      if (budget > 0) marks.set(request.source as object, { replay, audience: audienceOf(principal) })
    },
    recording: (app) =>
      Effect.flatMap(app, (response) => Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
        const mark = marks.get(request.source as object)
        const body = response.body
        if (mark === undefined || response.status !== 200 || body._tag !== "Uint8Array") return Effect.succeed(response)
        return Effect.map(FiberRef.get(currentRoute), (route) => {
          keepAnswer(request.url, request.headers, mark, route ?? "unmatched", {
            "content-type": body.contentType, "content-length": String(body.body.length), ...response.headers
          }, body.body)
          return response
        })
      }))
  }
}
