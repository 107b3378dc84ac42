import { type EventSink, llmTokenPriceEvents } from "./event-log.js"
import * as Effect from "effect/Effect"
import type { LlmTokenPrice } from "../schema/llm-token-price.js"
import { memoryDataVersion, memoryTransact } from "./memory-versions.js"
import { memoryMarks } from "./marks.js"
import type { LlmModelSummary, LlmTokenPriceStore } from "./llm-token-prices.js"
import { inVersionScope, matchesPredicates, orderAndSeek } from "./rules.js"
import type { PagePlan } from "./plan.js"
import { llmTokenPriceKeys, llmTokenPriceTable } from "./tables.js"
import { sortedValues, summarise } from "./summary.js"

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

/** The least of a field's values, or null when no row named one. */
const leastOf = (values: ReadonlyArray<string>): string | null => values[0] ?? null

/** Per-model summaries of LLM token price rows, as every backend reports them. */
export const summariseLlmModels = (rows: Iterable<LlmTokenPrice>): Array<LlmModelSummary> =>
  summarise(llmTokenPriceTable.summary, rows).groups.map((g): LlmModelSummary => ({
    model: g.key[0] as string,
    model_family: leastOf(sortedValues(g, "model_family")),
    model_creator: leastOf(sortedValues(g, "model_creator")),
    model_names: sortedValues(g, "model_name"),
    currently_listed: g.listed,
    serving_providers: sortedValues(g, "serving_provider"),
    sources: sortedValues(g, "source"),
    price_types: sortedValues(g, "price_type"),
    regions: sortedValues(g, "region"),
    metrics: sortedValues(g, "metric"),
    qualifiers: sortedValues(g, "qualifiers")
  }))

/** An in-memory LLM token price store over fresh state. */
export const makeMemoryLlmTokenPriceStore = (sink: EventSink = () => {}): LlmTokenPriceStore["Type"] => {
  const rows = new Map<string, LlmTokenPrice>()
  const marks = memoryMarks()
  const version = memoryDataVersion()
  return {
    transact: memoryTransact("llm_token_prices.transact", rows, llmTokenPriceKeys, marks.marks, version, {
      sink, types: llmTokenPriceEvents
    }),
    version: version.version,
    mark: marks.mark,
    page: (plan) => Effect.sync(() => evaluateLlmTokenPricePlan(rows.values(), plan)),
    models: Effect.sync(() => summariseLlmModels(rows.values()))
  }
}
