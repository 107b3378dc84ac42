import { type LlmTokenPrice, llmTokenPriceFields } from "@gpu-market/core"
import {
  llmTokenPriceEvents, type LlmModelSummary, llmTokenPriceKeys, type LlmTokenPriceStore, llmTokenPriceTable, cmp
} from "@gpu-market/core/storage"
import type { RedisClient } from "./client.js"
import { decode, encode } from "./codec.js"
import { cachedByVersion, replies, type Versioned } from "./reads.js"
import { makeTable, type RowCacheOptions } from "./table.js"
import { readMark } from "./settings.js"
import { redisTransact, versionTableSpec } from "./versions.js"
import { readVersion } from "./data-version.js"

/**
 * An LLM token price row as stored: the outlier flag in the text form (`"true"` / `"false"`)
 * that predicates compare, so the engine's predicate matching applies to stored rows as they
 * are. Readers get the boolean back.
 */
export type StoredLlmTokenPrice = Omit<LlmTokenPrice, "is_price_outlier"> & { readonly is_price_outlier: "true" | "false" }

const toStored = (r: LlmTokenPrice): StoredLlmTokenPrice => ({ ...r, is_price_outlier: r.is_price_outlier ? "true" : "false" })
const fromStored = (s: StoredLlmTokenPrice): LlmTokenPrice => ({ ...s, is_price_outlier: s.is_price_outlier === "true" })

/**
 * LLM token price rows as a table (`versionTableSpec`): current rows indexed per model, per
 * provider and over all rows (its definition's `unanchoredCurrent`), for `/latest` needs no
 * anchor; every version indexed the same way.
 */
export const llmTokenPriceSpec = versionTableSpec<StoredLlmTokenPrice>(llmTokenPriceTable, "llm", {
  // A stored row keeps the row's field order (the flag is replaced in place).
  structures: [llmTokenPriceFields]
})

/** The row fields a model summary lists, each kept as a `[model, field, value]` member of `values`. */
const SUMMARY_FIELDS = [
  "model_name", "serving_provider", "source", "price_type", "region", "metric", "qualifiers", "model_family", "model_creator"
] as const
type SummaryField = (typeof SUMMARY_FIELDS)[number]

/**
 * The LLM token price store. Besides the table it keeps, under the same hash tag:
 * `current` (hash base_price_key → price_key of its current row), `values` (set of msgpack
 * `[model, field, value]`, every summary value any row ever carried), `listed` (hash model →
 * number of current rows) and `version` (bumped by every write, so the summary is cached until
 * something changes).
 */
export const makeLlmTokenPriceStore = (client: RedisClient, rowCache?: RowCacheOptions): LlmTokenPriceStore["Type"] => {
  const table = makeTable(client, llmTokenPriceSpec, rowCache)
  const keys = table.keys("current", "values", "listed", "version", "marks")
  const { redis } = client

  /** The summaries from the maintained values and counts; one MULTI, so both come from one moment. */
  const readModels = async (): Promise<Versioned<ReadonlyArray<LlmModelSummary>>> => {
    const [values, listed, version] = (await replies(redis.multi().smembersBuffer(keys.values).hgetall(keys.listed).get(keys.version))) as [
      Array<Buffer>, Record<string, string>, string | null
    ]
    const byModel = new Map<string, Partial<Record<SummaryField, Array<string>>>>()
    for (const bytes of values) {
      const [model, field, value] = decode<[string, SummaryField, string]>(bytes)
      let lists = byModel.get(model)
      if (lists === undefined) {
        lists = {}
        byModel.set(model, lists)
      }
      ;(lists[field] ??= []).push(value)
    }
    const models = [...byModel.keys()].sort(cmp).map((model): LlmModelSummary => {
      const of = (field: SummaryField) => (byModel.get(model)![field] ?? []).sort(cmp)
      return {
        model,
        // The first in sort order, whatever order rows arrived in.
        model_family: of("model_family")[0] ?? null,
        model_creator: of("model_creator")[0] ?? null,
        model_names: of("model_name"),
        currently_listed: Number(listed[model] ?? 0) > 0,
        serving_providers: of("serving_provider"),
        sources: of("source"),
        price_types: of("price_type"),
        regions: of("region"),
        metrics: of("metric"),
        qualifiers: of("qualifiers")
      }
    })
    return { version, value: models }
  }

  return {
    mark: readMark(client, keys.marks, "llm_token_prices.mark"),

    version: readVersion(client, keys.version, "llm_token_prices.version"),
    transact: redisTransact(client, "llm_token_prices.transact", {
      table,
      keys: llmTokenPriceKeys,
      baseField: llmTokenPriceTable.scope.of,
      toStored,
      fromStored,
      currentKey: keys.current,
      versionKey: keys.version,
      marksKey: keys.marks,
      events: llmTokenPriceEvents,
      closed: (batch, row) => batch.op("HINCRBY", keys.listed, row.model, "-1"),
      opened: (batch, r, once) => {
        if (r.valid_to === null) batch.op("HINCRBY", keys.listed, r.model, "1")
        for (const field of SUMMARY_FIELDS) {
          const value = r[field]
          if (value !== null && once(`${r.model}\u0000${field}\u0000${value}`)) batch.op("SADD", keys.values, encode([r.model, field, value]))
        }
      }
    }),

    page: (plan) => client.run("llm_token_prices.page", async () => (await table.page(plan)).map(fromStored)),

    models: cachedByVersion(client, "llm_token_prices.models", keys.version, readModels)
  }
}
