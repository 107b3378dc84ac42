import { type LlmTokenPrice, llmTokenPriceFields } from "@gpu-market/core"
import {
  type LlmModelSummary, type LlmTokenPriceChanges, LlmTokenPriceStore, llmTokenPriceTable, cmp, inVersionScope, StorageConflict
} from "@gpu-market/core/storage"
import * as Effect from "effect/Effect"
import { Batch, untilApplied } from "./batch.js"
import type { RedisClient } from "./client.js"
import { decode, encode } from "./codec.js"
import { cachedByVersion, replies, type Versioned } from "./reads.js"
import { makeTable, type StoredRow, type TableSpec, versionScopeBounds } from "./table.js"

/**
 * An LLM token price row as stored: the outlier flag in the text form (`"true"` / `"false"`)
 * that predicates compare, so the engine's predicate matching applies to stored rows as they
 * are. Readers get the boolean back.
 */
export type StoredLlmTokenPrice = Omit<LlmTokenPrice, "is_price_outlier"> & { readonly is_price_outlier: "true" | "false" }

const toStored = (r: LlmTokenPrice): StoredLlmTokenPrice => ({ ...r, is_price_outlier: r.is_price_outlier ? "true" : "false" })
const fromStored = (s: StoredLlmTokenPrice): LlmTokenPrice => ({ ...s, is_price_outlier: s.is_price_outlier === "true" })

/**
 * LLM token price rows as a table: current rows indexed per model, per provider and over all
 * rows for `/latest` (which needs no anchor); every version indexed the same way for `/as-of`
 * and `/history`, which filter the versions they walk by scope (a window or an instant bounds a
 * walk by `valid_from`); the versions of one price in a group.
 */
export const llmTokenPriceSpec: TableSpec<StoredLlmTokenPrice> = {
  tag: "llm",
  tie: llmTokenPriceTable.tie,
  sortFields: llmTokenPriceTable.sortable,
  subsets: [
    { name: "cur", holds: (r) => r.valid_to === null, anchors: llmTokenPriceTable.anchors, global: true },
    { name: "all", holds: () => true, anchors: llmTokenPriceTable.anchors, global: true }
  ],
  groups: [llmTokenPriceTable.scope.of],
  subsetsFor: (scope) => (scope._tag === "latest" ? ["cur"] : ["all"]),
  inScope: inVersionScope,
  scopeBounds: versionScopeBounds,
  // A stored row keeps the row's field order (the flag is replaced in place).
  structures: [llmTokenPriceFields]
}

/** The row fields a model summary lists, each kept as a `[model, field, value]` member of `values`. */
const SUMMARY_FIELDS = [
  "model_name", "serving_provider", "source", "price_type", "region", "metric", "qualifiers", "model_family", "model_creator"
] as const
type SummaryField = (typeof SUMMARY_FIELDS)[number]

/** Why an apply cannot go ahead, decided from what it read; `undefined` when it can. */
const conflictOf = (
  changes: LlmTokenPriceChanges,
  closing: ReadonlyArray<StoredRow<StoredLlmTokenPrice> | undefined>,
  existing: ReadonlyMap<string, unknown>,
  current: ReadonlyMap<string, string | null>
): StorageConflict | undefined => {
  // Closes apply in order, so a second close of one row finds it no longer current.
  const closed = new Set<string>()
  for (const [i, c] of changes.close.entries()) {
    const stored = closing[i]
    if (stored === undefined || stored.row.valid_to !== null || closed.has(c.price_key)) {
      return new StorageConflict({ detail: `row ${c.price_key} is no longer current` })
    }
    closed.add(c.price_key)
  }
  const taken = new Set<string>()
  for (const [base, pk] of current) if (pk !== null && !closed.has(pk)) taken.add(base)
  const opened = new Set<string>()
  for (const r of changes.open) {
    if (existing.has(r.price_key) || opened.has(r.price_key)) return new StorageConflict({ detail: `row ${r.price_key} exists` })
    opened.add(r.price_key)
    if (r.valid_to === null) {
      if (taken.has(r.base_price_key)) return new StorageConflict({ detail: `price ${r.base_price_key} already has a current row` })
      taken.add(r.base_price_key)
    }
  }
  return undefined
}

/**
 * The LLM token price store. Besides the table it keeps, under the same hash tag:
 * `current` (hash base_price_key → price_key of its current row), `values` (set of msgpack
 * `[model, field, value]`, every summary value any row ever carried), `listed` (hash model →
 * number of current rows) and `version` (bumped by every apply, so the summary is cached until
 * something changes).
 */
export const makeLlmTokenPriceStore = (client: RedisClient): LlmTokenPriceStore["Type"] => {
  const table = makeTable(client, llmTokenPriceSpec)
  const { redis } = client
  const currentKey = table.key("current")
  const valuesKey = table.key("values")
  const listedKey = table.key("listed")
  const versionKey = table.key("version")

  /** One attempt: read, decide as the reference does, and write if nothing moved meanwhile. */
  const attempt = async (changes: LlmTokenPriceChanges): Promise<StorageConflict | "retry" | undefined> => {
    const openKeys = [...new Set(changes.open.map((r) => r.price_key))]
    const openBases = [...new Set(changes.open.filter((r) => r.valid_to === null).map((r) => r.base_price_key))]
    const [closing, found, current] = await Promise.all([
      table.fetch(changes.close.map((c) => c.price_key)),
      table.fetch(openKeys),
      openBases.length === 0 ? [] : redis.hmget(currentKey, ...openBases)
    ])
    const existing = new Map<string, StoredRow<StoredLlmTokenPrice>>()
    openKeys.forEach((pk, i) => {
      const s = found[i]
      if (s !== undefined) existing.set(pk, s)
    })
    const currentByBase = new Map(openBases.map((b, i) => [b, current[i] ?? null]))
    const conflict = conflictOf(changes, closing, existing, currentByBase)
    if (conflict !== undefined) return conflict

    const batch = new Batch()
    for (const s of closing) batch.expect(table.rowsKey, s!.row.price_key, s!.bytes)
    for (const pk of openKeys) batch.expect(table.rowsKey, pk, null)
    for (const [base, pk] of currentByBase) batch.expect(currentKey, base, pk)
    changes.close.forEach((c, i) => {
      const s = closing[i]!
      table.write(batch, s, { ...s.row, valid_to: c.valid_to })
      batch.op("HDEL", currentKey, s.row.base_price_key)
      batch.op("HINCRBY", listedKey, s.row.model, "-1")
    })
    // A batch repeats the same few summary values a lot; each is added once.
    const seen = new Set<string>()
    for (const r of changes.open) {
      table.write(batch, undefined, toStored(r))
      if (r.valid_to === null) {
        batch.op("HSET", currentKey, r.base_price_key, r.price_key)
        batch.op("HINCRBY", listedKey, r.model, "1")
      }
      for (const field of SUMMARY_FIELDS) {
        const value = r[field]
        const id = `${r.model}\u0000${field}\u0000${value}`
        if (value !== null && !seen.has(id)) {
          seen.add(id)
          batch.op("SADD", valuesKey, encode([r.model, field, value]))
        }
      }
    }
    if (batch.isEmpty) return undefined
    batch.op("INCR", versionKey)
    return (await batch.execute(client)) === 0 ? undefined : "retry"
  }

  /** The summaries from the maintained values and counts; one MULTI, so both come from one moment. */
  const readModels = async (): Promise<Versioned<ReadonlyArray<LlmModelSummary>>> => {
    const [values, listed, version] = (await replies(redis.multi().smembersBuffer(valuesKey).hgetall(listedKey).get(versionKey))) as [
      Array<Buffer>, Record<string, string>, string | null
    ]
    const byModel = new Map<string, Record<SummaryField, Array<string>>>()
    for (const bytes of values) {
      const [model, field, value] = decode<[string, SummaryField, string]>(bytes)
      let lists = byModel.get(model)
      if (lists === undefined) {
        lists = Object.fromEntries(SUMMARY_FIELDS.map((f) => [f, []])) as unknown as Record<SummaryField, Array<string>>
        byModel.set(model, lists)
      }
      lists[field].push(value)
    }
    const models = [...byModel.keys()].sort(cmp).map((model): LlmModelSummary => {
      const of = (field: SummaryField) => byModel.get(model)![field].sort(cmp)
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
    current: (keys) =>
      client.run("llm_token_prices.current", async () => {
        const bases = [...new Set(keys)]
        const pks = bases.length === 0 ? [] : (await redis.hmget(currentKey, ...bases)).filter((pk): pk is string => pk !== null)
        const out: Array<LlmTokenPrice> = []
        for (const s of await table.fetch(pks)) if (s !== undefined && s.row.valid_to === null) out.push(fromStored(s.row))
        return out
      }),

    // Walks each model's versions that started by `at`, newest first, in chunks.
    inForce: (models, at) =>
      client.run("llm_token_prices.inForce", async () =>
        (await table.page({
          scope: { _tag: "asOf", at },
          predicates: [{ op: "in", field: "model", values: models }],
          sort: { by: "valid_from", order: "desc" },
          after: undefined,
          limit: Number.POSITIVE_INFINITY
        })).map(fromStored)),

    apply: (changes) =>
      Effect.flatMap(
        untilApplied(client, "llm_token_prices.apply", () => attempt(changes), () =>
          new StorageConflict({ detail: "LLM token prices changed under this write; re-plan it" }), 1),
        (outcome) => (outcome === undefined ? Effect.void : Effect.fail(outcome))
      ),

    page: (plan) => client.run("llm_token_prices.page", async () => (await table.page(plan)).map(fromStored)),

    models: cachedByVersion(client, "llm_token_prices.models", versionKey, readModels)
  }
}
