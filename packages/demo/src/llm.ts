import * as Effect from "effect/Effect"
import {
  basePriceKey, formatInstant, LlmTokenPriceIngest, type LlmTokenPriceObservationInput, MICROS_PER_DAY
} from "@gpu-market/core"
import { seedMark } from "./seed-mark.js"
import { unit } from "./random.js"

/**
 * The demo LLM price market: deterministic published prices of open and closed models across
 * serving providers. Every price is a function of the priced item and the calendar day, so
 * seeding any range of days gives the same rows, and a restart extends the market to today
 * without changing the past. Mistakes and a retirement are placed relative to the day seeding
 * runs, as the rental demo's retirement is.
 */

type PriceType = "input" | "output" | "cached_input" | "cache_write" | "batch_input" | "batch_output"

/** A model of the demo LLM price market. */
export interface ModelSpec {
  readonly slug: string
  readonly family: string
  readonly creator: string
  /** Ways providers write the model; each provider uses one. */
  readonly names: ReadonlyArray<string>
  /** USD per 1M tokens at list price, by price type (derived types fall back to input/output). */
  readonly input: number
  readonly output: number
  readonly cachedInput?: number
  readonly cacheWrite?: number
  /** Context tiers: qualifier and price factor; none when the price does not depend on context. */
  readonly tiers?: ReadonlyArray<readonly [qualifier: string, factor: number]>
  /** No longer priced anywhere from this many days before today. */
  readonly retiredDaysAgo?: number
}

/** The demo models: open-weight models served by many providers and closed ones by few. */
export const DEMO_LLM_MODELS: ReadonlyArray<ModelSpec> = [
  { slug: "llama-3.1-8b-instruct", family: "llama-3.1", creator: "meta", input: 0.1, output: 0.1,
    names: ["Meta-Llama-3.1-8B-Instruct", "Llama 3.1 8B Instruct", "llama-v3p1-8b-instruct", "meta-llama/Meta-Llama-3.1-8B-Instruct", "llama-3.1-8b-instant"] },
  { slug: "llama-3.1-70b-instruct", family: "llama-3.1", creator: "meta", input: 0.7, output: 0.8,
    names: ["Meta-Llama-3.1-70B-Instruct-Turbo", "Llama 3.1 70B Instruct", "llama-v3p1-70b-instruct", "meta-llama/Meta-Llama-3.1-70B-Instruct", "llama-3.1-70b-versatile"] },
  { slug: "llama-3.1-405b-instruct", family: "llama-3.1", creator: "meta", input: 3, output: 3,
    names: ["Meta-Llama-3.1-405B-Instruct-Turbo", "Llama 3.1 405B Instruct", "llama-v3p1-405b-instruct", "meta-llama/Meta-Llama-3.1-405B-Instruct"] },
  { slug: "mixtral-8x7b-instruct", family: "mixtral", creator: "mistral", input: 0.45, output: 0.45, retiredDaysAgo: 45,
    names: ["Mixtral-8x7B-Instruct-v0.1", "Mixtral 8x7B Instruct", "mixtral-8x7b-32768", "mistralai/Mixtral-8x7B-Instruct-v0.1"] },
  { slug: "deepseek-v3", family: "deepseek-v3", creator: "deepseek", input: 0.27, output: 1.1, cachedInput: 0.07,
    names: ["DeepSeek-V3", "deepseek-chat", "deepseek-ai/DeepSeek-V3", "DeepSeek V3"] },
  { slug: "qwen-2.5-72b-instruct", family: "qwen-2.5", creator: "alibaba", input: 0.4, output: 0.6,
    names: ["Qwen2.5-72B-Instruct", "qwen2.5-72b-instruct", "Qwen/Qwen2.5-72B-Instruct-Turbo", "Qwen 2.5 72B Instruct"] },
  { slug: "gpt-4o", family: "gpt-4o", creator: "openai", input: 2.5, output: 10, cachedInput: 1.25,
    names: ["gpt-4o", "GPT-4o", "gpt-4o-2024-08-06"] },
  { slug: "gpt-4o-mini", family: "gpt-4o", creator: "openai", input: 0.15, output: 0.6, cachedInput: 0.075,
    names: ["gpt-4o-mini", "GPT-4o mini", "gpt-4o-mini-2024-07-18"] },
  { slug: "claude-3.5-sonnet", family: "claude-3.5", creator: "anthropic", input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75,
    names: ["Claude 3.5 Sonnet", "claude-3-5-sonnet-20241022", "anthropic.claude-3-5-sonnet-20241022-v2:0", "claude-3-5-sonnet-v2@20241022"] },
  { slug: "gemini-1.5-pro", family: "gemini-1.5", creator: "google", input: 1.25, output: 5,
    tiers: [["context_le_128k", 1], ["context_gt_128k", 2]],
    names: ["Gemini 1.5 Pro", "gemini-1.5-pro-002", "gemini-1.5-pro"] }
]

type RawUnit = "usd_per_1m_tokens" | "usd_per_1k_tokens" | "usd_per_token" | "eur_per_1m_tokens"

interface ProviderSpec {
  readonly slug: string
  readonly unit: RawUnit
  /** Regions with their price factor; `global` when the price applies everywhere. */
  readonly regions: ReadonlyArray<readonly [region: string, factor: number]>
  /** Price level relative to list price. */
  readonly level: number
  readonly models: Readonly<Record<string, ReadonlyArray<PriceType>>>
}

const IO: ReadonlyArray<PriceType> = ["input", "output"]
const GLOBAL = [["global", 1]] as const

const PROVIDERS: ReadonlyArray<ProviderSpec> = [
  { slug: "openai", unit: "usd_per_1m_tokens", regions: GLOBAL, level: 1, models: {
    "gpt-4o": ["input", "output", "cached_input", "batch_input", "batch_output"],
    "gpt-4o-mini": ["input", "output", "cached_input", "batch_input", "batch_output"] } },
  { slug: "azure", unit: "usd_per_1k_tokens", regions: [["us-east", 1], ["eu-west", 1.1]], level: 1.1, models: {
    "gpt-4o": ["input", "output", "cached_input"], "gpt-4o-mini": ["input", "output", "cached_input"],
    "llama-3.1-405b-instruct": IO } },
  { slug: "anthropic", unit: "usd_per_1m_tokens", regions: GLOBAL, level: 1, models: {
    "claude-3.5-sonnet": ["input", "output", "cached_input", "cache_write", "batch_input", "batch_output"] } },
  { slug: "aws-bedrock", unit: "usd_per_1k_tokens", regions: [["us-east", 1], ["eu-central", 1.08], ["ap-northeast", 1.12]], level: 1.25, models: {
    "claude-3.5-sonnet": ["input", "output", "batch_input", "batch_output"], "llama-3.1-8b-instruct": IO,
    "llama-3.1-70b-instruct": IO, "llama-3.1-405b-instruct": IO, "mixtral-8x7b-instruct": IO } },
  { slug: "google-vertex", unit: "usd_per_1m_tokens", regions: GLOBAL, level: 1.1, models: {
    "claude-3.5-sonnet": ["input", "output", "cached_input"], "gemini-1.5-pro": IO, "llama-3.1-405b-instruct": IO } },
  { slug: "google-ai-studio", unit: "usd_per_1m_tokens", regions: GLOBAL, level: 1, models: { "gemini-1.5-pro": IO } },
  { slug: "together", unit: "usd_per_1m_tokens", regions: GLOBAL, level: 1.1, models: {
    "llama-3.1-8b-instruct": IO, "llama-3.1-70b-instruct": IO, "llama-3.1-405b-instruct": IO, "mixtral-8x7b-instruct": IO,
    "qwen-2.5-72b-instruct": IO, "deepseek-v3": IO } },
  { slug: "fireworks", unit: "usd_per_1m_tokens", regions: GLOBAL, level: 1, models: {
    "llama-3.1-8b-instruct": IO, "llama-3.1-70b-instruct": IO, "llama-3.1-405b-instruct": IO, "mixtral-8x7b-instruct": IO,
    "qwen-2.5-72b-instruct": IO, "deepseek-v3": ["input", "output", "cached_input"] } },
  { slug: "groq", unit: "usd_per_1m_tokens", regions: GLOBAL, level: 0.75, models: {
    "llama-3.1-8b-instruct": IO, "llama-3.1-70b-instruct": IO, "mixtral-8x7b-instruct": IO } },
  { slug: "deepinfra", unit: "usd_per_1m_tokens", regions: GLOBAL, level: 0.6, models: {
    "llama-3.1-8b-instruct": IO, "llama-3.1-70b-instruct": IO, "llama-3.1-405b-instruct": IO, "mixtral-8x7b-instruct": IO,
    "qwen-2.5-72b-instruct": IO, "deepseek-v3": IO } },
  { slug: "deepseek", unit: "usd_per_1m_tokens", regions: GLOBAL, level: 1, models: {
    "deepseek-v3": ["input", "output", "cached_input"] } },
  { slug: "alibaba-cloud", unit: "usd_per_1k_tokens", regions: [["ap-southeast", 1], ["us-east", 1.05]], level: 1, models: {
    "qwen-2.5-72b-instruct": IO } },
  { slug: "scaleway", unit: "eur_per_1m_tokens", regions: [["eu-west", 1]], level: 1.15, models: {
    "llama-3.1-70b-instruct": IO, "mixtral-8x7b-instruct": IO } },
  { slug: "novita", unit: "usd_per_1m_tokens", regions: GLOBAL, level: 0.65, models: {
    "llama-3.1-8b-instruct": IO, "llama-3.1-70b-instruct": IO, "qwen-2.5-72b-instruct": IO } },
  { slug: "hyperbolic", unit: "usd_per_token", regions: GLOBAL, level: 0.8, models: {
    "llama-3.1-405b-instruct": IO, "qwen-2.5-72b-instruct": IO, "deepseek-v3": IO } }
]

/** Providers whose prices an aggregator also lists, for the models it lists. */
const AGGREGATED: Readonly<Record<string, ReadonlyArray<string>>> = {
  together: ["llama-3.1-70b-instruct", "deepseek-v3"],
  fireworks: ["llama-3.1-70b-instruct", "deepseek-v3"],
  deepinfra: ["llama-3.1-70b-instruct", "deepseek-v3"],
  novita: ["llama-3.1-70b-instruct"]
}

/** The demo's fixed exchange rate, USD per EUR. */
const USD_PER_EUR = 1.08

/**
 * Planted mistakes, placed relative to today: a provider publishing a per-1K price as per-1M
 * (1000× too high, still current) and one publishing a per-1M price as per-1K (1000× too low,
 * corrected since).
 */
const MISTAKES: ReadonlyArray<{
  readonly provider: string
  readonly model: string
  readonly priceType: PriceType
  readonly factor: number
  /** Days before today the mistake starts and ends (exclusive; 0 = still current). */
  readonly fromDaysAgo: number
  readonly untilDaysAgo: number
}> = [
  { provider: "novita", model: "llama-3.1-70b-instruct", priceType: "output", factor: 1000, fromDaysAgo: 20, untilDaysAgo: 0 },
  { provider: "hyperbolic", model: "llama-3.1-405b-instruct", priceType: "input", factor: 0.001, fromDaysAgo: 110, untilDaysAgo: 80 }
]

/** One priced item of the demo market. */
export interface DemoLlmItem {
  /** Items of one provider and model move together. */
  readonly group: string
  readonly model: ModelSpec
  readonly observation: Omit<LlmTokenPriceObservationInput, "price_usd_per_1m_tokens" | "raw_price" | "extracted_at"> & {
    readonly region: string
    readonly metric: string
    readonly qualifiers: string | null
    readonly raw_price_unit: RawUnit
  }
  /** USD per 1M tokens before moves. */
  readonly basePrice: number
}

const round = (n: number, places: number) => Math.round(n * 10 ** places) / 10 ** places

const listPrice = (m: ModelSpec, t: PriceType): number => {
  switch (t) {
    case "input": return m.input
    case "output": return m.output
    case "cached_input": return m.cachedInput ?? m.input * 0.5
    case "cache_write": return m.cacheWrite ?? m.input * 1.25
    case "batch_input": return m.input * 0.5
    case "batch_output": return m.output * 0.5
  }
}

/** Every priced item of the demo market, in a fixed order. */
export const demoLlmItems = (): ReadonlyArray<DemoLlmItem> => {
  const models = new Map(DEMO_LLM_MODELS.map((m) => [m.slug, m]))
  const out: Array<DemoLlmItem> = []
  for (const p of PROVIDERS) {
    for (const [slug, types] of Object.entries(p.models)) {
      const model = models.get(slug)!
      const sources: ReadonlyArray<readonly [source: string, name: string]> = [
        ["provider-pricing-page", model.names[Math.floor(unit(p.slug, slug, "name") * model.names.length)]!],
        ...((AGGREGATED[p.slug] ?? []).includes(slug) ? [["openrouter", model.names[1]!] as const] : [])
      ]
      const group = `${p.slug}/${slug}`
      const spread = 0.9 + unit(group, "spread") * 0.2
      for (const [source, name] of sources) for (const [region, regionFactor] of p.regions) for (const type of types) {
        for (const [qualifier, tierFactor] of model.tiers ?? [[null, 1] as const]) {
          // An aggregator lists every provider in USD per 1M tokens.
          const rawUnit: RawUnit = source === "openrouter" ? "usd_per_1m_tokens" : p.unit
          out.push({
            group,
            model,
            basePrice: listPrice(model, type) * p.level * spread * regionFactor * tierFactor,
            observation: {
              source,
              model: slug,
              model_name: name,
              model_family: model.family,
              model_creator: model.creator,
              serving_provider: p.slug,
              price_type: type,
              region,
              metric: "tokens",
              qualifiers: qualifier,
              raw_price_unit: rawUnit,
              currency: rawUnit === "eur_per_1m_tokens" ? "EUR" : "USD"
            }
          })
        }
      }
    }
  }
  return out
}

/** Length in days of a group's price epochs; a group may move at each epoch boundary. */
const EPOCH_DAYS = 40

/** A group's price factor on an epoch day: a few groups never move, the rest step between levels. */
const moveFactor = (group: string, day: number): number => {
  if (unit(group, "static") < 0.3) return 1
  const epoch = Math.floor((day + Math.floor(unit(group, "phase") * EPOCH_DAYS)) / EPOCH_DAYS)
  const r = unit(group, "epoch", epoch)
  return r < 0.45 ? 1 : r < 0.75 ? 0.9 : r < 0.92 ? 0.8 : 0.7
}

/** The USD price per 1M tokens of an item on an epoch day, before any planted mistake. */
export const demoLlmPrice = (item: DemoLlmItem, day: number): number => round(item.basePrice * moveFactor(item.group, day), 4)

/** Raw price and normalised USD price per 1M tokens, as the provider's unit states them. */
const published = (usdPer1m: number, rawUnit: RawUnit): { raw_price: number; price_usd_per_1m_tokens: number } => {
  switch (rawUnit) {
    case "usd_per_1m_tokens": return { raw_price: usdPer1m, price_usd_per_1m_tokens: usdPer1m }
    case "usd_per_1k_tokens": {
      const raw = round(usdPer1m / 1_000, 10)
      return { raw_price: raw, price_usd_per_1m_tokens: round(raw * 1_000, 6) }
    }
    case "usd_per_token": {
      const raw = round(usdPer1m / 1_000_000, 13)
      return { raw_price: raw, price_usd_per_1m_tokens: round(raw * 1_000_000, 6) }
    }
    case "eur_per_1m_tokens": {
      const raw = round(usdPer1m / USD_PER_EUR, 4)
      return { raw_price: raw, price_usd_per_1m_tokens: round(raw * USD_PER_EUR, 6) }
    }
  }
}

/** The prices published on an epoch day, extracted at that day's midnight. */
export const demoLlmObservations = (day: number, today: number): ReadonlyArray<LlmTokenPriceObservationInput> => {
  const extracted_at = formatInstant(day * MICROS_PER_DAY)
  const out: Array<LlmTokenPriceObservationInput> = []
  for (const item of demoLlmItems()) {
    const o = item.observation
    if (item.model.retiredDaysAgo !== undefined && day >= today - item.model.retiredDaysAgo) continue
    let price = demoLlmPrice(item, day)
    for (const m of MISTAKES) {
      const active = day >= today - m.fromDaysAgo && (m.untilDaysAgo === 0 || day < today - m.untilDaysAgo)
      if (active && o.serving_provider === m.provider && o.model === m.model && o.price_type === m.priceType &&
        o.source === "provider-pricing-page") price = round(price * m.factor, 6)
    }
    out.push({ ...o, ...published(price, o.raw_price_unit), extracted_at })
  }
  return out
}

/** Days of history the demo LLM market holds before today. */
export const DEMO_LLM_HISTORY_DAYS = 180

/**
 * Seeds the demo LLM market through the real write path, from 180 days before `today` on an
 * empty store or from the day after its own last seeded day, so a store seeded before this type
 * existed still gets its full history. Running it twice on one day changes nothing.
 */
export const seedLlmDemo = Effect.fn("Demo.seedLlm")(function* (today: number, historyDays = DEMO_LLM_HISTORY_DAYS) {
  const ingest = yield* LlmTokenPriceIngest
  const mark = yield* seedMark("demo_llm_seeded_through", ingest.mark)
  const first = yield* mark.firstDay(today - historyDays)
  const retiring = new Map<number, Array<string>>()
  for (const model of DEMO_LLM_MODELS) {
    if (model.retiredDaysAgo === undefined) continue
    const keys = demoLlmItems().filter((i) => i.model === model).map((i) => basePriceKey(i.observation))
    retiring.set(today - model.retiredDaysAgo, keys)
  }
  for (let day = first; day <= today; day++) {
    // The day's last write carries its mark; a seed killed before it sends the day again, and
    // what was stored of it is a no-op.
    const keys = retiring.get(day) ?? []
    yield* ingest.ingest(demoLlmObservations(day, today), keys.length > 0 ? {} : { mark: mark.through(day) })
    if (keys.length > 0) yield* ingest.withdraw(keys, formatInstant(day * MICROS_PER_DAY), { mark: mark.through(day) })
  }
})
