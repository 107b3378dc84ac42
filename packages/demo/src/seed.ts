import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { Auth, formatInstant, MICROS_PER_DAY, MICROS_PER_MS, RentalPriceIngest } from "@gpu-market/core"
import { TokenStore } from "@gpu-market/core/storage"
import { type DemoCatalogSize, DEMO_HISTORY_DAYS, demoObservations, epochDay } from "./market.js"
import { DEMO_TOKENS } from "./tokens.js"
import { seedHardwareDemo } from "./hardware.js"
import { seedLlmDemo } from "./llm.js"
import { seedTransactionDemo } from "./transactions.js"
import { seedIndexDemo } from "./indexes.js"
import { seedMark } from "./seed-mark.js"

/** What seeding did: the days it added (none when the market was already current). */
export interface DemoSeedReport {
  readonly firstDay: string | null
  readonly lastDay: string
  readonly days: number
}

/** A step of seeding, for a progress display: `done` of `total` steps, in `phase`. */
export interface DemoProgress {
  readonly phase: "rental prices" | "hardware prices" | "LLM token prices" | "transactions" | "indexes" | "tokens"
  readonly done: number
  readonly total: number
}

/** What to seed: the default is the full demo market that `npm start` serves. */
export interface DemoSeedOptions extends DemoCatalogSize {
  /** Days of history before today on a fresh store (default: each type's own, 180 for rental prices). */
  readonly days?: number
  /** Called after each rental day and each later type. */
  readonly onProgress?: (progress: DemoProgress) => Effect.Effect<void>
}

/**
 * Seeds the demo market through the real write path, from 180 days ago (or `days`) on an empty
 * store, or from the day after the last seeded day, so the market always reaches today.
 * Registers the demo tokens. Running it twice on one day changes nothing.
 */
export const seedDemo = Effect.fn("Demo.seed")(function* (options: DemoSeedOptions = {}) {
  const progress = options.onProgress ?? (() => Effect.void)
  const ingest = yield* RentalPriceIngest
  const auth = yield* Auth
  const today = epochDay((yield* Clock.currentTimeMillis) * MICROS_PER_MS)
  const mark = yield* seedMark("demo_seeded_through", ingest.mark)
  const first = yield* mark.firstDay(today - (options.days ?? DEMO_HISTORY_DAYS))
  const rentalDays = Math.max(0, today - first + 1)
  for (let day = first; day <= today; day++) {
    // The first day of a run sends every product; the store then holds the day before each later
    // day, so only the prices that move are sent. The day's write carries its mark; a seed killed
    // before it sends the day again, and what was stored of it is a no-op.
    yield* ingest.ingest(demoObservations(day, options, day > first), { mark: mark.through(day) })
    yield* progress({ phase: "rental prices", done: day - first + 1, total: rentalDays })
  }
  const types = [
    ["hardware prices", seedHardwareDemo],
    ["LLM token prices", seedLlmDemo],
    ["transactions", seedTransactionDemo],
    ["indexes", seedIndexDemo]
  ] as const
  for (const [i, [phase, seed]] of types.entries()) {
    yield* options.days === undefined ? seed(today) : seed(today, options.days)
    yield* progress({ phase, done: i + 1, total: types.length })
  }
  for (const t of DEMO_TOKENS) yield* auth.issue(t.principal, t.secret)
  yield* progress({ phase: "tokens", done: 1, total: 1 })
  const report: DemoSeedReport = {
    firstDay: first <= today ? formatInstant(first * MICROS_PER_DAY).slice(0, 10) : null,
    lastDay: formatInstant(today * MICROS_PER_DAY).slice(0, 10),
    days: Math.max(0, today - first + 1)
  }
  return report
})

/** Revokes the demo tokens, for a server that does not run in demo mode. */
export const revokeDemoTokens = Effect.gen(function* () {
  const tokens = yield* TokenStore
  for (const t of DEMO_TOKENS) yield* tokens.revoke(t.principal.id)
})
