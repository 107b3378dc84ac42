import type { EndpointName } from "@gpu-market/core"
import {
  catalogue, type CatalogueEntry, type EndpointDef, type EndpointParameter, type ServiceName
} from "@gpu-market/core/adapters"
import * as Option from "effect/Option"
import type * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"

/**
 * The data routes the HTTP app serves, each with what OpenAPI says about it: core's catalogue of
 * read endpoints (paths, parameters, bodies, service methods) with the words of the docs.
 * `makeApp` routes exactly these and `openApiDocument` documents exactly these, so the two
 * cannot drift apart, nor from the Promise API, the worker and the HTTP client.
 */

/** A named response body: `name` is its entry in `components.schemas`. */
export interface NamedSchema {
  readonly name: string
  readonly schema: Schema.Schema.AnyNoContext
}

/** One GET route of the data API. */
export interface DataRoute {
  /** Path without the base URL's prefix, e.g. `/v2/gpu/rental/prices/latest`. */
  readonly path: `/${string}`
  readonly operationId: string
  /** The data type it belongs to (the OpenAPI tag). */
  readonly tag: string
  readonly summary: string
  readonly description: string
  /** Query parameters it accepts; any other is a 422. */
  readonly parameters: ReadonlyArray<EndpointParameter>
  /** Paged routes also take `page_token` and answer with the envelope. */
  readonly paged: boolean
  /** Whether it can answer 400 (`missing_anchor`, `search_too_broad`). */
  readonly badRequest: boolean
  /** Body of a 200. */
  readonly response: NamedSchema
  /** The read it serves. */
  readonly entry: CatalogueEntry
}

type Paged = "latest" | "asOf" | "history"

/** How the docs present a data type: its operationId prefix, tag, and what one row is ("rental price rows"). */
const TYPES: Record<ServiceName, { readonly id: string; readonly tag: string; readonly rows: string }> = {
  "rental.prices": { id: "rental", tag: "GPU Rental Prices", rows: "rental price rows" },
  "hardware.prices": { id: "hardware", tag: "GPU Hardware Prices", rows: "hardware price rows" },
  "transactions": { id: "transactions", tag: "GPU Rental Aggregated Transactions", rows: "aggregated transaction rows" },
  "indices": { id: "indexes", tag: "GPU Price Indexes", rows: "index values of one index" },
  "llm.tokenPrices": { id: "llm", tag: "LLM Token Prices", rows: "LLM token price rows" }
}

/** The legacy endpoints, which are not a data type's. */
const LEGACY: Partial<Record<EndpointName, Pick<DataRoute, "operationId" | "summary" | "description">>> = {
  "indices.legacy.current": {
    operationId: "legacy_custom_index_current",
    summary: "Latest intraday value of a custom index",
    description: "Needs the legacy permission on the token. `index_id` defaults to the caller's sole computed intraday index; with several, it is required (422)."
  },
  "indices.legacy.available": {
    operationId: "legacy_info_index_available",
    summary: "Informational indices with their date ranges",
    description: "Takes no parameters. Lists the daily indices the token holds that have values, from the caller's history floor."
  }
}

/** A body under the name its schema carries (catalogue schemas are all named). */
const namedOf = (schema: Schema.Schema.AnyNoContext): NamedSchema => ({
  name: Option.getOrThrowWith(SchemaAST.getIdentifierAnnotation(schema.ast), () => new Error("a catalogue body without an identifier")),
  schema
})

const summaries: Record<Paged, (rows: string) => string> = {
  latest: (rows) => `Current ${rows}`,
  asOf: (rows) => `${rows[0]!.toUpperCase()}${rows.slice(1)} as they stood at an instant`,
  history: (rows) => `${rows[0]!.toUpperCase()}${rows.slice(1)} within a time window`
}

const describe = (anchors: ReadonlyArray<string>, endpoint: EndpointDef): string => {
  const lines = [`Default sort: \`${endpoint.defaultSort.by} ${endpoint.defaultSort.order}\`.`]
  if (endpoint.needsAnchor) lines.push(`Needs an anchor: at least one of ${anchors.map((a) => `\`${a}\``).join(", ")} (else 400 \`missing_anchor\`).`)
  if (endpoint.name === "history") {
    lines.push(`Window \`[start, end)\`; default span ${endpoint.defaultSpanDays ?? 30} days. Needs historical access; a window below the caller's history floor is clamped (\`meta.window.clamped\`).`)
  }
  if (endpoint.name === "as-of") lines.push("Needs historical access; an `at` before the caller's history floor is 403. `meta.as_of` echoes the instant resolved.")
  lines.push("Pass `page_token` from `meta.next` alone (only `page_size` may accompany it) for the next page.")
  return lines.join("\n\n")
}

const routeOf = (entry: CatalogueEntry): DataRoute => {
  const common = { path: entry.path, parameters: entry.parameters, paged: entry.paged, response: namedOf(entry.response), entry }
  const legacy = LEGACY[entry.name]
  if (legacy !== undefined) return { ...common, ...legacy, tag: "Legacy v1", badRequest: false }
  const { collection, endpoint } = entry
  if (collection === undefined) throw new Error(`${entry.name} is neither a data type's endpoint nor a documented legacy one`)
  const type = TYPES[entry.service]
  if (endpoint === undefined) {
    return {
      ...common,
      operationId: `${type.id}_metadata`,
      tag: type.tag,
      summary: `Valid filter values and coverage of ${type.rows}`,
      description: "Takes no parameters and is not paged. `history_starts_at` is the caller's history floor (null: unrestricted).",
      badRequest: false
    }
  }
  const method = entry.method as Paged
  return {
    ...common,
    operationId: `${type.id}_${method}`,
    tag: type.tag,
    summary: summaries[method](type.rows),
    description: describe(collection.anchors, endpoint),
    // A 400 is a missing anchor or a search that matched too much (a parameter the type resolves).
    badRequest: endpoint.needsAnchor || Object.values(collection.params).some((p) => p.filter === undefined && !p.required)
  }
}

/** Every data route, in the order the docs list them: the catalogue's. */
export const dataRoutes: ReadonlyArray<DataRoute> = catalogue.map(routeOf)
