import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Record from "effect/Record"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import { type HardwareTermField, hardwareTermDefaults, termsOf, TermSlug } from "./hardware-terms.js"

/**
 * The closed vocabularies of the hardware row's classification fields and of its descriptive
 * fields (`hardware-terms.ts`). The spec makes these fields stand in for identity ("kind of
 * source, never the source"), so free text there could publish a seller's name or address, list
 * it in `/metadata` and make it filterable: ingest accepts only values of the vocabulary (a
 * classification outside it refuses the batch, a descriptive term outside it is dropped and
 * counted), and `/metadata` lists it. An operator extends it without a code change
 * (`HardwareVocabulary.layer`, `createMarket({ hardwareVocabulary })`).
 */

/**
 * A value of a classification a caller filters on (`condition`, `channel`, ...): a lower-case
 * slug, so the values `/metadata` lists are exactly the values a filter matches.
 */
export const ClassSlug = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,63}$/),
  Schema.annotations({ message: () => "expected a lower-case slug: a-z or 0-9, then a-z, 0-9, '.', '_' or '-', at most 64 characters" })
)

/** The default vocabulary: the accepted values of each classification field, in the row's field order. */
const defaults = {
  price_type: Schema.Literal("ask", "bid", "quote", "list", "sold", "estimate").annotations({
    description: "ask: the seller's asking price; bid: a buyer's offer; quote: quoted on request; list: the maker's list price; sold: a completed sale; estimate: an estimate (often a range)"
  }),
  price_basis: Schema.Literal("per_gpu", "per_server", "per_rack", "per_unit", "per_lot").annotations({
    description: "what one priced unit is"
  }),
  stock_status: Schema.Literal("in_stock", "limited", "backorder", "preorder", "out_of_stock", "on_request").annotations({
    description: "availability as stated"
  }),
  market: Schema.Literal("primary", "secondary").annotations({
    description: "primary: the new channel; secondary: resale (not extensible)"
  }),
  channel: Schema.Literal(
    "oem_direct", "distributor", "var_reseller", "system_integrator", "retailer", "marketplace", "broker", "auction"
  ).annotations({ description: "the channel class" }),
  source_type: Schema.Literal(
    "reseller_quote", "marketplace_listing", "broker_sheet", "retail_page", "oem_price_list", "auction_result", "invoice",
    "press_report", "survey"
  ).annotations({ description: "the kind of source, never the source" }),
  confidence: Schema.Literal("high", "medium", "low").annotations({ description: "the weight to give the observation" }),
  counterparty_class: Schema.Literal(
    "oem", "distributor", "dealer", "broker", "integrator", "cloud_provider", "end_user", "liquidator"
  ).annotations({ description: "the class of the counterparty, never an identity" }),
  transaction_level: Schema.Literal("bare_module", "baseboard", "server", "rack", "cluster").annotations({
    description: "where in the chain the price sits"
  }),
  condition: Schema.Literal("new_sealed", "new_open_box", "refurbished", "used", "for_parts").annotations({
    description: "the unit's condition"
  }),
  module_packaging: Schema.Literal("pcie_card", "sxm2", "sxm3", "sxm4", "sxm5", "sxm6", "oam", "superchip", "mxm").annotations({
    description: "how the GPU is packaged"
  }),
  unit_age_basis: Schema.Literal("seller_stated", "serial_lookup", "invoice_date", "manufacture_date", "estimated").annotations({
    description: "how the unit's age was established"
  }),
  country_group: Schema.Literal("north_america", "latin_america", "europe", "middle_east", "africa", "apac").annotations({
    description: "coarse grouping of `country`"
  }),
  export_control_regime: Schema.Literal("eccn_3a090", "eccn_4a090", "eccn_3a992", "eccn_4a994", "eccn_5a992", "ear99").annotations({
    description: "export-control classification of the unit (US EAR), as a lower-case slug"
  })
} as const

/** A classification field of the hardware row whose values come from the vocabulary. */
export type HardwareVocabularyField = keyof typeof defaults

/** The classification fields with a vocabulary, in the row's field order. */
export const hardwareVocabularyFields = Object.keys(defaults) as ReadonlyArray<HardwareVocabularyField>

/** `primary` (new channel) or `secondary` (resale): the one vocabulary an operator cannot extend. */
export const HardwareMarket = defaults.market

/** The default value schema of each vocabulary field: its documented, complete default set. */
export const hardwareVocabularyDefaults: { readonly [F in HardwareVocabularyField]: (typeof defaults)[F] } = defaults

const listed = (s: { readonly ast: SchemaAST.AST; readonly literals: ReadonlyArray<string> }, kept: string) => Schema.Array(Schema.String).annotations({
  description: `${Option.getOrElse(SchemaAST.getDescriptionAnnotation(s.ast), () => "")}; ${kept}by default ${s.literals.join(", ")}`
})

/**
 * Every vocabulary field with its accepted values, in the order `/metadata` lists them: the
 * classification fields, then the terms each descriptive field keeps.
 */
export const HardwareVocabularyValues = Schema.Struct({
  ...Record.map(defaults, (s) => listed(s, "")),
  ...Record.map(hardwareTermDefaults, (s) => listed(s, "the terms ingest keeps (any other is dropped and counted), "))
})
export type HardwareVocabularyValues = typeof HardwareVocabularyValues.Type

/**
 * Values an operator adds to the default vocabulary, per field (every field but `market`, which
 * the spec fixes): lower-case slugs of at most 64 characters for a classification field, terms
 * (`TermSlug`: words joined by single `-`) for a descriptive field. An unknown field is refused.
 */
export const HardwareVocabularyExtension = Schema.Struct({
  ...Record.map(Record.remove(defaults, "market"), () => Schema.optional(Schema.Array(ClassSlug))),
  ...Record.map(hardwareTermDefaults, () => Schema.optional(Schema.Array(TermSlug)))
})
export type HardwareVocabularyExtension = Schema.Schema.Encoded<typeof HardwareVocabularyExtension>

/** The terms a descriptive field's text keeps, and how many of its pieces were no term. */
export interface KeptTerms {
  /** The vocabulary terms the text names, each once, in the order it names them. */
  readonly kept: ReadonlyArray<string>
  /** Pieces of the text that are no term of the field's vocabulary: dropped. */
  readonly dropped: number
}

/** The accepted values of each vocabulary field in one market, and membership answered from sets. */
export interface HardwareVocabularySet {
  /** Every field's accepted values: the defaults, then the operator's additions. */
  readonly values: HardwareVocabularyValues
  /** `text` read as terms (`termsOf`), those of `field`'s vocabulary kept and the rest counted. */
  readonly terms: (field: HardwareTermField, text: string) => KeptTerms
  /** Whether `value` is in `field`'s vocabulary. */
  readonly accepts: (field: HardwareVocabularyField, value: string) => boolean
  /** Why `values` are refused for `field`: it names them and the accepted ones. */
  readonly refusal: (field: HardwareVocabularyField, values: ReadonlyArray<string>) => string
  /**
   * A record's text values outside the vocabulary, each as `<field>: <refusal>` (none: an empty
   * array). A value that is not text is left for the record's schema to refuse.
   */
  readonly refusals: (record: Readonly<Record<string, unknown>>) => ReadonlyArray<string>
}

/** A value as an error message quotes it: JSON, cut short so a long refused value cannot flood the message. */
const quoted = (value: string): string => JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value)

/** The vocabulary made of the defaults and a decoded extension. */
const build = (extension: Schema.Schema.Type<typeof HardwareVocabularyExtension>): HardwareVocabularySet => {
  const withAdded = (literals: ReadonlyArray<string>, added: ReadonlyArray<string> | undefined): ReadonlyArray<string> =>
    [...new Set([...literals, ...(added ?? [])])]
  const values: HardwareVocabularyValues = {
    ...Record.map(defaults, (s, field) => withAdded(s.literals, field === "market" ? undefined : extension[field])),
    ...Record.map(hardwareTermDefaults, (s, field) => withAdded(s.literals, extension[field]))
  }
  const sets = Record.map(values, (v): ReadonlySet<string> => new Set(v))
  const refusal = (field: HardwareVocabularyField, refused: ReadonlyArray<string>) =>
    `${refused.map(quoted).join(", ")} ${refused.length === 1 ? "is" : "are"} not in the hardware vocabulary of ${field}; ` +
    `accepted: ${values[field].join(", ")} (data.vocabulary of GET /v2/gpu/hardware/prices/metadata)`
  return {
    values,
    accepts: (field, value) => sets[field].has(value),
    terms: (field, text) => {
      const accepted = sets[field]
      const kept = new Set<string>()
      let dropped = 0
      for (const { term, uncounted } of termsOf(text)) {
        if (accepted.has(term)) kept.add(term)
        else if (uncounted !== undefined && accepted.has(uncounted)) kept.add(uncounted)
        else dropped++
      }
      return { kept: [...kept], dropped }
    },
    refusal,
    refusals: (record) => {
      let out: Array<string> | undefined
      for (const field of hardwareVocabularyFields) {
        const value = record[field]
        if (typeof value === "string" && !sets[field].has(value)) (out ??= []).push(`${field}: ${refusal(field, [value])}`)
      }
      return out ?? none
    }
  }
}

const none: ReadonlyArray<string> = []

const decodeOptions = { errors: "all", onExcessProperty: "error" } as const

/**
 * The defaults plus `extension`, or the `ParseError` naming a value that is not a slug or a
 * field that has no vocabulary (or is `market`).
 */
export const hardwareVocabularyOf = (extension: unknown): Either.Either<HardwareVocabularySet, ParseResult.ParseError> =>
  Either.map(Schema.decodeUnknownEither(HardwareVocabularyExtension, decodeOptions)(extension), build)

/**
 * The hardware vocabulary a market accepts at ingest, matches in filters and lists in
 * `/metadata`: the defaults unless a layer provides another. Provide
 * `HardwareVocabulary.layer(extension)` to `marketLayer` to add values without a code change.
 */
export class HardwareVocabulary extends Context.Reference<HardwareVocabulary>()("Market/HardwareVocabulary", {
  defaultValue: () => build({})
}) {
  /** The defaults plus `extension`; fails with the `ParseError` of a value that is not a slug, or of a field without a vocabulary. */
  static readonly layer = (extension: HardwareVocabularyExtension): Layer.Layer<HardwareVocabulary, ParseResult.ParseError> =>
    Layer.effect(HardwareVocabulary, Effect.map(Schema.decodeUnknown(HardwareVocabularyExtension, decodeOptions)(extension), build))
}
