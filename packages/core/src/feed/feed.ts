import * as Chunk from "effect/Chunk"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FiberId from "effect/FiberId"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { historyFloor } from "../auth/history.js"
import { DataType, type Principal } from "../auth/principal.js"
import { EventIdExpired, InsufficientEntitlement, NotFound, type StorageUnavailable, type ValidationFailed, validationFailed } from "../errors.js"
import { holdsIndex } from "../market/indexes.js"
import { nowMicros, unavailable } from "../market/storage.js"
import { Slug } from "../query/filters.js"
import { CommaList, collectQuery, decodeParams, type QueryInput } from "../query/params.js"
import { formatInstant, type Micros, startOfDay } from "../query/time.js"
import { eventDataType, eventGpu, eventInstant, type MarketEvent } from "../schema/market-event.js"
import { EventLogStore, type EventLogTrimmed, type LoggedEvent } from "../storage/event-log.js"
import { inTurn } from "./turns.js"

/**
 * The change feed: one follower per process reads the storage's event log (a blocking read on
 * Redis, a poll on SQLite) into a bounded ring every subscriber of the process reads from, so a
 * write in any process sharing the store reaches them all with one read of the log. A subscriber
 * that resumes (`Last-Event-ID`) reads the log itself, a slice at a time, until it reaches the
 * ring, then follows the ring. Each keeps only its position: the events it has yet to take are
 * the ring's, shared, and an adapter holds at most what it has written and its client has not
 * read yet (the HTTP adapter bounds that in bytes).
 */

/** Events the ring keeps: a resuming subscriber joins it once its own reads reach the part it holds. */
export const RING_SIZE = 8192
/**
 * How far (in events of the ring) a subscriber may fall behind before it is dropped with its
 * position (`slow_consumer`): its lag costs nothing while it is connected (the events are the
 * ring's), and it resumes from that id. Above what one read of the log adds at once, so a burst
 * alone drops no one.
 */
export const MAX_LAG = 2048
/**
 * Events a subscriber takes at a time: from the ring, or from the log while it catches up. Each
 * slice runs in a turn of the fan-out (turns.ts), so a fan-out to many subscribers interleaves
 * with requests instead of running through every subscriber's backlog first.
 */
const SLICE = 32
/**
 * How often a quiet subscription yields an `idle` item: adapters send their heartbeats on them.
 * One timer wakes every subscriber of the process, rather than a timer each.
 */
export const IDLE_TICK_MS = 1000
/** Events one read of the follower asks for. */
const READ_PAGE = 500
/**
 * How often a subscription confirms that its token still holds: a revoked token's stream ends
 * (`dropped`, reason `revoked`) within this bound, and reconnecting answers 401.
 */
export const RECHECK_MS = 5000

/** What a subscriber asks for: data types, GPUs and index ids (each list optional; none = all it may see). */
export const FeedQuery = Schema.Struct({
  data_type: Schema.optional(CommaList(Schema.compose(Schema.String, DataType), "data types (gpu_rental_prices, gpu_rental_indexes, gpu_rental_transactions, gpu_hardware_prices, llm_token_prices)", 5)),
  gpu: Schema.optional(CommaList(Slug, "GPU canonical names")),
  index_id: Schema.optional(CommaList(Slug, "index ids")),
  /** Where to resume, for clients that cannot send the `Last-Event-ID` header; the header wins. */
  last_event_id: Schema.optional(Schema.String.pipe(Schema.maxLength(200)))
})
export type FeedQuery = typeof FeedQuery.Encoded

/**
 * One item of a subscription: an event with the id to resume after it, a tick with nothing to
 * deliver (`idle`, every `IDLE_TICK_MS` while quiet), or the end of a dropped subscription.
 */
export type FeedItem =
  | { readonly _tag: "event"; readonly id: string; readonly event: MarketEvent }
  | { readonly _tag: "idle" }
  | {
    readonly _tag: "dropped"
    /** The position to resume from: every event up to it was delivered or was not the subscriber's. */
    readonly id: string
    readonly reason: DropReason
  }

/**
 * Why a subscription ended: `slow_consumer`, it fell `MAX_LAG` events behind (resume from the
 * id); `storage_unavailable`, the log could not be read (resume from the id once it is back);
 * `resync`, the log no longer holds events it had not read (resuming answers 410: read the
 * current state and subscribe afresh); `revoked`, the token was revoked (reconnecting answers 401).
 */
export type DropReason = "slow_consumer" | "storage_unavailable" | "resync" | "revoked"

/**
 * One message of the feed as every adapter delivers it (the SSE `data` of HTTP, the items of the
 * Promise API's iterator): an event with the id to resume after it and its row as the data
 * type's endpoints return it, or the last message of a dropped subscription.
 */
export type FeedMessage = EventMessage<MarketEvent> | { readonly id: string; readonly type: "dropped"; readonly reason: DropReason }

/** The message of each kind of event, so `type` tells the row's shape. */
type EventMessage<E> = E extends MarketEvent
  ? { readonly id: string; readonly type: E["type"]; readonly data_type: DataType; readonly row: E["row"] }
  : never

/** The message of an event or a drop. */
export const feedMessage = (item: Exclude<FeedItem, { readonly _tag: "idle" }>): FeedMessage =>
  item._tag === "dropped"
    ? { id: item.id, type: "dropped", reason: item.reason }
    : { id: item.id, type: item.event.type, data_type: eventDataType[item.event.type], row: item.event.row } as FeedMessage

/** Errors a subscription can be refused with before it starts. */
export type FeedError = ValidationFailed | InsufficientEntitlement | NotFound | EventIdExpired | StorageUnavailable

const IDLE: Chunk.Chunk<FeedItem> = Chunk.of({ _tag: "idle" })

/** What a subscriber receives: the types it may read and asked for, GPUs, index ids. */
interface Selection {
  readonly types: ReadonlySet<DataType>
  readonly gpus: ReadonlySet<string> | undefined
  readonly indexIds: ReadonlySet<string> | undefined
}

/** The selection of a query for a principal, or why it is refused. */
const selectionOf = (
  principal: Principal,
  query: QueryInput
): Either.Either<Selection & { readonly lastEventId: string | undefined }, ValidationFailed | InsufficientEntitlement | NotFound> =>
  Either.flatMap(Either.flatMap(collectQuery(query), (raw) => decodeParams(FeedQuery, raw)), (q): Either.Either<
    Selection & { readonly lastEventId: string | undefined }, InsufficientEntitlement | NotFound
  > => {
    const granted = DataType.literals.filter((t) => principal.grants[t] !== undefined)
    const asked = q.data_type ?? granted
    const refused = asked.filter((t) => principal.grants[t] === undefined)
    if (refused.length > 0) return Either.left(new InsufficientEntitlement({ detail: `this token is not granted ${refused.join(", ")}` }))
    if (asked.length === 0) return Either.left(new InsufficientEntitlement({ detail: "this token is granted no data type the feed carries" }))
    const notHeld = (q.index_id ?? []).filter((id) => !holdsIndex(principal, id))
    // As on the index endpoints: an index not held reads as one that does not exist.
    if (notHeld.length > 0) return Either.left(new NotFound({ detail: `no index ${notHeld.join(", ")}` }))
    return Either.right({
      lastEventId: q.last_event_id,
      types: new Set(asked),
      gpus: q.gpu === undefined ? undefined : new Set(q.gpu),
      indexIds: q.index_id === undefined ? undefined : new Set(q.index_id)
    })
  })

/**
 * Whether a principal, at `now`, receives an event of its selection: a granted type it asked
 * for, a held index, the GPUs asked for (rows without a GPU pass), and a row at or after its
 * history floor (a token without history reads from today, as its `/metadata` reports).
 */
const receives = (principal: Principal, selection: Selection, now: Micros) => {
  const floors = new Map<string, { readonly day: string; readonly instant: string } | null>()
  for (const type of selection.types) {
    const grant = principal.grants[type]
    if (grant === undefined) continue
    const floor = historyFloor(grant.history, now)
    const at = floor === null ? null : floor === undefined ? startOfDay(now) : floor
    floors.set(type, at === null ? null : { day: formatInstant(at).slice(0, 10), instant: formatInstant(at) })
  }
  return (event: MarketEvent): boolean => {
    const type = eventDataType[event.type]
    const floor = floors.get(type)
    if (floor === undefined) return false
    if (event.type === "index_value") {
      if (!holdsIndex(principal, event.row.id)) return false
      if (selection.indexIds !== undefined && !selection.indexIds.has(event.row.id)) return false
    }
    const gpu = eventGpu(event)
    if (gpu !== undefined && selection.gpus !== undefined && !selection.gpus.has(gpu)) return false
    if (floor === null) return true
    const at = eventInstant(event)
    return at.length === 10 ? at >= floor.day : at >= floor.instant
  }
}

/** The ring the follower fills: events numbered by `seq` from `first` to `next - 1`. */
interface Ring {
  readonly events: Array<LoggedEvent>
  first: number
  next: number
  /** The position after the newest event read. */
  position: string
  /** The newest event the ring let go of: a joining subscriber must have read past it. */
  evicted: LoggedEvent | undefined
  /** Completed when events arrive, and replaced. */
  arrived: Deferred.Deferred<void>
  /** Bumped when the follower lost events (the log trimmed past it): every subscriber resyncs. */
  epoch: number
  /** Set when the market closes: every subscription ends (its client resumes elsewhere by its id). */
  closed: boolean
}

export class Feed extends Effect.Service<Feed>()("Market/Feed", {
  scoped: Effect.gen(function* () {
    const log = yield* EventLogStore
    const scope = yield* Effect.scope
    const { positions } = log

    /** Wakes every subscriber waiting on `ring`: completes its `arrived` and puts a fresh one in its place. */
    const wake = (ring: Ring) => {
      const arrived = ring.arrived
      ring.arrived = Deferred.unsafeMake(FiberId.none)
      return Deferred.succeed(arrived, undefined)
    }
    const follower = (ring: Ring): Effect.Effect<never> => {
      const append = (found: ReadonlyArray<LoggedEvent>) => Effect.suspend(() => {
        if (found.length === 0) return Effect.void
        for (const e of found) {
          ring.events.push(e)
          ring.next++
          ring.position = positions.advance(ring.position, e)
        }
        const over = ring.events.length - RING_SIZE
        if (over > 0) {
          ring.evicted = ring.events[over - 1]
          ring.events.splice(0, over)
          ring.first += over
        }
        return wake(ring)
      })
      // Trimmed past the follower (it was away longer than the log keeps): start again from the
      // head; subscribers resync, since the events in between are gone.
      const restart = (_: EventLogTrimmed) => Effect.flatMap(log.head, (head) => Effect.suspend(() => {
        ring.events.length = 0
        ring.first = ring.next
        ring.position = head
        ring.evicted = undefined
        ring.epoch++
        return wake(ring)
      }))
      const step = Effect.suspend(() => log.follow(ring.position, READ_PAGE)).pipe(
        Effect.flatMap(append),
        Effect.catchTag("EventLogTrimmed", restart),
        // Storage away: subscribers wait (heartbeats keep their streams open) and the follower tries again.
        Effect.tapError((e) => Effect.logWarning("change feed: the event log cannot be read; retrying", e)),
        Effect.retry(Schedule.spaced("1 second"))
      )
      return Effect.forever(step) as Effect.Effect<never>
    }
    /** Wakes every subscriber each tick, so a quiet one can yield `idle`. */
    const ticker = (ring: Ring): Effect.Effect<never> =>
      Effect.forever(Effect.zipRight(Effect.sleep(IDLE_TICK_MS), Effect.suspend(() => wake(ring))))

    /** Ends every subscription of the process, now and to come: for a server that shuts down. */
    let closing = false
    const endAll = (ring: Ring) => Effect.suspend(() => {
      ring.closed = true
      return Deferred.succeed(ring.arrived, undefined)
    })

    // Started by the first subscriber: a market nobody follows reads no log.
    let ringOf: Ring | undefined
    const started = yield* Effect.cached(Effect.gen(function* () {
      const head = yield* log.head
      const ring: Ring = {
        events: [], first: 0, next: 0, position: head, evicted: undefined, arrived: yield* Deferred.make<void>(), epoch: 0, closed: closing
      }
      ringOf = ring
      yield* Scope.addFinalizer(scope, endAll(ring))
      yield* Effect.forkIn(follower(ring), scope)
      yield* Effect.forkIn(ticker(ring), scope)
      return ring
    }))

    /**
     * A subscription of `principal`: events after `lastEventId` (or from now), filtered and
     * scrubbed for it. Refused before it starts with a 422 (bad query or id), 403/404 (types or
     * indices it may not read), or 410 `EventIdExpired` when the log no longer holds what follows
     * the id. `stillAdmitted` (false once the subscriber's token is revoked) is asked every
     * `RECHECK_MS`; a false ends the subscription.
     */
    const subscribe = (principal: Principal, query: QueryInput, lastEventIdHeader?: string, stillAdmitted?: Effect.Effect<boolean>) =>
      Effect.catchTag(open(principal, query, lastEventIdHeader, stillAdmitted), "StorageError", (e) => Effect.fail(unavailable(e)))
    const open = Effect.fn("Feed.subscribe")(function* (
      principal: Principal,
      query: QueryInput,
      lastEventIdHeader?: string,
      stillAdmitted?: Effect.Effect<boolean>
    ) {
      const selection = yield* selectionOf(principal, query)
      const lastEventId = lastEventIdHeader ?? selection.lastEventId
      // Checked before the follower starts: a refused request leaves a market nobody follows unread.
      const resumeAt = lastEventId === undefined ? undefined : positions.parse(lastEventId)
      if (lastEventId !== undefined && resumeAt === undefined) {
        const parameter = lastEventIdHeader !== undefined ? "Last-Event-ID" : "last_event_id"
        return yield* validationFailed([{ parameter, message: "not an event id of this feed" }])
      }
      const ring = yield* started
      let position = resumeAt ?? ring.position
      const epoch = ring.epoch
      const expired = (e: EventLogTrimmed) => new EventIdExpired({
        detail: `the log no longer holds the events after ${e.position} (it keeps the newest ones only); read the current state and subscribe without Last-Event-ID`
      })
      // Read now, so an id the log trimmed past is a 410 before the stream starts.
      let backlog: ReadonlyArray<LoggedEvent> | undefined = lastEventId === undefined ? undefined : yield* Effect.catchTag(log.read(position, SLICE), "EventLogTrimmed", (e) => Effect.fail(expired(e)))
      let seq: number | undefined = lastEventId === undefined ? ring.next : undefined

      /** Delivers what `principal` receives of `events`, advancing the position past all of them. */
      // Floors move with the day (rolling grants, current-only ones): the predicate is made once a day.
      let wanted: ReturnType<typeof receives> | undefined
      let wantedDay = -1
      const deliver = (events: Iterable<LoggedEvent>, now: Micros): Array<FeedItem> => {
        const day = startOfDay(now)
        if (wanted === undefined || day !== wantedDay) {
          wanted = receives(principal, selection, now)
          wantedDay = day
        }
        const receivesEvent = wanted
        const out: Array<FeedItem> = []
        for (const e of events) {
          if (positions.covers(position, e)) continue
          position = positions.advance(position, e)
          if (receivesEvent(e.event)) out.push({ _tag: "event", id: position, event: e.event })
        }
        return out
      }
      let done = false
      let answered = false
      let checkedAt = yield* nowMicros
      const dropped = (reason: DropReason): Chunk.Chunk<FeedItem> => {
        done = true
        return Chunk.of({ _tag: "dropped", id: position, reason })
      }

      // Set after a step that took events or woke up: the next one runs in a turn of the fan-out.
      let owesTurn = false
      /**
       * The next items (maybe none yet): from the log until the ring is reached, then from the
       * ring; or `wait` when there is nothing new.
       */
      const step: Effect.Effect<Chunk.Chunk<FeedItem> | "wait", Option.Option<never>> = Effect.gen(function* () {
        if (done || ring.closed) return yield* Effect.fail(Option.none())
        if (ring.epoch !== epoch) return dropped("resync")
        const now = yield* nowMicros
        if (stillAdmitted !== undefined && now - checkedAt >= RECHECK_MS * 1000) {
          checkedAt = now
          if (!(yield* stillAdmitted)) return dropped("revoked")
        }
        if (seq === undefined) {
          let events: ReadonlyArray<LoggedEvent>
          if (backlog !== undefined) {
            events = backlog
            backlog = undefined
          } else {
            const read = yield* Effect.either(log.read(position, SLICE))
            if (Either.isLeft(read)) {
              return dropped(read.left._tag === "EventLogTrimmed" ? "resync" : "storage_unavailable")
            }
            events = read.right
          }
          owesTurn = true
          if (events.length > 0) return Chunk.fromIterable(deliver(events, now))
          // Caught up with the log: join the ring once past everything it let go of.
          if (ring.evicted !== undefined && !positions.covers(position, ring.evicted)) return Chunk.empty()
          seq = ring.first
        }
        // Behind by more than MAX_LAG (or by more than the ring holds): its position is still in
        // the log, so the id resumes it.
        if (ring.next - seq > MAX_LAG) return dropped("slow_consumer")
        if (seq === ring.next) {
          // The first pull answers at once, so an adapter can open its response before any event.
          if (!answered) {
            answered = true
            return IDLE
          }
          return "wait"
        }
        owesTurn = true
        const upto = Math.min(ring.next, seq + SLICE)
        const events = ring.events.slice(seq - ring.first, upto - ring.first)
        seq = upto
        return Chunk.fromIterable(deliver(events, now))
      })
      const pull: Effect.Effect<Chunk.Chunk<FeedItem>, Option.Option<never>> = Effect.gen(function* () {
        const turnOwed = owesTurn
        owesTurn = false
        const taken = yield* (turnOwed ? inTurn(step) : step)
        if (taken !== "wait") return taken
        yield* Deferred.await(ring.arrived)
        owesTurn = true
        return seq === ring.next ? IDLE : Chunk.empty()
      })
      return Stream.repeatEffectChunkOption(pull)
    })

    return {
      /**
       * A subscription of `principal`: the events after `Last-Event-ID` (the header, else the
       * query's `last_event_id`; neither: from now) it may see and asked for, as a stream that
       * ends only with a `dropped` item. Refused before it starts with 422 (a bad query or id),
       * 403 (a type not granted), 404 (an index not held), 410 (an id the log trimmed past) or 503.
       */
      subscribe,
      /**
       * Ends every subscription with its stream (no `dropped` message: the client resumes from
       * its last id wherever it reconnects), and any opened later: a server about to close calls
       * it first, so open streams do not hold its graceful shutdown.
       */
      close: Effect.suspend(() => {
        closing = true
        return ringOf === undefined ? Effect.void : endAll(ringOf)
      })
    } as const
  })
}) {}
