import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Struct from "effect/Struct"
import { createHmac, randomBytes } from "node:crypto"
import type { InvalidRecords, RecordIssue } from "../errors.js"
import { unavailableWrite } from "../market/storage.js"
import { dateOf } from "../query/time.js"
import { CompleteHardwarePriceObservation, type HardwarePrice, hardwarePriceFields, observationId } from "../schema/hardware-price.js"
import { type HardwareTermField, hardwareTermFields, TERM_JOIN } from "../schema/hardware-terms.js"
import { HardwareMarket, HardwareVocabulary, type HardwareVocabularySet } from "../schema/hardware-vocabulary.js"
import { SettingsStore } from "../storage/contract.js"
import { HardwarePriceStore } from "../storage/hardware.js"
import { ReferenceDataStore } from "../storage/reference.js"
import type { MarkedWrite } from "../storage/marks.js"
import { chunksOf, countedIngest, invalidRecords, markedChunks, markReader } from "./batch.js"
import { IngestBounds } from "./bounds.js"
import { type HardwarePricing, hardwareFxNeeds, hardwarePriceUsd } from "./hardware-price-usd.js"
import { referenceReader } from "./reference-data.js"

/**
 * Words that make a field a seller's identity: the platform or marketplace, the seller, shop or
 * company and how to reach them, and the listing's own address or id. A record field that is
 * not one of the observation's own fields and whose name holds one of these words (split at
 * `_`, `-`, `.`, spaces and camelCase humps, case ignored, a plural `s` dropped) is removed
 * before the record is read, so its value reaches no row, no index and no log. Any other
 * unknown field refuses the batch.
 */
export const SELLER_IDENTITY_WORDS: ReadonlySet<string> = new Set([
  "platform", "marketplace", "site", "website", "domain", "url", "uri", "link", "href", "permalink",
  "seller", "vendor", "merchant", "shop", "store", "storefront", "dealer", "reseller", "retailer", "broker", "distributor",
  "supplier", "company", "business", "organisation", "organization", "owner", "account", "user", "username", "handle",
  "profile", "contact", "email", "mail", "phone", "telephone", "tel", "mobile", "fax", "whatsapp", "address", "source",
  "listing"
])

const FIELD_NAMES = Object.keys(CompleteHardwarePriceObservation.fields)
const KNOWN_FIELDS: ReadonlySet<string> = new Set(FIELD_NAMES)
const REQUIRED_FIELDS: ReadonlySet<string> = new Set(["listing_ref", "gpu_canonical_name", "observed_date"])

const wordsOf = (name: string): ReadonlyArray<string> =>
  name.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase().split(/[^a-z0-9]+/).filter((w) => w.length > 0)

/** Whether an ingest record field names a seller (see `SELLER_IDENTITY_WORDS`); the observation's own fields never do. */
export const isSellerIdentityField = (name: string): boolean =>
  !KNOWN_FIELDS.has(name) &&
  wordsOf(name).some((w) => SELLER_IDENTITY_WORDS.has(w) || (w.endsWith("s") && SELLER_IDENTITY_WORDS.has(w.slice(0, -1))))

const isRecord = (record: unknown): record is Readonly<Record<string, unknown>> =>
  typeof record === "object" && record !== null && !Array.isArray(record)

/**
 * A record's own fields, an omitted one as null, and the fields it may not carry (unknown and
 * not seller identity). Seller identity is never copied. Anything but a plain object is left for
 * decoding to refuse.
 */
const completeRecord = (record: unknown): { readonly record: unknown; readonly unknown: ReadonlyArray<string> } => {
  if (!isRecord(record)) return { record, unknown: [] }
  const given = record
  const complete: Record<string, unknown> = {}
  for (const name of FIELD_NAMES) {
    const value = Object.hasOwn(given, name) ? given[name] : undefined
    if (value !== undefined) complete[name] = value
    else if (!REQUIRED_FIELDS.has(name)) complete[name] = null
  }
  return { record: complete, unknown: Object.keys(given).filter((name) => !KNOWN_FIELDS.has(name) && !isSellerIdentityField(name)) }
}

/**
 * Derives `listing_key` from the source's reference to a listing: the first 128 bits (hex) of
 * HMAC-SHA256 keyed with the deployment's secret, so a published key can be neither reversed
 * nor matched against a guessed listing URL.
 */
export const listingKeyOf = (secret: string) => (listingRef: string): string =>
  createHmac("sha256", secret).update(listingRef, "utf8").digest("hex").slice(0, 32)

/** Pieces of the descriptive fields' text that were no term of the field's vocabulary, per field. */
export type DroppedTerms = { readonly [F in HardwareTermField]: number }

/** What one ingest did. */
export interface HardwareIngestSummary {
  readonly received: number
  /** Listing-days stored for the first time. */
  readonly inserted: number
  /** Listing-days whose stored row was replaced. */
  readonly replaced: number
  /** Pieces of text in the descriptive fields (`payment_terms`, ...) that were no vocabulary term: not stored. */
  readonly droppedTerms: DroppedTerms
}

/** The observations, each descriptive field as the terms of its vocabulary it names, and what was dropped per field. */
export interface DecodedHardware {
  readonly rows: ReadonlyArray<HardwarePrice>
  readonly droppedTerms: DroppedTerms
}

/** The descriptive fields of a row or observation, as `keepTerms` reads them. */
type TermFields = { readonly [F in HardwareTermField]: string | ReadonlyArray<string> | null }

const noneDropped = (): Record<HardwareTermField, number> =>
  Object.fromEntries(hardwareTermFields.map((f) => [f, 0])) as Record<HardwareTermField, number>

/**
 * An observation's descriptive fields as terms of the vocabulary: a text as its terms joined by
 * `TERM_JOIN`, a list (`services_included`) as its items' terms, each once; null when no term is
 * left. Pieces that are no term are added to `dropped`.
 */
const keepTerms = <A extends TermFields>(
  observation: A,
  vocabulary: HardwareVocabularySet,
  dropped: Record<HardwareTermField, number>
): A => {
  let out: Record<string, unknown> | undefined
  for (const field of hardwareTermFields) {
    const value = observation[field]
    if (value === null) continue
    const kept = new Set<string>()
    for (const text of typeof value === "string" ? [value] : value) {
      const terms = vocabulary.terms(field, text)
      for (const term of terms.kept) kept.add(term)
      dropped[field] += terms.dropped
    }
    ;(out ??= { ...observation } as Record<string, unknown>)[field] = kept.size === 0 ? null : typeof value === "string" ? [...kept].join(TERM_JOIN) : [...kept]
  }
  return (out ?? observation) as A
}

const defaultVocabulary = HardwareVocabulary.defaultValue()

/**
 * A stored row's descriptive fields as the terms of the default vocabulary they read as, by the
 * reading ingest uses (`keepTerms`), or `undefined` when they already hold only those terms (a
 * row stored since: terms read again are the same terms). Storage upgrades rows stored before
 * the fields held terms with it. The default vocabulary, not a market's: the upgrade belongs to
 * the file, whichever process opens it first; text that reads as a term an operator added is
 * dropped, and importing its source again restores it.
 */
export const storedRowInTerms = <A extends TermFields>(row: A): A | undefined => {
  const kept = keepTerms(row, defaultVocabulary, noneDropped())
  return hardwareTermFields.every((f) => JSON.stringify(kept[f]) === JSON.stringify(row[f])) ? undefined : kept
}

const isHardwareMarket = Schema.is(Schema.NullOr(HardwareMarket))

const decodeObservation = Schema.decodeUnknownEither(CompleteHardwarePriceObservation, { errors: "all" })

/**
 * Validates a batch into rows: seller identity dropped, classifications held to `vocabulary`,
 * descriptive fields reduced to the vocabulary's terms (the rest dropped and counted), dates
 * normalised, keys derived, the USD price computed (`hardwarePriceUsd`). Every bad record is
 * reported with its index, an observation without a price included; of two records of one
 * listing-day the later stands.
 */
export const decodeHardwareObservations = (
  input: ReadonlyArray<unknown>,
  listingKey: (listingRef: string) => string,
  vocabulary: HardwareVocabularySet,
  pricing: HardwarePricing
): Either.Either<DecodedHardware, InvalidRecords> => {
  const rows = new Map<string, HardwarePrice>()
  const droppedTerms = noneDropped()
  const issues: Array<RecordIssue> = []
  input.forEach((item, index) => {
    const { record, unknown } = completeRecord(item)
    for (const name of unknown) issues.push({ index, message: `${name}: unknown field` })
    const refused = isRecord(record) ? vocabulary.refusals(record) : []
    for (const message of refused) issues.push({ index, message })
    const d = decodeObservation(record)
    if (Either.isLeft(d)) {
      for (const i of ParseResult.ArrayFormatter.formatErrorSync(d.left)) issues.push({ index, message: `${i.path.join(".") || "record"}: ${i.message}` })
      return
    }
    if (unknown.length > 0 || refused.length > 0) return
    const { listing_ref, ...o } = keepTerms(d.right, vocabulary, droppedTerms)
    const observed_date = dateOf(o.observed_date)
    if (observed_date === undefined) {
      issues.push({ index, message: "observed_date: expected a YYYY-MM-DD date or an ISO 8601 datetime" })
      return
    }
    const updated = o.listing_last_updated_date === null ? null : dateOf(o.listing_last_updated_date)
    if (updated === undefined) {
      issues.push({ index, message: "listing_last_updated_date: expected a YYYY-MM-DD date or an ISO 8601 datetime" })
      return
    }
    if (o.price_usd_low !== null && o.price_usd_high !== null && o.price_usd_low > o.price_usd_high) {
      issues.push({ index, message: "price_usd_low: above price_usd_high" })
      return
    }
    const price_usd = hardwarePriceUsd(o, observed_date, pricing)
    if (Either.isLeft(price_usd)) {
      issues.push({ index, message: price_usd.left })
      return
    }
    // Checked against the vocabulary above; this narrows the text to the row's two markets.
    if (!isHardwareMarket(o.market)) {
      issues.push({ index, message: "market: expected primary or secondary" })
      return
    }
    const listing_key = listingKey(listing_ref)
    const values: HardwarePrice = {
      ...o,
      market: o.market,
      price_usd: price_usd.right,
      observation_id: observationId(listing_key, observed_date),
      listing_key,
      observed_date,
      listing_last_updated_date: updated
    }
    // Built in the row's field order, so every row has one shape and serialises in spec order.
    const row: HardwarePrice = Struct.pick(values, ...hardwarePriceFields)
    rows.delete(row.observation_id)
    rows.set(row.observation_id, row)
  })
  return issues.length > 0 ? Either.left(invalidRecords(issues)) : Either.right({ rows: [...rows.values()], droppedTerms })
}

const LISTING_KEY_SECRET = "hardware_listing_key_secret"

/** The write path of GPU hardware prices: daily listing observations. */
export class HardwarePriceIngest extends Effect.Service<HardwarePriceIngest>()("Market/HardwarePriceIngest", {
  effect: Effect.gen(function* () {
    const store = yield* HardwarePriceStore
    const settings = yield* SettingsStore
    const listingKey = listingKeyOf(yield* settings.getOrSet(LISTING_KEY_SECRET, randomBytes(32).toString("base64url")))
    const vocabulary = yield* HardwareVocabulary
    const reference = referenceReader(yield* ReferenceDataStore)
    const bounds = yield* IngestBounds

    return {
      /**
       * Ingests listing observations: one row per listing per observed day, and a listing-day
       * ingested again replaces its row. A descriptive field keeps the terms of its vocabulary
       * its text names; the summary counts the pieces dropped (`droppedTerms`). Invalid records refuse the whole batch; rows are written
       * in atomic chunks of at most `MAX_ROWS_PER_WRITE`, and sending a batch again is safe.
       * `options.mark` is written with the last chunk.
       */
      ingest: Effect.fn("HardwarePriceIngest.ingest")(function* (observations: ReadonlyArray<unknown>, options: MarkedWrite = {}) {
        const usdPerUnit = yield* reference.usdPerUnit(hardwareFxNeeds(observations))
        const { rows, droppedTerms } = yield* decodeHardwareObservations(observations, listingKey, vocabulary, { usdPerUnit, bound: bounds.hardware })
        let inserted = 0
        let replaced = 0
        // Rows are independent listing-days, each replaced whole: any chunking keeps them right.
        for (const chunk of markedChunks(chunksOf(rows), options.mark)) {
          const put = yield* Effect.mapError(store.put(chunk.rows, chunk.mark), unavailableWrite)
          inserted += put.inserted
          replaced += put.replaced
        }
        const summary: HardwareIngestSummary = { received: observations.length, inserted, replaced, droppedTerms }
        return summary
      }, countedIngest("hardware")),
      /** The `listing_key` this deployment derives from a source's listing reference. */
      listingKey,
      /** A progress mark written by `ingest`. */
      mark: markReader(store.mark)
    } as const
  })
}) {}
