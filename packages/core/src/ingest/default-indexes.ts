import * as Effect from "effect/Effect"
import { unavailableWrite } from "../market/storage.js"
import { eachRentalRow } from "../market/row-walk.js"
import { formatInstant, parseDate } from "../query/time.js"
import type { IndexDefinitionInput } from "../schema/indexes.js"
import { RentalPriceStore } from "../storage/contract.js"
import { IndexStore } from "../storage/indexes.js"
import { IndexIngest } from "./indexes.js"

/**
 * Index definitions for a market that has none of its operator's: a market imported from
 * catalogs then has indices and a reference price over its own data, not only the demo.
 */

/** Every default index id starts with this; an id without it is the operator's, and then no default is defined. */
export const DEFAULT_INDEX_PREFIX = "auto-"

/** The contract types default indices are defined for. */
const CONTRACTS = [["ondemand", "on-demand"], ["spot", "spot"]] as const

/** A computed rental index publishes with at least two vendors: a slice with fewer gets no index. */
const MIN_VENDORS = 2

const METHOD = "Vendor-weighted median of rental prices (USD per GPU-hour) in force during each UTC day: each vendor's median counts once; p5/p95 are the 5th and 95th percentiles of the vendor medians; published with at least two vendors."

/** A region as an id part: lower-case letters and digits, runs of anything else as one dash. */
const idPart = (text: string) => text.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "")

/** What the current market offers of one GPU on one contract: its vendors, overall and per region, and its offers. */
interface Slice {
  readonly gpu: string
  readonly model: string
  readonly contract: string
  readonly vendors: Set<string>
  readonly regions: Map<string, Set<string>>
  offers: number
}

/** What `DefaultIndexes.ensure` did. */
export interface DefaultIndexSummary {
  /** Default definitions stored (new or restated); 0 when the market has definitions of its own. */
  readonly defined: number
  /** Fleet weights stored for the reference price; 0 when the market has weights. */
  readonly weights: number
}

/** The default index definitions and fleet weights of a market without its own. */
export class DefaultIndexes extends Effect.Service<DefaultIndexes>()("Market/DefaultIndexes", {
  effect: Effect.gen(function* () {
    const rental = yield* RentalPriceStore
    const store = yield* IndexStore
    const ingest = yield* IndexIngest

    /**
     * Unless the market holds an index definition of its own, defines from its current rental
     * rows: per GPU and contract type (on-demand, spot), a daily index over all regions and one
     * per region, each where at least two vendors offer it; and a daily reference price over the
     * global on-demand ones, with fleet weights (each GPU's share of the current on-demand
     * offers) unless the market has weights. Each starts on the day of the market's first row in
     * force; run again after an import, it restates the defaults and adds what the market now offers.
     */
    const ensure = Effect.fn("DefaultIndexes.ensure")(function* () {
      const defined = yield* Effect.mapError(store.definitions, unavailableWrite)
      if (defined.some((d) => !d.definition.id.startsWith(DEFAULT_INDEX_PREFIX))) return { defined: 0, weights: 0 } satisfies DefaultIndexSummary
      const slices = new Map<string, Slice>()
      // The earliest `valid_from` of the current rows: where the default indices start.
      const market: { first: string | undefined } = { first: undefined }
      yield* eachRentalRow(rental, { _tag: "latest" }, [{ op: "in", field: "contract_type", values: CONTRACTS.map(([c]) => c) }], (row) => {
        const id = `${row.gpu_canonical_name}\u0000${row.contract_type}`
        let slice = slices.get(id)
        if (slice === undefined) {
          slice = { gpu: row.gpu_canonical_name, model: row.gpu_model, contract: row.contract_type, vendors: new Set(), regions: new Map(), offers: 0 }
          slices.set(id, slice)
        }
        slice.vendors.add(row.vendor)
        const region = slice.regions.get(row.region)
        if (region === undefined) slice.regions.set(row.region, new Set([row.vendor]))
        else region.add(row.vendor)
        slice.offers++
        if (market.first === undefined || row.valid_from < market.first) market.first = row.valid_from
      })
      if (market.first === undefined) return { defined: 0, weights: 0 } satisfies DefaultIndexSummary
      const startsAt = market.first.slice(0, 10)
      const definitions: Array<IndexDefinitionInput> = []
      const references: Array<{ readonly id: string; readonly gpu: string; readonly offers: number }> = []
      const sorted = [...slices.values()].sort((a, b) => (a.gpu < b.gpu ? -1 : a.gpu > b.gpu ? 1 : a.contract < b.contract ? -1 : 1))
      for (const s of sorted) {
        if (s.vendors.size < MIN_VENDORS) continue
        const contract = CONTRACTS.find(([c]) => c === s.contract)![1]
        const index = (region: string | null) => {
          const id = `${DEFAULT_INDEX_PREFIX}gpu-${s.gpu}-${region === null ? "global" : `region-${idPart(region)}`}-${s.contract}-daily`
          const definition: IndexDefinitionInput = {
            id,
            index_type: "gpu_rental_price",
            row_type: "daily",
            asset: "gpu_compute_rental",
            tenor: s.contract === "spot" ? "spot" : "on_demand",
            publication: "end_of_utc_day",
            interval: "P1D",
            title: `${s.gpu} ${contract} rental, ${region ?? "all regions"}, daily`,
            description: `${METHOD} GPU: ${s.gpu}. Contract: ${s.contract}. Regions: ${region ?? "all"}. Defined by default from the market's own offers.`,
            gpu_family: s.model,
            gpu_group: s.gpu,
            region_group: region ?? "global",
            contract_type: s.contract,
            vendor_category: "all",
            source: "computed",
            gpu_model: s.gpu,
            inputs: { kind: "rental", starts_at: startsAt, gpus: [s.gpu], contract_types: [s.contract], regions: region === null ? null : [region], vendors: null }
          }
          return definition
        }
        definitions.push(index(null))
        if (s.contract === "ondemand") references.push({ id: index(null).id, gpu: s.gpu, offers: s.offers })
        // Regions whose names differ only in case or punctuation share an id: the first (in order) is indexed.
        const ids = new Set<string>()
        for (const [region, vendors] of [...s.regions].sort(([a], [b]) => (a < b ? -1 : 1))) {
          const regional = index(region)
          if (vendors.size >= MIN_VENDORS && s.regions.size > 1 && !ids.has(regional.id)) {
            ids.add(regional.id)
            definitions.push(regional)
          }
        }
      }
      let weights = 0
      if (references.length > 0) {
        definitions.push({
          id: `${DEFAULT_INDEX_PREFIX}gpu-reference-price-daily`,
          index_type: "reference_price",
          row_type: "daily",
          asset: "gpu_compute_rental",
          tenor: "on_demand",
          publication: "end_of_utc_day",
          interval: "P1D",
          title: "GPU reference price, daily",
          description: `Fleet-weighted mean of the global daily on-demand per-GPU indices (${references.map((r) => r.gpu).join(", ")}), weighted by each GPU's fleet weight in force when the day starts.`,
          gpu_family: "all",
          gpu_group: "fleet",
          region_group: "global",
          contract_type: "ondemand",
          vendor_category: "all",
          source: "computed",
          gpu_model: null,
          inputs: { kind: "reference", starts_at: startsAt, components: references.map((r) => r.id) }
        })
        if ((yield* Effect.mapError(store.weights, unavailableWrite)).length === 0) {
          const total = references.reduce((sum, r) => sum + r.offers, 0)
          const from = formatInstant(parseDate(startsAt)!)
          weights = yield* ingest.setFleetWeights(references.map((r) => ({
            gpu_canonical_name: r.gpu, weight: Math.max(0.0001, Math.round((r.offers / total) * 10_000) / 10_000), valid_from: from, valid_to: null
          })))
        }
      }
      // Only what changed is defined: defining computes what is due, which an unchanged market need not wait for.
      const stored = new Map(defined.map((d) => [d.definition.id as string, JSON.stringify(d.definition)]))
      const changed = definitions.filter((d) => stored.get(d.id) !== JSON.stringify(d))
      if (changed.length === 0) return { defined: 0, weights } satisfies DefaultIndexSummary
      const summary = yield* ingest.define(changed)
      return { defined: summary.defined, weights } satisfies DefaultIndexSummary
    })

    return { ensure } as const
  })
}) {}

