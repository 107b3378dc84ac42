import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import type { InvalidRecords } from "../errors.js"
import { type LlmTokenPrice, LlmTokenPriceObservation } from "../schema/llm-token-price.js"
import { LlmTokenPriceStore } from "../storage/llm-token-prices.js"
import type { MarkedWrite } from "../storage/marks.js"
import type { VersionChanges, VersionView } from "../storage/versions.js"
import { llmTokenPriceKeys } from "../storage/tables.js"
import { countedIngest, decodeTimed, markReader, refuseIf, type Timed } from "./batch.js"
import { boundIssues, IngestBounds } from "./bounds.js"
import { conflictingPrices, IngestSummary, type VersionRules, withdrawVersions, writeVersions } from "./versions.js"
import { hash32 } from "./key-hash.js"

/** Fields that identify one published price across price changes (`base_price_key`). */
const IDENTITY = ["source", "model", "serving_provider", "price_type", "region", "metric", "qualifiers"] as const

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
 * Completes a change with the outlier rule (a `Judge`): every row whose market the change moves
 * is judged again against the market in force at its own `valid_from`, as the store will stand
 * with the change, its own rows included. The market of a model, price type and metric moves from
 * the earliest instant the change opens or closes one of its rows at; rows of that group that
 * start then or later are judged, opened ones flagged and stored ones whose flag changes
 * restated. Rows that started earlier keep their flags: their market did not move.
 *
 * So every row's flag is the rule applied to the market in force at its start, whatever order
 * and batches its peers arrived in. `view.peers` must hold the model's versions in force from
 * that earliest instant on (`peerReadOf`).
 */
export const judgeOutliers = (changes: VersionChanges<LlmTokenPrice>, view: VersionView<LlmTokenPrice>): VersionChanges<LlmTokenPrice> => {
  const closedAt = new Map(changes.close.map((c) => [c.key, c.valid_to]))
  const stored = new Map(view.peers.map((r) => [r.price_key, r]))
  // Per group, the earliest instant its market moves at.
  const since = new Map<string, string>()
  const moves = (r: LlmTokenPrice, at: string) => {
    const g = groupOf(r)
    const was = since.get(g)
    if (was === undefined || at < was) since.set(g, at)
  }
  for (const r of changes.open) moves(r, r.valid_from)
  for (const c of changes.close) {
    const r = stored.get(c.key)
    if (r !== undefined) moves(r, c.valid_to)
  }
  // The market of each moved group after the change: stored rows as they will end, and the new ones.
  const market = new Map<string, Array<LlmTokenPrice>>()
  for (const r of [...view.peers, ...changes.open]) {
    const g = groupOf(r)
    if (!since.has(g)) continue
    const valid_to = closedAt.get(r.price_key) ?? r.valid_to
    const list = market.get(g)
    const row = valid_to === r.valid_to ? r : { ...r, valid_to }
    if (list === undefined) market.set(g, [row])
    else list.push(row)
  }
  const references = new Map<string, number | undefined>()
  const flagOf = (r: LlmTokenPrice) => {
    const g = groupOf(r)
    const id = `${g}\u0000${r.valid_from}`
    if (!references.has(id)) {
      const at = r.valid_from
      references.set(id, outlierReference(market.get(g)!.filter((m) => m.valid_from <= at && (m.valid_to === null || m.valid_to > at))))
    }
    return isOutlierPrice(r.price_usd_per_1m_tokens, references.get(id))
  }
  const open = changes.open.map((r) => {
    const flag = flagOf(r)
    return flag === r.is_price_outlier ? r : { ...r, is_price_outlier: flag }
  })
  const restate = view.peers.flatMap((r) => {
    const from = since.get(groupOf(r))
    if (from === undefined || r.valid_from < from) return []
    const flag = flagOf(r)
    return flag === r.is_price_outlier ? [] : [{ ...r, is_price_outlier: flag }]
  })
  return { close: changes.close, open, ...(restate.length > 0 ? { restate } : {}) }
}

/**
 * What one ingest did. `flagged` counts the rows it opened that are outliers when it ends;
 * `reflagged` the rows stored before it whose flag it changed, because a price it wrote moved
 * the market they are judged against (rows of the same model, price type and metric that
 * started at or after that price's instant).
 */
export const LlmIngestSummary = Schema.Struct({ ...IngestSummary.fields, flagged: Schema.Number, reflagged: Schema.Number })
export type LlmIngestSummary = typeof LlmIngestSummary.Type

/** `flagged` and `reflagged` of a write, from the rows it opened and restated, in write order. */
const flagCounts = (opened: ReadonlyArray<LlmTokenPrice>, restated: ReadonlyArray<LlmTokenPrice>) => {
  const flags = new Map(opened.map((r) => [r.price_key, r.is_price_outlier]))
  const mine = new Set(flags.keys())
  // A row is restated only when its flag changes, so its first restatement tells its flag before.
  const before = new Map<string, boolean>()
  for (const r of restated) {
    if (!mine.has(r.price_key) && !before.has(r.price_key)) before.set(r.price_key, !r.is_price_outlier)
    flags.set(r.price_key, r.is_price_outlier)
  }
  return {
    flagged: [...mine].filter((k) => flags.get(k)).length,
    reflagged: [...before].filter(([k, flag]) => flags.get(k) !== flag).length
  }
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
     * Ingests published prices. Invalid records, or one that cannot be placed, refuse the whole
     * batch; the change is written in atomic chunks, as rental prices are. Each chunk flags the
     * rows it opens by the outlier rule, and judges again, in the same atomic step, the stored
     * rows whose market it moves (`judgeOutliers`): once the batch is written, every flag is the
     * rule applied to the market in force at its row's start, whatever the order and size of
     * the batches. `options.mark` is written with the last chunk.
     */
    const ingest = Effect.fn("LlmTokenPriceIngest.ingest")(function* (observations: ReadonlyArray<unknown>, options: MarkedWrite = {}) {
      const decoded = yield* decodeLlmObservations(observations)
      yield* refuseIf([
        ...boundIssues(decoded.map(({ index, observation: o }) => ({ index, field: "price_usd_per_1m_tokens", value: o.price_usd_per_1m_tokens })), bounds.llm),
        ...conflictingPrices(decoded, rules)
      ])
      const { summary, opened, restated } = yield* writeVersions(store.transact, decoded, rules, { judge: judgeOutliers, mark: options.mark })
      const result: LlmIngestSummary = { ...summary, ...flagCounts(opened, restated) }
      return result
    }, countedIngest("llm"))

    /**
     * Marks prices as no longer published from `at`: their current rows close, and the rows of
     * their model, price type and metric that start at `at` or later are judged again without
     * them. Unknown keys are ignored. `options.mark` is written with the last rows closed.
     */
    const withdraw = Effect.fn("LlmTokenPriceIngest.withdraw")((basePriceKeys: ReadonlyArray<string>, at: string, options: MarkedWrite = {}) =>
      withdrawVersions(store.transact, basePriceKeys, at, rules, options.mark, judgeOutliers))

    /** A progress mark written with a write of this type (`options.mark`). */
    return { ingest, withdraw, mark: markReader(store.mark) } as const
  })
}) {}
