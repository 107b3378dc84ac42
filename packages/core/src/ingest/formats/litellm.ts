import { type Conversion, type ConversionIssue, type Converted, skipTally, slugOf } from "./conversion.js"

/**
 * LiteLLM's price table (`model_prices_and_context_window.json` of `BerriAI/litellm`) as LLM
 * token price observations: one per entry and per-token price it carries (input, output, cached
 * input, cache writes, audio and image tokens, batch and priority tiers, long-context tiers…),
 * converted to USD per 1M tokens. LiteLLM keys are not slugs: the same model appears under its
 * provider's prefix and without it, with regions, deployment zones and image sizes in the path.
 * A key becomes a model slug, a region and qualifiers here, so that distinct priced things never
 * share an identity; keys that name the same priced thing at the same price are one observation.
 */

/** An LLM token price read from a LiteLLM entry, as the LLM write path takes it. */
export interface LitellmObservation {
  readonly source: string
  /** The model slug the key names, without its provider, region or tier (see `litellmKey`). */
  readonly model: string
  /** The LiteLLM key as written. */
  readonly model_name: string
  /** The organisation the key's path names before the model (`meta-llama`, `anthropic`), if any. */
  readonly model_creator: string | null
  /** `litellm_provider` as a slug. */
  readonly serving_provider: string
  readonly price_type: string
  readonly region: string
  readonly metric: string
  readonly qualifiers: string | null
  readonly price_usd_per_1m_tokens: number
  /** The figure as LiteLLM publishes it, per token (per 1k tokens for `computer_use_*_per_1k_tokens`). */
  readonly raw_price: number
  readonly raw_price_unit: "usd_per_token" | "usd_per_1k_tokens"
  readonly currency: "USD"
  readonly extracted_at: string
}

/** Options of `fromLitellm`. */
export interface LitellmOptions {
  /** The instant the table describes: every observation's `extracted_at`. */
  readonly observedAt: string
  /** The `source` of every observation (default `litellm`). */
  readonly source?: string
}

/** The source slug LiteLLM prices are stored under unless told otherwise. */
export const LITELLM_SOURCE = "litellm"

/** What a key names: its model slug, creator, region and the qualifiers its path carries. */
export interface LitellmKey {
  readonly model: string
  readonly creator: string | null
  readonly region: string
  readonly qualifiers: ReadonlyArray<string>
}

const AWS_REGION = /^[a-z]{2}(?:-gov)?-[a-z]+-\d$/
/** Azure data zones and deployment types a key may name after `azure/`. */
const AZURE_ZONES = new Set(["us", "eu"])
const DEPLOYMENTS: Readonly<Record<string, string>> = { "global": "deployment_global", "global-standard": "deployment_global_standard" }
/** Bedrock cross-region inference profiles prefixed to a model id (`us.anthropic.claude…`). */
const BEDROCK_PROFILE = /^(us|eu|apac|jp|au|ca|us-gov|global)\.(.+)$/

/** Path segments that qualify a price rather than name a model: image quality and size, diffusion steps, commitments, Bedrock's invoke API. */
const segmentQualifier = (segment: string): string | undefined => {
  if (/^(low|medium|high|standard|hd)$/.test(segment)) return `quality_${segment}`
  const size = /^(\d+|max)-x-(\d+|max)$/.exec(segment)
  if (size !== null) return `size_${size[1]}x${size[2]}`
  const steps = /^(\d+|max)-steps$/.exec(segment)
  if (steps !== null) return `steps_${steps[1]}`
  const commitment = /^(\d+)-month-commitment$/.exec(segment)
  if (commitment !== null) return `commitment_${commitment[1]}_months`
  if (segment === "invoke") return "api_invoke"
  return undefined
}

const snake = (s: string) => s.toLowerCase().replace(/-/g, "_")

/** Whether a key's first segment names its provider: the provider itself, or the family it is one of (`vertex_ai` of `vertex_ai-language-models`). */
const namesProvider = (segment: string, provider: string) =>
  snake(provider) === snake(segment) || snake(provider).startsWith(`${snake(segment)}_`)

/**
 * What a LiteLLM key names, given its provider. The leading provider segment goes (`gemini/`,
 * `vertex_ai/` of `vertex_ai-language-models`); an AWS region segment (`bedrock/us-east-1/…`),
 * an Azure data zone (`azure/eu/…`) and a Bedrock inference profile (`us.anthropic…`) become the
 * region; an Azure or Bedrock global deployment, image quality and size, steps, commitments and
 * Bedrock's invoke API become qualifiers; a Fireworks `accounts/<account>/<kind>/` path goes. The
 * last segment is the model; the one before it, if any, its creator.
 */
export const litellmKey = (key: string, provider: string): LitellmKey => {
  let parts = key.split("/")
  const qualifiers: Array<string> = []
  let region: string | undefined
  if (parts.length > 1 && namesProvider(parts[0]!, provider)) parts = parts.slice(1)
  const azure = provider.startsWith("azure")
  const bedrock = provider.startsWith("bedrock")
  while (parts.length > 1) {
    const segment = parts[0]!.toLowerCase()
    const qualifier = segmentQualifier(segment)
    if (AWS_REGION.test(segment)) region = segment
    else if (azure && AZURE_ZONES.has(segment)) region = segment
    else if (azure && DEPLOYMENTS[segment] !== undefined) qualifiers.push(DEPLOYMENTS[segment])
    else if (qualifier !== undefined) qualifiers.push(qualifier)
    else if (segment !== "*") break
    parts = parts.slice(1)
  }
  const account = parts.length >= 4 && parts[0] === "accounts" ? parts[1]! : undefined
  if (account !== undefined) parts = parts.slice(3)
  let model = parts[parts.length - 1]!
  let creator: string | null = parts.length >= 2 ? slugOf(parts[parts.length - 2]!) || null : account !== undefined && account !== "fireworks" ? slugOf(account) : null
  if (bedrock) {
    const profile = BEDROCK_PROFILE.exec(model)
    if (profile !== null) {
      if (profile[1] === "global") qualifiers.push("deployment_global")
      else if (region === undefined) region = profile[1]!
      else qualifiers.push(`profile_${profile[1]}`)
      model = profile[2]!
    }
    const vendor = /^([a-z0-9-]+)\.[^.]/.exec(model)
    if (creator === null && vendor !== null) creator = vendor[1]!
  }
  return { model: slugOf(model), creator, region: region ?? "global", qualifiers }
}

/** What one price field of an entry is: its price type, metric, qualifiers, and tokens per published unit. */
interface PriceKind {
  readonly price_type: string
  readonly metric: string
  readonly qualifiers: ReadonlyArray<string>
  readonly per: 1 | 1000
}

/** Per-token price fields, longest first where one begins another: the field, its price type and metric. */
const TOKEN_FIELDS: ReadonlyArray<readonly [string, string, string, 1 | 1000, ReadonlyArray<string>]> = [
  ["input_cost_per_token_cache_hit", "cached_input", "tokens", 1, []],
  ["input_cost_per_token", "input", "tokens", 1, []],
  ["output_cost_per_token", "output", "tokens", 1, []],
  ["input_cost_per_audio_token", "input", "audio_tokens", 1, []],
  ["output_cost_per_audio_token", "output", "audio_tokens", 1, []],
  ["input_cost_per_image_token", "input", "image_tokens", 1, []],
  ["output_cost_per_image_token", "output", "image_tokens", 1, []],
  ["output_cost_per_video_token", "output", "video_tokens", 1, []],
  ["output_cost_per_reasoning_token", "output", "reasoning_tokens", 1, []],
  ["cache_read_input_audio_token_cost", "cached_input", "audio_tokens", 1, []],
  ["cache_creation_input_audio_token_cost", "cache_write", "audio_tokens", 1, []],
  ["cache_read_input_token_cost", "cached_input", "tokens", 1, []],
  ["cache_creation_input_token_cost", "cache_write", "tokens", 1, []],
  ["citation_cost_per_token", "citation", "tokens", 1, []],
  ["computer_use_input_cost_per_1k_tokens", "input", "tokens", 1000, ["computer_use"]],
  ["computer_use_output_cost_per_1k_tokens", "output", "tokens", 1000, ["computer_use"]]
]

/** Tier suffixes of a per-token field: `_batches` makes it a batch price; the rest are qualifiers. */
const TIER = /^_(batches|priority|flex|above_1hr|above_(\d+k)_tokens)/

/**
 * The kind of a per-token price field, `"unknown_tier"` for a per-token field with a suffix this
 * reader does not know, or undefined for a field that is not a per-token price.
 */
const priceKind = (field: string): PriceKind | "unknown_tier" | undefined => {
  for (const [name, type, metric, per, base] of TOKEN_FIELDS) {
    if (!field.startsWith(name)) continue
    let rest = field.slice(name.length)
    let price_type = type
    const qualifiers = [...base]
    while (rest !== "") {
      const m = TIER.exec(rest)
      if (m === null) return "unknown_tier"
      if (m[1] === "batches") price_type = `batch_${price_type}`
      else if (m[1] === "above_1hr") qualifiers.push("cache_ttl_1h")
      else if (m[2] !== undefined) qualifiers.push(`context_gt_${m[2]}`)
      else qualifiers.push(`tier_${m[1]}`)
      rest = rest.slice(m[0].length)
    }
    return { price_type, metric, qualifiers, per }
  }
  return undefined
}

/** The line each top-level key of a JSON object text starts on. */
const keyLines = (text: string): Map<string, number> => {
  const lines = new Map<string, number>()
  let depth = 0
  let line = 1
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]
    if (ch === "\n") line++
    else if (ch === "{" || ch === "[") depth++
    else if (ch === "}" || ch === "]") depth--
    else if (ch === "\"") {
      const start = i
      const startLine = line
      for (i++; i < text.length && text[i] !== "\""; i++) {
        if (text[i] === "\\") i++
        else if (text[i] === "\n") line++
      }
      if (depth !== 1) continue
      let j = i + 1
      while (j < text.length && /\s/.test(text[j]!)) j++
      if (text[j] === ":") lines.set(JSON.parse(text.slice(start, i + 1)) as string, startLine)
    }
  }
  return lines
}

/** USD per token (or per 1k) as USD per 1M tokens, without the float noise of the product. */
const perMillion = (raw: number, per: 1 | 1000) => Number(((raw * 1_000_000) / per).toPrecision(12))

const identityOf = (o: LitellmObservation) =>
  JSON.stringify([o.serving_provider, o.model, o.region, o.price_type, o.metric, o.qualifiers])

/**
 * Converts LiteLLM's price table into LLM token price observations. `sample_spec` is skipped; so
 * are top-level values that are not entries (`not_a_model`, e.g. `last_updated`), entries without
 * `litellm_provider` (`no_provider`), prices that are not per token (`non_token_price`, per field:
 * per image, second, character, query, page…), prices in Databricks units (`non_usd_price`), and
 * a price another key of the same priced thing already gives at the same figure (`alias`). A free
 * price (0) is a real price and is kept. Where keys of one provider name the same priced thing at
 * different prices (`gemini/gemini-exp-1206` and `gemini-exp-1206`), the key that is not the bare
 * model takes its whole key as its model slug, so neither is lost.
 */
export const fromLitellm = (text: string, options: LitellmOptions): Conversion<LitellmObservation> => {
  const source = options.source ?? LITELLM_SOURCE
  const issues: Array<ConversionIssue> = []
  const { skip, counts } = skipTally()
  let table: unknown
  try {
    table = JSON.parse(text)
  } catch (e) {
    return { observations: [], skipped: counts, issues, unrecognised: `not JSON: ${(e as Error).message}` }
  }
  if (typeof table !== "object" || table === null || Array.isArray(table)) {
    return { observations: [], skipped: counts, issues, unrecognised: "expected a JSON object of entries" }
  }
  if (!Object.values(table).some((e) => typeof e === "object" && e !== null && "litellm_provider" in e)) {
    return { observations: [], skipped: counts, issues, unrecognised: "no entry names its litellm_provider" }
  }
  const lines = keyLines(text)
  /** Each entry's observations, with its model slug as the key alone would have it. */
  const entries: Array<{ readonly key: string; readonly line: number; readonly bare: boolean; observations: Array<LitellmObservation> }> = []
  for (const [key, entry] of Object.entries(table)) {
    const line = lines.get(key) ?? 1
    if (key === "sample_spec") {
      skip("sample_spec")
      continue
    }
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
      skip("not_a_model")
      continue
    }
    const provider: unknown = (entry as Record<string, unknown>).litellm_provider
    if (typeof provider !== "string" || slugOf(provider) === "") {
      skip("no_provider")
      continue
    }
    const named = litellmKey(key, provider)
    if (named.model === "" || named.model.length > 100) {
      issues.push({ line, key, reason: "unreadable", message: "the key names no model slug of 1 to 100 characters; entry left out" })
      continue
    }
    const observations: Array<LitellmObservation> = []
    for (const [field, value] of Object.entries(entry as Record<string, unknown>)) {
      if (!field.includes("cost")) continue
      if (field.includes("_dbu_")) {
        skip("non_usd_price")
        continue
      }
      const kind = priceKind(field)
      if (kind === undefined) {
        skip("non_token_price")
        continue
      }
      if (kind === "unknown_tier") {
        issues.push({ line, key, reason: "unreadable", message: `${field}: a per-token price with a tier this importer does not know; price left out` })
        continue
      }
      if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
        issues.push({ line, key, reason: "not_a_price", message: `${field}: expected a price of 0 or more, got ${JSON.stringify(value)}; price left out` })
        continue
      }
      const qualifiers = [...new Set([...named.qualifiers, ...kind.qualifiers])].sort()
      observations.push({
        source, model: named.model, model_name: key, model_creator: named.creator, serving_provider: slugOf(provider),
        price_type: kind.price_type, region: named.region, metric: kind.metric,
        qualifiers: qualifiers.length === 0 ? null : qualifiers.join(";"),
        price_usd_per_1m_tokens: perMillion(value, kind.per), raw_price: value,
        raw_price_unit: kind.per === 1 ? "usd_per_token" : "usd_per_1k_tokens", currency: "USD", extracted_at: options.observedAt
      })
    }
    entries.push({ key, line, bare: slugOf(key) === named.model, observations })
  }

  // Keys of one priced thing at different prices: all but one take their whole key as the model.
  const byIdentity = new Map<string, Array<{ readonly entry: (typeof entries)[number]; readonly price: number }>>()
  for (const entry of entries) {
    for (const o of entry.observations) {
      const id = identityOf(o)
      const list = byIdentity.get(id) ?? []
      list.push({ entry, price: o.raw_price })
      byIdentity.set(id, list)
    }
  }
  const renamed = new Set<(typeof entries)[number]>()
  for (const group of byIdentity.values()) {
    if (new Set(group.map((g) => g.price)).size < 2) continue
    // The bare model keeps its slug; else the shortest key, then the first in text order.
    const keep = [...group].sort((a, b) =>
      Number(b.entry.bare) - Number(a.entry.bare) || a.entry.key.length - b.entry.key.length || (a.entry.key < b.entry.key ? -1 : 1))[0]!.entry
    for (const g of group) if (g.entry !== keep) renamed.add(g.entry)
  }
  for (const entry of renamed) entry.observations = entry.observations.map((o) => ({ ...o, model: slugOf(entry.key) }))

  // Keys of one priced thing at one price are one observation: the first key in text order names it.
  const observations: Array<Converted<LitellmObservation>> = []
  const seen = new Map<string, number>()
  for (const entry of entries) {
    for (const o of entry.observations) {
      const id = identityOf(o)
      const first = seen.get(id)
      if (first === undefined) {
        seen.set(id, o.raw_price)
        observations.push({ line: entry.line, key: entry.key, observation: o })
      } else if (first === o.raw_price) skip("alias")
      else issues.push({ line: entry.line, key: entry.key, reason: "conflicting_price", message: `${o.price_type} ${o.metric}: the same priced thing was read first at another price; price left out` })
    }
  }
  return { observations, skipped: counts, issues }
}
