/**
 * Every read endpoint's dotted name, path and paging, in the order of the HTTP API's docs: the one
 * declaration the catalogue (and so the routes and OpenAPI), the collections' page tokens and
 * `meta.next` links, and the client take theirs from. It imports nothing, so the query engine can
 * name its paths without depending on the read API's types (which depend on the collections).
 */

/** One read endpoint as declared: its dotted name, HTTP path, and whether it is paged. */
export interface EndpointDeclaration {
  readonly name: string
  readonly path: `/${string}`
  /** Answers with the paged envelope (and takes `page_token`). */
  readonly paged: boolean
}

export const declaredEndpoints = [
  { name: "rental.prices.latest", path: "/v2/gpu/rental/prices/latest", paged: true },
  { name: "rental.prices.asOf", path: "/v2/gpu/rental/prices/as-of", paged: true },
  { name: "rental.prices.history", path: "/v2/gpu/rental/prices/history", paged: true },
  { name: "rental.prices.metadata", path: "/v2/gpu/rental/prices/metadata", paged: false },
  { name: "rental.prices.summary", path: "/v2/gpu/rental/prices/summary", paged: true },
  { name: "rental.prices.summaryHistory", path: "/v2/gpu/rental/prices/summary/history", paged: true },
  { name: "hardware.prices.latest", path: "/v2/gpu/hardware/prices/latest", paged: true },
  { name: "hardware.prices.asOf", path: "/v2/gpu/hardware/prices/as-of", paged: true },
  { name: "hardware.prices.history", path: "/v2/gpu/hardware/prices/history", paged: true },
  { name: "hardware.prices.metadata", path: "/v2/gpu/hardware/prices/metadata", paged: false },
  { name: "transactions.history", path: "/v2/gpu/rental/transactions/aggregated/history", paged: true },
  { name: "transactions.metadata", path: "/v2/gpu/rental/transactions/aggregated/metadata", paged: false },
  { name: "indices.latest", path: "/v2/gpu/rental/indexes/latest", paged: true },
  { name: "indices.asOf", path: "/v2/gpu/rental/indexes/as-of", paged: true },
  { name: "indices.history", path: "/v2/gpu/rental/indexes/history", paged: true },
  { name: "indices.metadata", path: "/v2/gpu/rental/indexes/metadata", paged: false },
  { name: "llm.tokenPrices.latest", path: "/v2/llm/token/prices/latest", paged: true },
  { name: "llm.tokenPrices.asOf", path: "/v2/llm/token/prices/as-of", paged: true },
  { name: "llm.tokenPrices.history", path: "/v2/llm/token/prices/history", paged: true },
  { name: "llm.tokenPrices.metadata", path: "/v2/llm/token/prices/metadata", paged: false },
  { name: "indices.legacy.current", path: "/v1/custom-index/current", paged: false },
  { name: "indices.legacy.available", path: "/v1/info-index/available", paged: false }
] as const satisfies ReadonlyArray<EndpointDeclaration>

/** An endpoint as declared above; its name is one of the read API's (`EndpointName`, held equal by the compiler). */
export type DeclaredEndpoint = (typeof declaredEndpoints)[number]

const endpointsByName: ReadonlyMap<string, DeclaredEndpoint> = new Map(declaredEndpoints.map((e) => [e.name, e]))

/**
 * The read endpoint named `name` (`rental.prices.asOf`), as declared above: the catalogue and the
 * collections' pages take names and paths from here. Throws for a name not declared, a bug in a
 * declaration that fails as its module loads.
 */
export const readEndpoint = (name: string): DeclaredEndpoint => {
  const endpoint = endpointsByName.get(name)
  if (endpoint === undefined) throw new Error(`no read endpoint is named ${name}`)
  return endpoint
}

/** The namespaces of the data types, each answered by one market service. */
export type ServiceName = "rental.prices" | "hardware.prices" | "transactions" | "llm.tokenPrices" | "indices"
