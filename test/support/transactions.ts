import {
  Auth, Envelope, type Grant, type HistoryAccess, marketLayer, type Principal, type TransactionDealInput, TransactionIngest, TransactionRow
} from "@gpu-market/core"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Effect, Layer, Schema } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { BASE_URL } from "./market"
import { followPages } from "./paging"

/**
 * A known stream of settled deals in a real SQLite file, recorded day by day through the real
 * write path. The HTTP caller, clock and "now" (2026-06-15T12:00Z) are those of `./market`.
 */

export const TX = "/api/v2/gpu/rental/transactions/aggregated"
const DAY_MS = 86_400_000
/** Day 0 of the fixture: 2026-03-01; the last day, 106, is 2026-06-15 ("today"). */
export const TX_DAY0_MS = Date.UTC(2026, 2, 1)
export const TX_LAST_DAY = 106
export const txDate = (day: number) => new Date(TX_DAY0_MS + day * DAY_MS).toISOString().slice(0, 10)

export const TX_GPUS = [
  { slug: "h100-sxm", model: "H100", base: 2 },
  { slug: "a100-sxm-80gb", model: "A100", base: 1 },
  { slug: "b200", model: "B200", base: 4 }
] as const
export const TX_REGIONS = ["apac", "europe", "north_america"] as const
export const TX_CONTRACTS = [
  { type: "reserved", tenors: [30, 90, 180, 365] },
  { type: "spot", tenors: [30, 90] }
] as const

const hash = (s: string) => {
  let h = 2166136261
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619)
  h ^= h >>> 15
  h = Math.imul(h, 0x2c1b3c6d)
  h ^= h >>> 12
  return (h >>> 0) / 4294967296
}

/**
 * The deals settled on one fixture day. Prices sit on a 0.25 grid, so blends of deals at one
 * price tie on price; counts come from a few sizes, so totals tie too.
 */
export const txDeals = (day: number): Array<TransactionDealInput> => {
  const out: Array<TransactionDealInput> = []
  const date = txDate(day)
  for (const gpu of TX_GPUS) for (const region of TX_REGIONS) for (const contract of TX_CONTRACTS) for (const tenor of contract.tenors) {
    const cell = `${gpu.slug}:${region}:${contract.type}:${tenor}`
    const u = hash(`${cell}/${day}`)
    const n = u < 0.65 ? 0 : u < 0.85 ? 1 : u < 0.95 ? 2 : 3
    for (let i = 0; i < n; i++) {
      const id = `fx:${date}:${cell}:${i}`
      const count = [8, 16, 32][Math.floor(hash(`${id}/count`) * 3)]!
      const price = gpu.base + Math.floor(hash(`${id}/price`) * 4) * 0.25
      const terms = hash(`${id}/terms`)
      out.push({
        deal_id: id, gpu_canonical_name: gpu.slug, gpu_model: gpu.model, region_group: region, contract_type: contract.type,
        tenor_days: tenor, gpu_count: count, gpu_hours: count * 24 * Math.min(tenor, 30), price_usd_per_gpu_hour: price,
        ...(terms < 0.6 ? { list_price_usd_per_gpu_hour: gpu.base * 1.5 } : terms < 0.8 ? { discount_percentage: 20 } : {}),
        settlement_date: date
      })
    }
  }
  return out
}

const principal = (id: string, grants: Principal["grants"]): Principal => ({
  id: id as Principal["id"], name: id, grants, indices: "all", legacy_custom_index: false, procurement: false,
  rate_limit_per_minute: 100_000
})
const tx = (history: HistoryAccess): { gpu_rental_transactions: Grant } => ({ gpu_rental_transactions: { history } })

/** Fixture tokens: the secret is the key. */
export const TX_TOKENS = {
  "tx-all": principal("tx-all", tx({ _tag: "unrestricted" })),
  "tx-other": principal("tx-other", tx({ _tag: "unrestricted" })),
  "tx-current": principal("tx-current", tx({ _tag: "none" })),
  "tx-since": principal("tx-since", tx({ _tag: "since", date: "2026-05-01" })),
  "tx-rolling": principal("tx-rolling", tx({ _tag: "rolling", days: 10 })),
  "tx-rental": principal("tx-rental", { gpu_rental_prices: { history: { _tag: "unrestricted" } } })
} as const

/** Records the fixture deals and issues its tokens through the write paths, on any storage. */
export const seed = Effect.gen(function* () {
  const ingest = yield* TransactionIngest
  const auth = yield* Auth
  for (let day = 0; day <= TX_LAST_DAY; day++) yield* ingest.record(txDeals(day))
  for (const [name, p] of Object.entries(TX_TOKENS)) yield* auth.issue(p, name)
})

/** The market's services over a fresh SQLite file, without any data. */
export const emptyMarket = (label: string) => {
  const dir = mkdtempSync(join(tmpdir(), `gpu-market-${label}-`))
  return marketLayer.pipe(Layer.provideMerge(SqliteStorage.layer({ filename: join(dir, "market.db") })))
}

/** A fresh SQLite file holding the fixture's deals and tokens. */
export const txFixtureLayer = (label = "tx") => Layer.effectDiscard(seed).pipe(Layer.provideMerge(emptyMarket(label)))

/** Refuses anything but an envelope of well-formed aggregated transaction rows. */
export const validTxEnvelope = Schema.decodeUnknownSync(Envelope(Schema.encodedSchema(TransactionRow)), { onExcessProperty: "error" })

/** Follows `meta.next` from the first page to the last, checking every envelope and link. */
export const follow = (first: string, token = "tx-all") =>
  Effect.map(
    followPages(first, { token, validate: validTxEnvelope, prefix: `${BASE_URL}/v2/gpu/rental/transactions/aggregated/history`, maxPages: 2000 }),
    (pages) => ({ pages, rows: pages.flatMap((p) => p.body.data as Array<any>) })
  )
