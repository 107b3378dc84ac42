import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { Principal } from "../auth/principal.js"
import type { RentalPrice } from "../schema/rental-price.js"
import {
  type GpuSpelling, RateLimitStore, type Storage, type RentalGpuSummary, RentalPriceStore, SettingsStore, type StoredToken,
  TokenStore
} from "./contract.js"
import { LlmTokenPriceStore } from "./llm-token-prices.js"
import { makeMemoryLlmTokenPriceStore } from "./memory-llm-token-prices.js"
import { memoryDataVersion, memoryTransact } from "./memory-versions.js"
import { memoryMarks } from "./marks.js"
import { leaseValue, mayTakeLease } from "./lease.js"
import { HardwarePriceStore } from "./hardware.js"
import { makeMemoryHardwarePriceStore } from "./memory-hardware.js"
import type { PagePlan } from "./plan.js"
import { cmp, inVersionScope, matchesPredicates, orderAndSeek } from "./rules.js"
import { makeMemoryTransactionStore } from "./memory-transactions.js"
import { TransactionStore } from "./transactions.js"
import { IndexStore } from "./indexes.js"
import { makeMemoryIndexStore } from "./memory-indexes.js"
import { ProcurementStore } from "./procurement.js"
import { makeMemoryProcurementStore } from "./memory-procurement.js"
import { ReferenceDataStore } from "./reference.js"
import { makeMemoryReferenceDataStore } from "./memory-reference.js"
import { makeMemoryRateLimitStore } from "./memory-rate-limits.js"
import { EventLogStore, rentalPriceEvents } from "./event-log.js"
import { makeMemoryEventLog } from "./memory-event-log.js"
import { rentalPriceKeys, rentalPriceTable } from "./tables.js"
import { sortedValues, summarise } from "./summary.js"

/**
 * The in-memory reference store: the plain statement of what every backend must return. It
 * keeps nothing across processes and scans everything, so it is for tests and small embeds.
 */

/** The reference evaluation of a rental price plan. */
export const evaluateRentalPlan = (rows: Iterable<RentalPrice>, plan: PagePlan): Array<RentalPrice> =>
  orderAndSeek(
    [...rows].filter((r) => inVersionScope(r, plan.scope) && matchesPredicates(r, plan.predicates)),
    plan,
    rentalPriceTable.tie
  )

/** Spellings and per-GPU summaries derived from rental rows, as every backend reports them. */
export const summariseGpus = (rows: Iterable<RentalPrice>) => {
  const spellings: Array<GpuSpelling> = []
  const gpus = summarise(rentalPriceTable.summary, rows).groups.map((g): RentalGpuSummary => {
    const name = g.key[0] as string
    const own = [...new Set([...sortedValues<string>(g, "vendor_gpu_name"), ...sortedValues<string>(g, "gpu_model")])].sort(cmp)
    spellings.push({ gpu_canonical_name: name, spelling: name })
    for (const s of own) if (s !== name) spellings.push({ gpu_canonical_name: name, spelling: s })
    return {
      gpu_canonical_name: name,
      // The manufacturer the GPU's first row named.
      gpu_manufacturer: [...g.values.get("gpu_manufacturer")!][0] as string,
      spellings: own,
      currently_listed: g.listed,
      vendors: sortedValues(g, "vendor")
    }
  })
  return { spellings, gpus }
}

/** Builds the four in-memory stores over fresh state. */
export const make = Effect.sync(() => {
  const rental = new Map<string, RentalPrice>()
  const tokens = new Map<string, Principal>()
  const settings = new Map<string, string>()
  const rentalMarks = memoryMarks()
  const rentalVersion = memoryDataVersion()
  const log = makeMemoryEventLog()

  const rentalStore: RentalPriceStore["Type"] = {
    transact: memoryTransact("rental_prices.transact", rental, rentalPriceKeys, rentalMarks.marks, rentalVersion, {
      sink: log.sink, types: rentalPriceEvents
    }),
    version: rentalVersion.version,
    mark: rentalMarks.mark,
    page: (plan) => Effect.sync(() => evaluateRentalPlan(rental.values(), plan)),
    spellings: Effect.sync(() => summariseGpus(rental.values()).spellings),
    gpus: Effect.sync(() => summariseGpus(rental.values()).gpus)
  }

  // One process holds this store, so a counter never repeats while anyone caches under it.
  let tokensVersion = 0
  const tokenStore: TokenStore["Type"] = {
    put: (hash, principal) => Effect.sync(() => {
      tokens.set(hash, principal)
      tokensVersion++
    }),
    find: (hash) => Effect.sync(() => Option.map(Option.fromNullable(tokens.get(hash)), (principal): StoredToken => ({ tokenHash: hash, principal }))),
    list: Effect.sync(() =>
      [...tokens].map(([tokenHash, principal]) => ({ tokenHash, principal })).sort((a, b) => cmp(a.principal.id, b.principal.id) || cmp(a.tokenHash, b.tokenHash))
    ),
    revoke: (id) => Effect.sync(() => {
      let found = false
      for (const [hash, p] of tokens) if (p.id === id) { tokens.delete(hash); found = true }
      if (found) tokensVersion++
      return found
    }),
    version: Effect.sync(() => String(tokensVersion))
  }

  const rateLimitStore = makeMemoryRateLimitStore()

  const settingsStore: SettingsStore["Type"] = {
    get: (name) => Effect.sync(() => Option.fromNullable(settings.get(name))),
    set: (name, value) => Effect.sync(() => void settings.set(name, value)),
    getOrSet: (name, value) => Effect.sync(() => {
      const existing = settings.get(name)
      if (existing !== undefined) return existing
      settings.set(name, value)
      return value
    }),
    lease: (name, holder, nowMs, ttlMs) => Effect.sync(() => {
      if (!mayTakeLease(settings.get(name), holder, nowMs)) return false
      settings.set(name, leaseValue(holder, nowMs + ttlMs))
      return true
    })
  }

  return { rentalStore, tokenStore, rateLimitStore, settingsStore, log }
})

/** Every store in memory, fresh for each build of the layer. */
export const layer: Layer.Layer<Storage> = Layer.effectContext(
  Effect.map(make, (s) =>
    Context.make(RentalPriceStore, s.rentalStore).pipe(
      Context.add(TokenStore, s.tokenStore),
      Context.add(RateLimitStore, s.rateLimitStore),
      Context.add(SettingsStore, s.settingsStore),
      Context.add(HardwarePriceStore, makeMemoryHardwarePriceStore(s.log.sink)),
      Context.add(LlmTokenPriceStore, makeMemoryLlmTokenPriceStore(s.log.sink)),
      Context.add(TransactionStore, makeMemoryTransactionStore(s.log.sink)),
      Context.add(IndexStore, makeMemoryIndexStore(s.log.sink)),
      Context.add(EventLogStore, s.log.store),
      Context.add(ProcurementStore, makeMemoryProcurementStore()),
      Context.add(ReferenceDataStore, makeMemoryReferenceDataStore())
    )
  )
)
