import * as Effect from "effect/Effect"
import type { LlmTokenPrice } from "../schema/llm-token-price.js"
import { memoryTransact } from "./memory-versions.js"
import { memoryMarks } from "./marks.js"
import type { LlmModelSummary, LlmTokenPriceStore } from "./llm-token-prices.js"
import { cmp, inVersionScope, matchesPredicates, orderAndSeek } from "./rules.js"
import type { PagePlan } from "./plan.js"
import { llmTokenPriceKeys, llmTokenPriceTable } from "./tables.js"

/** The reference LLM token price store: plain statements of what every backend must return. */

/** The row with its boolean flag in text form, as predicates compare it. */
const comparable = (r: LlmTokenPrice) => ({ ...r, is_price_outlier: r.is_price_outlier ? "true" : "false" })

/** The reference evaluation of an LLM token price plan. */
export const evaluateLlmTokenPricePlan = (rows: Iterable<LlmTokenPrice>, plan: PagePlan): Array<LlmTokenPrice> =>
  orderAndSeek(
    [...rows].filter((r) => inVersionScope(r, plan.scope) && matchesPredicates(comparable(r), plan.predicates)),
    plan,
    llmTokenPriceTable.tie
  )

const sorted = (values: Iterable<string>) => [...new Set(values)].sort(cmp)
const firstOf = (values: Iterable<string | null>): string | null => {
  let first: string | null = null
  for (const v of values) if (v !== null && (first === null || v < first)) first = v
  return first
}

/** Per-model summaries of LLM token price rows, as every backend reports them. */
export const summariseLlmModels = (rows: Iterable<LlmTokenPrice>): Array<LlmModelSummary> => {
  const byModel = new Map<string, Array<LlmTokenPrice>>()
  for (const r of rows) {
    const list = byModel.get(r.model)
    if (list === undefined) byModel.set(r.model, [r])
    else list.push(r)
  }
  return [...byModel.keys()].sort(cmp).map((model): LlmModelSummary => {
    const rs = byModel.get(model)!
    return {
      model,
      model_family: firstOf(rs.map((r) => r.model_family)),
      model_creator: firstOf(rs.map((r) => r.model_creator)),
      model_names: sorted(rs.map((r) => r.model_name)),
      currently_listed: rs.some((r) => r.valid_to === null),
      serving_providers: sorted(rs.map((r) => r.serving_provider)),
      sources: sorted(rs.map((r) => r.source)),
      price_types: sorted(rs.map((r) => r.price_type)),
      regions: sorted(rs.map((r) => r.region)),
      metrics: sorted(rs.map((r) => r.metric)),
      qualifiers: sorted(rs.flatMap((r) => (r.qualifiers === null ? [] : [r.qualifiers])))
    }
  })
}

/** An in-memory LLM token price store over fresh state. */
export const makeMemoryLlmTokenPriceStore = (): LlmTokenPriceStore["Type"] => {
  const rows = new Map<string, LlmTokenPrice>()
  const marks = memoryMarks()
  return {
    transact: memoryTransact("llm_token_prices.transact", rows, llmTokenPriceKeys, marks.marks),
    mark: marks.mark,
    inForce: (models, at) => Effect.sync(() => {
      const wanted = new Set(models)
      return [...rows.values()].filter((r) => wanted.has(r.model) && inVersionScope(r, { _tag: "asOf", at }))
    }),
    page: (plan) => Effect.sync(() => evaluateLlmTokenPricePlan(rows.values(), plan)),
    models: Effect.sync(() => summariseLlmModels(rows.values()))
  }
}
