import * as Effect from "effect/Effect"
import { formatDate, MICROS_PER_DAY, type TransactionDealInput, TransactionIngest } from "@gpu-market/core"
import { seedMark } from "./seed-mark.js"
import { DEMO_HISTORY_DAYS, demoProducts } from "./market.js"
import { unit } from "./random.js"

/**
 * The demo's settled deals: every deal is a function of its cell (GPU, region group, contract
 * type, tenor) and day, and a day's deals are recorded as one batch, so seeding any run of days
 * gives the same deals whatever day seeding starts. About one cell in six has two or more
 * deals on a day (plain blends); lone deals pair across tenors or region groups, and two-deal
 * blends roll, so the demo has every kind of row.
 */

/** GPUs traded in the demo. */
export const DEMO_TRANSACTION_GPUS: ReadonlyArray<{ readonly slug: string; readonly model: string }> = [
  { slug: "h100-sxm", model: "H100" },
  { slug: "h200-sxm", model: "H200" },
  { slug: "b200", model: "B200" },
  { slug: "a100-sxm-80gb", model: "A100" },
  { slug: "mi300x", model: "MI300X" }
]

/** Committed capacity trades below the on-demand list: a deal's reference is this share of it. */
const DEAL_LEVEL = 0.85

let bases: ReadonlyMap<string, number> | undefined

/**
 * Each traded GPU's reference price in USD per GPU-hour: `DEAL_LEVEL` of the median published
 * on-demand price of its demo rental products, so deals sit where the real rental market does.
 */
const baseOf = (slug: string): number => {
  bases ??= new Map(DEMO_TRANSACTION_GPUS.map((g) => {
    const prices = demoProducts()
      .filter((p) => p.gpu === g.slug && p.observation.contract_type === "ondemand")
      .map((p) => p.published / p.observation.gpu_count)
      .sort((a, b) => a - b)
    return [g.slug, round(DEAL_LEVEL * prices[Math.floor(prices.length / 2)]!, 4)]
  }))
  return bases.get(slug)!
}

const REGION_GROUPS: ReadonlyArray<readonly [string, number]> = [["north_america", 1], ["europe", 1.06], ["apac", 1.12]]

/** Contract types, their tenors in days, and the price level of each tenor. */
const CONTRACTS: ReadonlyArray<{ readonly type: string; readonly level: number; readonly tenors: ReadonlyArray<readonly [number, number]> }> = [
  { type: "reserved", level: 1, tenors: [[30, 1], [90, 0.95], [180, 0.9], [365, 0.84]] },
  { type: "spot", level: 0.78, tenors: [[30, 1], [90, 0.97]] }
]

const COUNTS = [8, 16, 32, 64, 128, 256]

const round = (n: number, places: number) => Math.round(n * 10 ** places) / 10 ** places

/** The deals settled on an epoch day, in a fixed order. */
export const demoDeals = (day: number): ReadonlyArray<TransactionDealInput> => {
  const date = formatDate(day * MICROS_PER_DAY)
  const out: Array<TransactionDealInput> = []
  for (const gpu of DEMO_TRANSACTION_GPUS) for (const [region, regionLevel] of REGION_GROUPS) for (const contract of CONTRACTS) {
    const base = baseOf(gpu.slug)
    for (const [tenor, tenorLevel] of contract.tenors) {
      const cell = `${gpu.slug}:${region}:${contract.type}:${tenor}`
      const u = unit(cell, "deals", day)
      const deals = u < 0.62 ? 0 : u < 0.84 ? 1 : u < 0.94 ? 2 : 3
      const drift = 1 + 0.07 * Math.sin((day + unit(cell, "phase") * 60) / 23)
      for (let i = 0; i < deals; i++) {
        const id = `demo:${date}:${cell}:${i}`
        const count = COUNTS[Math.floor(unit(id, "count") * COUNTS.length)]!
        const price = round(base * regionLevel * contract.level * tenorLevel * drift * (0.94 + unit(id, "price") * 0.12), 4)
        const list = round(base * regionLevel * 1.3 * drift, 4)
        const terms = unit(id, "list")
        out.push({
          deal_id: id,
          gpu_canonical_name: gpu.slug,
          gpu_model: gpu.model,
          region_group: region,
          contract_type: contract.type,
          tenor_days: tenor,
          gpu_count: count,
          gpu_hours: Math.round(count * tenor * 24 * (0.55 + unit(id, "use") * 0.45)),
          price_usd_per_gpu_hour: price,
          // Most deals name the list price, some the discount off it, a few neither.
          ...(terms < 0.7 ? { list_price_usd_per_gpu_hour: list } : terms < 0.85 ? { discount_percentage: round(100 * (1 - price / list), 2) } : {}),
          settlement_date: date
        })
      }
    }
  }
  return out
}

/**
 * Records the demo's deals through the real write path, from `DEMO_HISTORY_DAYS` before today on
 * a store without them, or from the day after the last seeded day. Its own mark, so a market
 * seeded before transactions existed gets their whole history.
 */
export const seedTransactionDemo = Effect.fn("Demo.seedTransactions")(function* (today: number, historyDays = DEMO_HISTORY_DAYS) {
  const ingest = yield* TransactionIngest
  const mark = yield* seedMark("demo_transactions_seeded_through", ingest.mark)
  const first = yield* mark.firstDay(today - historyDays)
  for (let day = first; day <= today; day++) {
    // A day's deals and its mark are one write, so a killed seed resumes at the day it lost.
    yield* ingest.record(demoDeals(day), { mark: mark.through(day) })
  }
})
