import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import type { Principal } from "../auth/principal.js"
import type { ValidationFailed } from "../errors.js"
import { unavailable } from "../market/storage.js"
import { continueFromToken, cutPage, mergePredicates, predicatesOf, type RequestOrigin } from "../query/collection.js"
import { list, Slug } from "../query/filters.js"
import { PageTokens, type PageTokenState } from "../query/page-token.js"
import { collectQuery, decodeParams, DEFAULT_PAGE_SIZE, PageSize, type QueryInput, SortByParam, SortOrderParam } from "../query/params.js"
import type { Page } from "../schema/envelope.js"
import { type Resource, ResourceId, ResourceStatus } from "../schema/procurement.js"
import { ProcurementStore } from "../storage/procurement.js"
import { ownRecord, requireProcurement } from "./access.js"
import { Lifecycle } from "./lifecycle.js"

/** Filters of `GET /resources`: comma lists, as the market's endpoints take them. */
export const resourceFilters = {
  status: list("statuses (running, deleting, deleted)", ResourceStatus as Schema.Schema<string, string>),
  vendor: list("vendor slugs", Slug),
  gpu_canonical_name: list("GPU slugs", Slug)
}

/** The query schema of `GET /resources`. */
export const ResourceListParams = Schema.Struct({
  page_size: Schema.optional(PageSize),
  sort_by: Schema.optional(SortByParam(["created_at"])),
  sort_order: Schema.optional(SortOrderParam),
  status: Schema.optional(resourceFilters.status.schema),
  vendor: Schema.optional(resourceFilters.vendor.schema),
  gpu_canonical_name: Schema.optional(resourceFilters.gpu_canonical_name.schema)
})

/** The path page tokens of the resource list are bound to (below the supply prefix). */
export const RESOURCES_PATH = "/resources"

/** Where a page starts: after a token's position, or at the top. */
interface PageRequest {
  readonly state: Omit<PageTokenState, "after"> & { readonly after: PageTokenState["after"] | undefined }
  readonly pageSize: number
}

/** A list request: the caller, the raw query, and where `meta.next` points (origin and supply prefix). */
export interface ResourceListRequest {
  readonly principal: Principal
  readonly query: QueryInput
  readonly origin: RequestOrigin
}

/** Provisioned resources: list, inspect, delete. */
export class Resources extends Effect.Service<Resources>()("Procurement/Resources", {
  dependencies: [Lifecycle.Default],
  effect: Effect.gen(function* () {
    const store = yield* ProcurementStore
    const lifecycle = yield* Lifecycle
    const tokens = yield* PageTokens

    const find = (principal: Principal, resourceId: string) =>
      Effect.zipRight(requireProcurement(principal), ownRecord(ResourceId, "resource", resourceId, (id) => store.resource(principal.id, id)))

    /** The page request: from a page token, or from filters (newest first by default). */
    const pageState = (principal: Principal, query: QueryInput) =>
      Either.flatMap(collectQuery(query), (raw): Either.Either<PageRequest, ValidationFailed> =>
        raw.page_token !== undefined
          ? Either.map(continueFromToken(raw, tokens, principal.id, RESOURCES_PATH), ({ state, pageSize }) => ({ state, pageSize: pageSize ?? DEFAULT_PAGE_SIZE }))
          : Either.map(decodeParams(ResourceListParams, raw), (params) => ({
              pageSize: params.page_size ?? DEFAULT_PAGE_SIZE,
              state: {
                scope: { _tag: "latest" as const },
                predicates: mergePredicates(predicatesOf(resourceFilters, params)),
                sort: { by: params.sort_by ?? "created_at", order: params.sort_order ?? "desc" },
                clamped: false,
                after: undefined
              }
            })))

    return {
      /**
       * The caller's resources in the standard envelope, newest first unless asked otherwise.
       * Records between states are advanced first, so the statuses and filters are current.
       */
      list: Effect.fn("Resources.list")(function* (request: ResourceListRequest) {
        const { principal } = request
        yield* requireProcurement(principal)
        const { state, pageSize } = yield* pageState(principal, request.query)
        yield* lifecycle.settle(principal.id)
        const rows = state.predicates.some((p) => p.op === "in" && p.values.length === 0)
          ? []
          : yield* Effect.mapError(store.resources(principal.id, { ...state, limit: pageSize + 1 }), unavailable)
        const page: Page<Resource> = cutPage(rows, {
          pageSize, state, tieBreaker: "resource_id", tokens, principal: principal.id, endpointPath: RESOURCES_PATH, origin: request.origin
        })
        return page
      }),
      /** One of the caller's resources, advanced to where its deletion stands now. */
      get: Effect.fn("Resources.get")(function* (input: { readonly principal: Principal; readonly resourceId: string }) {
        const found = yield* find(input.principal, input.resourceId)
        return (yield* lifecycle.advanceResource(found)).resource
      }),
      /** Deletes a resource: `running → deleting → deleted`; deleting again answers with where it stands. */
      delete: Effect.fn("Resources.delete")(function* (input: { readonly principal: Principal; readonly resourceId: string }) {
        const found = yield* find(input.principal, input.resourceId)
        return (yield* lifecycle.deleteResource(found)).resource
      })
    } as const
  })
}) {}

