import {
  Auth, basePriceKey, type Grant, type HistoryAccess, LlmTokenPriceIngest, type LlmTokenPriceObservationInput, marketLayer, type Principal
} from "@gpu-market/core"
import * as Demo from "@gpu-market/demo"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Effect, Layer } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { dayIso } from "./market"

/**
 * A small, fully known LLM price market in a real SQLite file, seeded through the real write
 * path over fixture days 0..45 (2026-05-01 .. 2026-06-15, "now" being 2026-06-15T12:00Z as in
 * ./market). Call it with `http` and `atNow` from ./market.
 */

export const LLM = "/api/v2/llm/token/prices"
export const LAST_DAY = 45
/** mixtral is last priced on day 29 and withdrawn on day 30. */
export const MIXTRAL_LAST_DAY = 29
/** p-delta publishes llama's output price 1000× too high from day 30 on (a per-1K price read as per-1M). */
export const MISTAKE_FROM_DAY = 30
/** p-delta spelled llama "Meta Llama Legacy 70B" until day 20, then "Llama-3.1-70B (new)". */
export const RENAME_DAY = 20

/** A number in [0, 1) from a string: FNV-1a, then an avalanche so near-equal strings spread. */
const hash = (s: string) => {
  let h = 2166136261
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619)
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
  return ((h ^ (h >>> 16)) >>> 0) / 4294967296
}

interface Offer {
  readonly provider: string
  readonly model: string
  readonly name: string
  readonly types: ReadonlyArray<string>
  readonly regions?: ReadonlyArray<string>
  readonly sources?: ReadonlyArray<string>
  readonly tiers?: ReadonlyArray<string | null>
  /** List price of input per 1M tokens; output is twice that. */
  readonly base: number
}

const OFFERS: ReadonlyArray<Offer> = [
  { provider: "p-alpha", model: "llama-3.1-70b-instruct", name: "Meta-Llama-3.1-70B-Instruct", types: ["input", "output", "cached_input"], base: 0.75 },
  { provider: "p-beta", model: "llama-3.1-70b-instruct", name: "llama-v3p1-70b-instruct", types: ["input", "output"], regions: ["us-east", "eu-west"], base: 1 },
  { provider: "p-gamma", model: "llama-3.1-70b-instruct", name: "Llama 3.1 70B", types: ["input", "output"], sources: ["provider-pricing-page", "openrouter"], base: 0.75 },
  { provider: "p-delta", model: "llama-3.1-70b-instruct", name: "", types: ["input", "output"], base: 0.5 },
  { provider: "p-alpha", model: "gpt-4o", name: "GPT-4o", types: ["input", "output"], tiers: [null, "context_gt_128k"], base: 2.5 },
  { provider: "p-beta", model: "gpt-4o", name: "gpt-4o-2024-08-06", types: ["input", "output"], base: 2.5 },
  { provider: "p-alpha", model: "deepseek-v3", name: "DeepSeek-V3", types: ["input", "output"], base: 0.25 },
  { provider: "p-beta", model: "deepseek-v3", name: "deepseek-chat", types: ["input", "output"], base: 0.5 },
  { provider: "p-gamma", model: "deepseek-v3", name: "DeepSeek V3", types: ["input", "output"], base: 0.25 },
  { provider: "p-delta", model: "deepseek-v3", name: "deepseek-ai/DeepSeek-V3", types: ["input", "output"], base: 0.5 },
  { provider: "p-alpha", model: "mixtral-8x7b-instruct", name: "Mixtral 8x7B", types: ["input", "output"], base: 0.5 },
  { provider: "p-gamma", model: "mixtral-8x7b-instruct", name: "mixtral-8x7b-32768", types: ["input", "output"], base: 0.5 }
]

const FAMILY: Record<string, readonly [family: string, creator: string]> = {
  "llama-3.1-70b-instruct": ["llama-3.1", "meta"],
  "gpt-4o": ["gpt-4o", "openai"],
  "deepseek-v3": ["deepseek-v3", "deepseek"],
  "mixtral-8x7b-instruct": ["mixtral", "mistral"]
}

/** The prices published on one fixture day. Prices move every few days and many rows tie on each sort field. */
export const llmObservations = (day: number): Array<LlmTokenPriceObservationInput> => {
  const out: Array<LlmTokenPriceObservationInput> = []
  for (const o of OFFERS) {
    if (o.model === "mixtral-8x7b-instruct" && day > MIXTRAL_LAST_DAY) continue
    for (const source of o.sources ?? ["provider-pricing-page"]) for (const region of o.regions ?? ["global"]) {
      for (const qualifiers of o.tiers ?? [null]) for (const price_type of o.types) {
        const id = `${source}/${o.provider}/${o.model}/${region}/${qualifiers}/${price_type}`
        const epoch = Math.floor((day + Math.floor(hash(id) * 6)) / 6)
        const factor = price_type === "output" ? 2 : price_type === "cached_input" ? 0.5 : 1
        let price = (o.base + Math.floor(hash(`${o.provider}/${o.model}/${epoch}`) * 3) * 0.25) * factor * (qualifiers === null ? 1 : 2)
        if (o.provider === "p-delta" && o.model === "llama-3.1-70b-instruct") {
          // The rename comes with a price change, so both spellings open rows.
          if (day >= RENAME_DAY) price += 0.01
          if (price_type === "output" && day >= MISTAKE_FROM_DAY) price *= 1000
        }
        const [model_family, model_creator] = FAMILY[o.model]!
        const name = o.name !== "" ? o.name : day < RENAME_DAY ? "Meta Llama Legacy 70B" : "Llama-3.1-70B (new)"
        out.push({
          source, model: o.model, model_name: name, model_family, model_creator, serving_provider: o.provider, price_type,
          region, qualifiers, price_usd_per_1m_tokens: price,
          ...(o.provider === "p-beta" ? { raw_price: price / 1000, raw_price_unit: "usd_per_1k_tokens" } : { raw_price: price, raw_price_unit: "usd_per_1m_tokens" }),
          currency: "USD",
          extracted_at: dayIso(day)
        })
      }
    }
  }
  return out
}

/** 25 models whose names all contain "wide", to push `model_search` past its limit. */
export const wideObservations = (): Array<LlmTokenPriceObservationInput> =>
  Array.from({ length: 25 }, (_, i) => ({
    source: "provider-pricing-page", model: `wide-${String(i + 1).padStart(2, "0")}`, model_name: `Wide Model ${i + 1}`,
    serving_provider: "p-wide", price_type: "input", price_usd_per_1m_tokens: 0.5, raw_price: 0.5,
    raw_price_unit: "usd_per_1m_tokens", currency: "USD", extracted_at: dayIso(LAST_DAY)
  }))

const principal = (id: string, grants: Principal["grants"]): Principal => ({
  id: id as Principal["id"], name: id, grants, indices: "all", legacy_custom_index: false, procurement: false,
  rate_limit_per_minute: 100_000
})
const llm = (history: HistoryAccess): { llm_token_prices: Grant } => ({ llm_token_prices: { history } })

/** Fixture tokens: the secret is the key. The demo tokens are issued too. */
export const LLM_TOKENS = {
  all: principal("l-all", llm({ _tag: "unrestricted" })),
  other: principal("l-other", llm({ _tag: "unrestricted" })),
  current: principal("l-current", llm({ _tag: "none" })),
  since: principal("l-since", llm({ _tag: "since", date: "2026-05-20" })),
  rolling: principal("l-rolling", llm({ _tag: "rolling", days: 10 })),
  rentalOnly: principal("l-rental", { gpu_rental_prices: { history: { _tag: "unrestricted" } } })
} as const

/**
 * The fixture LLM market's prices, through the write path, without tokens (for a market that
 * issues its own: these token secrets are the rental fixture's too).
 */
export const seedPrices = Effect.gen(function* () {
  const ingest = yield* LlmTokenPriceIngest
  for (let day = 0; day <= LAST_DAY; day++) {
    yield* ingest.ingest(llmObservations(day))
    if (day === MIXTRAL_LAST_DAY + 1) {
      const mixtral = llmObservations(MIXTRAL_LAST_DAY).filter((o) => o.model === "mixtral-8x7b-instruct")
      yield* ingest.withdraw(mixtral.map((o) => basePriceKey({ region: "global", metric: "tokens", qualifiers: null, ...o })), dayIso(day))
    }
  }
  yield* ingest.ingest(wideObservations())
})

/** Seeds the fixture LLM market and its tokens through the write paths, on any storage. */
export const seed = Effect.gen(function* () {
  const auth = yield* Auth
  yield* seedPrices
  for (const [name, p] of Object.entries(LLM_TOKENS)) yield* auth.issue(p, name)
  for (const t of Demo.DEMO_TOKENS) yield* auth.issue(t.principal, t.secret)
})

/** A fresh SQLite file seeded with the fixture LLM market, and the market's services over it. */
export const llmFixtureLayer = (label = "llm") => {
  const dir = mkdtempSync(join(tmpdir(), `gpu-market-${label}-`))
  return Layer.effectDiscard(seed).pipe(
    Layer.provideMerge(marketLayer),
    Layer.provideMerge(SqliteStorage.layer({ filename: join(dir, "market.db") }))
  )
}
