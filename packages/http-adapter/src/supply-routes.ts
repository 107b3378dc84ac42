import {
  DiscoveryList, Envelope, IdempotencyKey, Offer, OfferId, OfferList, OfferRequest, Procurement, ProcurementId, ProcurementRequest, Resource, ResourceId, SupplyContract, SupplyGpu, SupplyRegion, SupplyStorageOption, SupplyVendor
} from "@gpu-market/core"
import { type EndpointParameter, MAX_BODY_DEPTH, optionalParameters, type ProblemError, ResourceListParams } from "@gpu-market/core/adapters"
import type * as Schema from "effect/Schema"
import type { NamedSchema } from "./routes.js"

/**
 * The procurement endpoints, below the supply prefix, with what OpenAPI says about each.
 * `makeSupplyRoutes` mounts exactly these (a handler per `operationId`, which the compiler holds
 * it to) and `openApiDocument` documents exactly these, so the two cannot drift apart.
 */

/** A parameter in the path, query or headers, with its schema over the raw text. */
export interface SupplyParameter extends EndpointParameter {
  readonly in: "path" | "query" | "header"
}

/** One answer of an endpoint that is not a problem. */
export interface SupplyResponse {
  readonly status: 200 | 201 | 202
  readonly description: string
  readonly body: NamedSchema
  /** Sent with it besides `X-Request-Id` (and `X-RateLimit-*` on a rate-limited endpoint). */
  readonly location?: boolean
}

/** One method on one procurement path. */
export interface SupplyEndpoint {
  readonly operationId: string
  readonly method: "GET" | "POST" | "DELETE"
  /** Path below the supply prefix, in router syntax (`/offers/:offer_id`). */
  readonly path: `/${string}`
  readonly tag: string
  readonly summary: string
  readonly description: string
  readonly parameters: ReadonlyArray<SupplyParameter>
  /** Paged endpoints also take `page_token`. */
  readonly paged: boolean
  /** The body and the media types it may be written in (the first is the spec's). */
  readonly requestBody?: { readonly mediaTypes: ReadonlyArray<"application/yaml" | "application/json">; readonly schema: NamedSchema }
  readonly responses: ReadonlyArray<SupplyResponse>
  /**
   * The errors it can end with besides those every procurement endpoint can (401, 403, 500 and a
   * storage 503); their statuses come from the one error→problem mapping.
   */
  readonly errors: ReadonlyArray<ProblemError["_tag"]>
  /** Whether it spends the caller's per-minute budget (and carries `X-RateLimit-*`). */
  readonly rateLimited: boolean
}

const named = (name: string, schema: Schema.Schema.AnyNoContext): NamedSchema => ({ name, schema })

const pathId = (name: string, schema: Schema.Schema.AnyNoContext): SupplyParameter => ({ name, in: "path", schema, required: true })

const DISCOVERY = "Procurement: discovery"
const ORDERS = "Procurement: offers and procurements"
const RESOURCES = "Procurement: resources"

const discovery = <const Id extends string>(
  operationId: Id,
  path: `/${string}`,
  summary: string,
  body: NamedSchema
): SupplyEndpoint & { readonly operationId: Id } => ({
  operationId, method: "GET", path, tag: DISCOVERY, summary,
  description: "What the supply provider sells now; not paged (the lists are small). Takes no query parameters (422).",
  parameters: [], paged: false, responses: [{ status: 200, description: body.name, body }],
  errors: ["ValidationFailed", "ProviderUnavailable"], rateLimited: false
})

/** A GET of one of the caller's records by its id in the path; takes no query parameters. */
const byId = <const Id extends string>(
  operationId: Id,
  path: `/${string}`,
  tag: string,
  text: Pick<SupplyEndpoint, "summary" | "description">,
  id: readonly [name: string, schema: Schema.Schema.AnyNoContext],
  body: NamedSchema
): SupplyEndpoint & { readonly operationId: Id } => ({
  operationId, method: "GET", path, tag, ...text, parameters: [pathId(...id)], paged: false,
  responses: [{ status: 200, description: body.name, body }], errors: ["NotFound", "ValidationFailed"], rateLimited: false
})

const resource = named("Resource", Resource)
const procurement = named("Procurement", Procurement)

/** Every procurement endpoint, in the order the docs list them. */
export const supplyEndpoints = [
  discovery("supply_gpus", "/gpus", "GPUs on offer, with instance sizes, vendors, regions, contracts and the lowest price",
    named("SupplyGpuList", DiscoveryList(SupplyGpu))),
  discovery("supply_vendors", "/vendors", "Vendors selling now, with what and where", named("SupplyVendorList", DiscoveryList(SupplyVendor))),
  discovery("supply_regions", "/regions", "Regions with capacity now", named("SupplyRegionList", DiscoveryList(SupplyRegion))),
  discovery("supply_contracts", "/contracts", "Contract types on offer now and the terms each accepts",
    named("SupplyContractList", DiscoveryList(SupplyContract))),
  discovery("supply_storage_options", "/storage-options", "Storage that can be attached to instances",
    named("SupplyStorageOptionList", DiscoveryList(SupplyStorageOption))),
  {
    operationId: "supply_get_offers",
    method: "POST",
    path: "/get_offers",
    tag: ORDERS,
    summary: "Offers for a request: prices held for 30 minutes",
    description: `The body is YAML (\`Content-Type: application/yaml\`) or the same fields as JSON (\`application/json\`): at most 16 KiB, nested at most ${MAX_BODY_DEPTH} levels (else 413 or 422; another media type is 415); unknown keys are refused (422). Each caller may ask 5 times a minute (429 with \`Retry-After\`); a refused body counts too. Every offer is held for the caller alone until \`expires_at\`.`,
    parameters: [],
    paged: false,
    requestBody: { mediaTypes: ["application/yaml", "application/json"], schema: named("OfferRequest", OfferRequest) },
    responses: [{ status: 200, description: "OfferList", body: named("OfferList", OfferList) }],
    errors: ["SearchTooBroad", "PayloadTooLarge", "UnsupportedMediaType", "ValidationFailed", "RateLimited", "ProviderUnavailable"],
    rateLimited: true
  },
  byId("supply_offer", "/offers/:offer_id", ORDERS, {
    summary: "One of the caller's offers, expired or not",
    description: "`expires_at` tells whether it can still be procured. Anyone else's offer is 404."
  }, ["offer_id", OfferId], named("Offer", Offer)),
  {
    operationId: "supply_create_procurement",
    method: "POST",
    path: "/procurements",
    tag: ORDERS,
    summary: "Provision an offer, exactly once per Idempotency-Key",
    description: `The body is JSON (\`Content-Type: application/json\`, at most 16 KiB, nested at most ${MAX_BODY_DEPTH} levels; else 415, 413 or 422). A new key answers 201 with \`Location\`; the same key again answers 200 with the one procurement it made (even after the offer expired), and the same key for another offer is 422 \`idempotency_conflict\`. An offer past \`expires_at\` is 410.`,
    parameters: [{ name: "Idempotency-Key", in: "header", schema: IdempotencyKey, required: true }],
    paged: false,
    requestBody: { mediaTypes: ["application/json"], schema: named("ProcurementRequest", ProcurementRequest) },
    responses: [
      { status: 201, description: "Procurement (made by this request)", body: procurement, location: true },
      { status: 200, description: "Procurement (made earlier with this Idempotency-Key)", body: procurement }
    ],
    errors: ["NotFound", "OfferExpired", "PayloadTooLarge", "UnsupportedMediaType", "ValidationFailed", "IdempotencyConflict"],
    rateLimited: false
  },
  byId("supply_procurement", "/procurements/:procurement_id", ORDERS, {
    summary: "One of the caller's procurements, where its provisioning stands now",
    description: "`pending → provisioning → fulfilled | failed`; `resource_ids` lists the resources once fulfilled."
  }, ["procurement_id", ProcurementId], procurement),
  {
    operationId: "supply_list_resources",
    method: "GET",
    path: "/resources",
    tag: RESOURCES,
    summary: "The caller's resources, newest first",
    description: "Paged like the market's endpoints: pass `page_token` from `meta.next` alone (only `page_size` may accompany it) for the next page.",
    parameters: optionalParameters(ResourceListParams.fields).map((p): SupplyParameter => ({ ...p, in: "query" })),
    paged: true,
    responses: [{ status: 200, description: "ResourcePage", body: named("ResourcePage", Envelope(resource.schema)) }],
    errors: ["ValidationFailed"],
    rateLimited: false
  },
  byId("supply_resource", "/resources/:resource_id", RESOURCES, {
    summary: "One of the caller's resources",
    description: "`running → deleting → deleted`."
  }, ["resource_id", ResourceId], resource),
  {
    operationId: "supply_delete_resource",
    method: "DELETE",
    path: "/resources/:resource_id",
    tag: RESOURCES,
    summary: "Delete a resource",
    description: "Idempotent: 202 while it is `deleting`, 200 once `deleted`; deleting again answers with where it stands.",
    parameters: [pathId("resource_id", ResourceId)],
    paged: false,
    responses: [
      { status: 202, description: "Resource (deleting)", body: resource },
      { status: 200, description: "Resource (deleted)", body: resource }
    ],
    errors: ["NotFound", "ValidationFailed", "ProviderUnavailable"],
    rateLimited: false
  }
] as const satisfies ReadonlyArray<SupplyEndpoint>

/** The operation ids of the procurement endpoints: each needs a handler. */
export type SupplyOperationId = (typeof supplyEndpoints)[number]["operationId"]
