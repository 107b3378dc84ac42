import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as MetricLabel from "effect/MetricLabel"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import { countNow, storageCallSeconds, storageErrors, storageShortCircuits, storageUp } from "../metrics.js"
import { faultText, RateLimitStore, RentalPriceStore, SettingsStore, type Storage, StorageError, type StorageFault, TokenStore } from "./contract.js"
import { HardwarePriceStore } from "./hardware.js"
import { IndexStore } from "./indexes.js"
import { LlmTokenPriceStore } from "./llm-token-prices.js"
import { ProcurementStore } from "./procurement.js"
import { ReferenceDataStore } from "./reference.js"
import { EventLogStore } from "./event-log.js"
import { StorePipelines } from "./pipelining.js"
import { StoreReadiness } from "./readiness.js"
import { storageContext, type Stores } from "./stores.js"
import { TransactionStore } from "./transactions.js"

/**
 * A circuit breaker around a storage, and its metrics. A storage that stalls (a frozen Redis)
 * fails each call only when the backend's own timeout runs out, so every request would wait
 * that long for its 503. After `failureThreshold` calls in a row fail with storage trouble the
 * breaker opens: every call fails at once with a `StorageError` and never reaches the backend,
 * while one probe (the token store's version, one cheap read) tries it every `probeIntervalMs`;
 * the first probe that succeeds closes the breaker. Opening and closing are logged. Every call
 * that reaches the backend is timed by operation (`Store.method`), and storage trouble counted.
 */

/** When the breaker opens, and how often it probes while open. */
export interface BreakerOptions {
  /** Calls in a row that fail with storage trouble before calls fail fast; default 3. */
  readonly failureThreshold?: number
  /** Wait between probes while open, in ms; default 1000. */
  readonly probeIntervalMs?: number
}

/** A store's every effect, and every effect its functions return, passed through `guard(operation)`. */
const guardStore = <S extends object>(
  name: string,
  store: S,
  guard: (operation: string) => <A, E, R>(call: Effect.Effect<A, E, R>) => Effect.Effect<A, E | StorageError, R>
): S => {
  const guarded: Record<string, unknown> = {}
  for (const [key, member] of Object.entries(store)) {
    const through = guard(`${name}.${key}`)
    guarded[key] = Effect.isEffect(member)
      ? through(member)
      : typeof member === "function"
        ? (...args: Array<unknown>) => {
          const out: unknown = member.apply(store, args)
          return Effect.isEffect(out) ? through(out) : out
        }
        : member
  }
  // Each member keeps its type: an effect stays an effect of the same success and error.
  return guarded as S
}

/** How often a storage fault that goes on (a full disk) is logged again, ms. */
const FAULT_LOG_INTERVAL_MS = 60_000

/** The text of a failure's cause, for a log line. */
const describe = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

/**
 * `storage` behind a circuit breaker (see above). The breaker and its probe live as long as the
 * layer; the stores it provides are the backend's, each call guarded.
 */
export const guardStorage = <E, R>(storage: Layer.Layer<Storage, E, R>, options: BreakerOptions = {}): Layer.Layer<Storage, E, R> => {
  const threshold = options.failureThreshold ?? 3
  const interval = options.probeIntervalMs ?? 1000
  const notTried = `not tried: storage failed ${threshold} times in a row, and is probed every ${interval} ms until it answers`
  return Layer.scopedContext(Effect.gen(function* () {
    const context = yield* Effect.context<Storage>()
    const scope = yield* Effect.scope
    let failures = 0
    let open = false
    storageUp.unsafeUpdate(1, [])

    const probe = Context.get(context, TokenStore).version.pipe(
      Effect.delay(`${interval} millis`),
      Effect.retry(Schedule.spaced(`${interval} millis`)),
      Effect.zipRight(Effect.sync(() => {
        open = false
        failures = 0
        storageUp.unsafeUpdate(1, [])
      })),
      Effect.zipRight(Effect.logInfo("storage is reachable again; calls go through"))
    )

    let lastFault: { readonly fault: StorageFault; readonly at: number } | undefined
    const faultLogged = (operation: string, fault: StorageFault): Effect.Effect<void> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        if (lastFault !== undefined && lastFault.fault === fault && now - lastFault.at < FAULT_LOG_INTERVAL_MS) return Effect.void
        lastFault = { fault, at: now }
        return Effect.logWarning(`storage failed: ${faultText[fault]}`).pipe(Effect.annotateLogs({ operation }))
      })

    /** A call failed with storage trouble: the breaker opens on the `threshold`th in a row. */
    const failed = (operation: string, error: StorageError): Effect.Effect<void> => {
      countNow(storageErrors, { operation })
      // A named fault (a full disk, a damaged file) failed at once: the storage answers, and reads
      // that need no room or miss the damage still succeed, so it is no reason to stop calling it.
      // It needs an operator, so it is logged, once a minute at most while it lasts.
      if (error.fault !== undefined) return faultLogged(operation, error.fault)
      failures++
      if (open || failures < threshold) return Effect.void
      open = true
      storageUp.unsafeUpdate(0, [])
      return Effect.logWarning("storage is unavailable; calls fail at once until a probe reaches it").pipe(
        Effect.annotateLogs({ operation, error: describe(error.cause), failures }),
        Effect.zipRight(Effect.forkIn(probe, scope))
      )
    }

    /** While the breaker is open, a call is refused at once: the refusal, counted; else undefined. */
    const refusal = (): StorageError | undefined => {
      if (!open) return undefined
      countNow(storageShortCircuits, {})
      return new StorageError({ operation: notTried, cause: undefined })
    }
    const tagsOf = (operation: string) => [MetricLabel.make("operation", operation)]
    const timed = (tags: ReturnType<typeof tagsOf>, start: number) => storageCallSeconds.unsafeUpdate((performance.now() - start) / 1000, tags)

    const guard = (operation: string) => {
      const tags = tagsOf(operation)
      return <A, E2, R2>(call: Effect.Effect<A, E2, R2>): Effect.Effect<A, E2 | StorageError, R2> =>
        Effect.suspend((): Effect.Effect<A, E2 | StorageError, R2> => {
          const refused = refusal()
          if (refused !== undefined) return Effect.fail(refused)
          const start = performance.now()
          return Effect.onExit(call, (exit) => {
            timed(tags, start)
            if (Exit.isSuccess(exit)) {
              failures = 0
              return Effect.void
            }
            const error = Cause.failureOption(exit.cause)
            if (Option.isNone(error)) return Effect.void
            if (error.value instanceof StorageError) return failed(operation, error.value)
            // Any other failure is the store's answer (a write its `decide` refused): storage is up.
            failures = 0
            return Effect.void
          })
        })
    }

    const guarded = <I extends Storage, S extends object>(tag: Context.Tag<I, S>): S =>
      guardStore(tag.key.split("/").pop()!, Context.get(context, tag), guard)
    // Passed through as it is: `/readyz` reads it only after the guarded tokens version answered.
    const readiness = Context.get(context, StoreReadiness)
    const stores: Stores = {
      rentalStore: guarded(RentalPriceStore),
      tokenStore: guarded(TokenStore),
      rateLimitStore: guarded(RateLimitStore),
      settingsStore: guarded(SettingsStore),
      hardwarePriceStore: guarded(HardwarePriceStore),
      llmTokenPriceStore: guarded(LlmTokenPriceStore),
      transactionStore: guarded(TransactionStore),
      indexStore: guarded(IndexStore),
      procurementStore: guarded(ProcurementStore),
      referenceDataStore: guarded(ReferenceDataStore),
      eventLogStore: guarded(EventLogStore),
      ...readiness === undefined ? {} : { readiness },
      pipelines: Context.get(context, StorePipelines)
    }
    return storageContext(stores)
  })).pipe(Layer.provide(storage))
}
