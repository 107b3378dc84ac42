import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { createHash } from "node:crypto"
import type { InvalidRecords } from "../errors.js"
import { type LlmTokenPrice, LlmTokenPriceObservation } from "../schema/llm-token-price.js"
import { LlmTokenPriceStore } from "../storage/llm-token-prices.js"
import type { MarkedWrite } from "../storage/marks.js"
import type { VersionChanges } from "../storage/versions.js"
import { llmTokenPriceKeys } from "../storage/tables.js"
import { decodeTimed, markReader, refuseIf, type Timed } from "./batch.js"
import { boundIssues, IngestBounds } from "./bounds.js"
import { conflictingPrices, type IngestSummary, type VersionRules, withdrawVersions, writeVersions } from "./versions.js"

/** Fields that identify one published price across price changes (`base_price_key`). */
const IDENTITY = ["source", "model", "serving_provider", "price_type", "region", "metric", "qualifiers"] as const

const hash32 = (parts: ReadonlyArray<unknown>): string =>
  createHash("sha256").update(JSON.stringify(parts)).digest("hex").slice(0, 32)

/** `base_price_key`: SHA-256 (first 128 bits, hex) of the identity fields in a fixed order. */
export const basePriceKey = (o: { readonly [K in (typeof IDENTITY)[number]]: unknown }): string =>
  hash32(IDENTITY.map((f) => o[f]))

type PriceFields = Pick<LlmTokenPrice, "price_usd_per_1m_tokens" | "raw_price" | "raw_price_unit" | "currency">

/** `price_key`: SHA-256 (first 128 bits, hex) of the base key, `valid_from` and the price. */
export const priceKey = (base: string, validFrom: string, o: PriceFields): string =>
  hash32([base, validFrom, o.price_usd_per_1m_tokens, o.raw_price, o.raw_price_unit, o.currency])

const samePrice = (a: PriceFields, b: PriceFields) =>
  a.price_usd_per_1m_tokens === b.price_usd_per_1m_tokens && a.raw_price === b.raw_price &&
  a.raw_price_unit === b.raw_price_unit && a.currency === b.currency

/*
 * The outlier rule. Within one model, price type and metric, each serving provider's figure is
 * the median of its prices in force (every source, region and qualifier); the reference is the
 * median of those figures, so a provider with many regional rows counts once. A price more than
 * `OUTLIER_RATIO` times above or below the reference is an outlier. With fewer than
 * `OUTLIER_MIN_PROVIDERS` providers there is no reference and nothing is flagged.
 */

/** A price more than this many times above or below the reference is an outlier. */
export const OUTLIER_RATIO = 5
/** Fewest serving providers a reference needs. */
export const OUTLIER_MIN_PROVIDERS = 3
/** The fields within which prices are compared. */
export const OUTLIER_GROUP = ["model", "price_type", "metric"] as const

const median = (values: ReadonlyArray<number>): number => {
  const s = [...values].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

/** The reference price of one group of rows in force, or undefined with too few providers. */
export const outlierReference = (
  rows: ReadonlyArray<Pick<LlmTokenPrice, "serving_provider" | "price_usd_per_1m_tokens">>
): number | undefined => {
  const byProvider = new Map<string, Array<number>>()
  for (const r of rows) {
    const list = byProvider.get(r.serving_provider)
    if (list === undefined) byProvider.set(r.serving_provider, [r.price_usd_per_1m_tokens])
    else list.push(r.price_usd_per_1m_tokens)
  }
  if (byProvider.size < OUTLIER_MIN_PROVIDERS) return undefined
  return median([...byProvider.values()].map(median))
}

/** Whether a price is an outlier against a reference (none: never). */
export const isOutlierPrice = (price: number, reference: number | undefined): boolean =>
  reference !== undefined && (price > reference * OUTLIER_RATIO || price * OUTLIER_RATIO < reference)

const groupOf = (r: Pick<LlmTokenPrice, (typeof OUTLIER_GROUP)[number]>) => JSON.stringify([r.model, r.price_type, r.metric])

/**
 * Flags the rows a change opens, each judged against the market in force at its `valid_from`:
 * the stored rows in force then (`storedAt`, for the opened rows' models), less those the change
 * closes by then, plus the rows the change itself has in force then. Flags are fixed when a row
 * opens; a later move of the market does not re-judge it.
 */
export const judgeOutliers = (
  changes: VersionChanges<LlmTokenPrice>,
  storedAt: (at: string) => ReadonlyArray<LlmTokenPrice>
): ReadonlyArray<LlmTokenPrice> => {
  const closedAt = new Map(changes.close.map((c) => [c.key, c.valid_to]))
  const references = new Map<string, Map<string, number | undefined>>()
  const referencesAt = (at: string) => {
    let refs = references.get(at)
    if (refs !== undefined) return refs
    const inForce = (r: LlmTokenPrice, validTo: string | null) => r.valid_from <= at && (validTo === null || validTo > at)
    const groups = new Map<string, Array<LlmTokenPrice>>()
    const add = (r: LlmTokenPrice) => {
      const g = groupOf(r)
      const list = groups.get(g)
      if (list === undefined) groups.set(g, [r])
      else list.push(r)
    }
    for (const r of storedAt(at)) if (inForce(r, closedAt.get(r.price_key) ?? r.valid_to)) add(r)
    for (const r of changes.open) if (inForce(r, r.valid_to)) add(r)
    refs = new Map([...groups].map(([g, rows]) => [g, outlierReference(rows)]))
    references.set(at, refs)
    return refs
  }
  return changes.open.map((r) => {
    const flag = isOutlierPrice(r.price_usd_per_1m_tokens, referencesAt(r.valid_from).get(groupOf(r)))
    return flag === r.is_price_outlier ? r : { ...r, is_price_outlier: flag }
  })
}

/** What one ingest did; `flagged` counts the opened rows that are outliers. */
export interface LlmIngestSummary extends IngestSummary {
  readonly flagged: number
}

const decodeObservation = Schema.decodeUnknownEither(LlmTokenPriceObservation, { errors: "all", onExcessProperty: "error" })

/** Validates a batch of LLM price observations; every bad record is reported with its index. */
export const decodeLlmObservations = (
  input: ReadonlyArray<unknown>
): Either.Either<ReadonlyArray<Timed<LlmTokenPriceObservation>>, InvalidRecords> =>
  decodeTimed(input, decodeObservation, basePriceKey)

const rules: VersionRules<LlmTokenPriceObservation, LlmTokenPrice> = {
  ...llmTokenPriceKeys,
  samePrice,
  price: (r) => `${r.price_usd_per_1m_tokens} USD per 1M tokens (raw_price ${r.raw_price} ${r.raw_price_unit} ${r.currency})`,
  open: (o, at, base): LlmTokenPrice => ({
    source: o.source, model: o.model, model_name: o.model_name, model_family: o.model_family,
    model_creator: o.model_creator, serving_provider: o.serving_provider, price_type: o.price_type, region: o.region,
    metric: o.metric, qualifiers: o.qualifiers, price_usd_per_1m_tokens: o.price_usd_per_1m_tokens,
    raw_price: o.raw_price, raw_price_unit: o.raw_price_unit, currency: o.currency, is_price_outlier: false,
    valid_from: at, valid_to: null, extracted_at: at, base_price_key: base, price_key: priceKey(base, at, o)
  })
}

/** The write path of LLM token prices. */
export class LlmTokenPriceIngest extends Effect.Service<LlmTokenPriceIngest>()("Market/LlmTokenPriceIngest", {
  effect: Effect.gen(function* () {
    const store = yield* LlmTokenPriceStore
    const bounds = yield* IngestBounds

    /**
     * How to flag the rows a change opens, each judged against the market in force when it
     * opens. The market is read before the change is written; a concurrent writer's new peers
     * may be missed by that much.
     */
    const judged = (changes: VersionChanges<LlmTokenPrice>) =>
      Effect.gen(function* () {
        const models = [...new Set(changes.open.map((r) => r.model))]
        const storedAt = new Map<string, ReadonlyArray<LlmTokenPrice>>()
        for (const at of new Set(changes.open.map((r) => r.valid_from))) storedAt.set(at, yield* store.inForce(models, at))
        return judgeOutliers(changes, (at) => storedAt.get(at)!)
      })

    /**
     * Ingests published prices. Invalid records, or one that cannot be placed, refuse the whole
     * batch; the change is written in atomic chunks, as rental prices are. Each opened row is
     * flagged `is_price_outlier` by the outlier rule, once, as it opens. `options.mark` is
     * written with the last chunk.
     */
    const ingest = Effect.fn("LlmTokenPriceIngest.ingest")(function* (observations: ReadonlyArray<unknown>, options: MarkedWrite = {}) {
      const decoded = yield* decodeLlmObservations(observations)
      yield* refuseIf([
        ...boundIssues(decoded.map(({ index, observation: o }) => ({ index, field: "price_usd_per_1m_tokens", value: o.price_usd_per_1m_tokens })), bounds.llm),
        ...conflictingPrices(decoded, rules)
      ])
      const finish = (changes: VersionChanges<LlmTokenPrice>) =>
        Effect.map(judged(changes), (open) => {
          const flags = new Map(open.map((r) => [r.price_key, r.is_price_outlier]))
          return (row: LlmTokenPrice) => {
            const flag = flags.get(row.price_key) ?? false
            return flag === row.is_price_outlier ? row : { ...row, is_price_outlier: flag }
          }
        })
      const { summary, opened } = yield* writeVersions(store.transact, decoded, rules, { finish, mark: options.mark })
      const result: LlmIngestSummary = { ...summary, flagged: opened.filter((r) => r.is_price_outlier).length }
      return result
    })

    /**
     * Marks prices as no longer published from `at`: their current rows close. Unknown keys are
     * ignored. `options.mark` is written with the last rows closed.
     */
    const withdraw = Effect.fn("LlmTokenPriceIngest.withdraw")((basePriceKeys: ReadonlyArray<string>, at: string, options: MarkedWrite = {}) =>
      withdrawVersions(store.transact, basePriceKeys, at, rules, options.mark))

    /** A progress mark written with a write of this type (`options.mark`). */
    return { ingest, withdraw, mark: markReader(store.mark) } as const
  })
}) {}
