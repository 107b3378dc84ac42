import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { requireGrant } from "../auth/entitlements.js"
import { historyFloor } from "../auth/history.js"
import type { Principal } from "../auth/principal.js"
import { InsufficientEntitlement, NotFound, validationFailed } from "../errors.js"
import { IndexComputation } from "../ingest/index-computation.js"
import { type ExportRun, runExport } from "../export/rows.js"
import { collection, endpointDecoder, type EndpointDef, type MarketRequest, type PageRun, runPage } from "../query/collection.js"
import { required, Slug } from "../query/filters.js"
import { PageTokens } from "../query/page-token.js"
import { PageCache } from "./page-cache.js"
import {
  collectQuery, decodeParams, type QueryInput, refuseParameters, withMessage
} from "../query/params.js"
import { formatInstant } from "../query/time.js"
import {
  INDEX_UNITS, type IndexDefinition, type IndexMetadata, type IndexMetadataEntry, type IndexValue, type LegacyAvailableIndexBody,
  type LegacyCurrentIndexBody
} from "../schema/indexes.js"
import { EventLogStore } from "../storage/event-log.js"
import { IndexStore } from "../storage/indexes.js"
import type { PagePlan, Predicate } from "../storage/plan.js"
import { metadataBody, type MetadataRequest } from "./metadata.js"
import { spanned } from "./pages.js"
import { nowMicros, unavailable } from "./storage.js"
import { indexValueTable } from "../storage/tables.js"

/** The index type: one index per request, named by the required `id`. */
/** One index id (a list is refused: one index per request). */
const IndexIdParam = Slug.pipe(Schema.annotations(withMessage("expected one index id, as /metadata lists them")))

/** The index type: one index per request, sorted by time or value; the timestamp is unique within one. */
export const indexesCollection = collection({
  dataType: "gpu_rental_indexes",
  service: "indices",
  params: { id: required(IndexIdParam) },
  sortFields: indexValueTable.sortable,
  tieBreaker: indexValueTable.tie,
  anchors: []
})

/** The type's paged endpoints: name, default sort, anchor rule and default span. */
export const endpoints = {
  latest: { name: "latest", defaultSort: { by: "timestamp", order: "asc" }, needsAnchor: false },
  asOf: { name: "asOf", defaultSort: { by: "timestamp", order: "asc" }, needsAnchor: false },
  history: { name: "history", defaultSort: { by: "timestamp", order: "asc" }, needsAnchor: false, defaultSpanDays: 30 }
} as const satisfies Record<string, EndpointDef>

const decoders = {
  latest: endpointDecoder(indexesCollection, endpoints.latest),
  asOf: endpointDecoder(indexesCollection, endpoints.asOf),
  history: endpointDecoder(indexesCollection, endpoints.history)
}
/** Parameters of `/v1/custom-index/current`. */
export const LegacyCurrentParams = Schema.Struct({ index_id: Schema.optional(IndexIdParam) })

/** Whether a principal holds an index. */
export const holdsIndex = (principal: Principal, id: string): boolean =>
  principal.indices === "all" || principal.indices.includes(id)

/**
 * The refusal of an index the caller may not read. An index not held and one that does not
 * exist get the same bytes (the id is not echoed either), so a caller cannot probe for ids.
 */
const notFound = new NotFound({ detail: "no index with this id is available to this token; /metadata lists the ones it holds" })

/** The metadata entry of a definition: the spec's fifteen fields. */
const metadataEntry = (d: IndexDefinition): IndexMetadataEntry => ({
  id: d.id, index_type: d.index_type, row_type: d.row_type, asset: d.asset, tenor: d.tenor, publication: d.publication,
  interval: d.interval, title: d.title, description: d.description, gpu_family: d.gpu_family, gpu_group: d.gpu_group,
  region_group: d.region_group, contract_type: d.contract_type, vendor_category: d.vendor_category, source: d.source
})

/** The ids a plan names (a plan from a page token carries the id it was issued for). */
const planIds = (plan: PagePlan): ReadonlyArray<string> =>
  plan.predicates.flatMap((p) => (p.field !== "id" ? [] : p.op === "eq" ? [p.value] : p.op === "in" ? p.values : []))

/**
 * GPU price indexes: `/latest`, `/as-of`, `/history` and `/metadata` of the index the request
 * names, and the two legacy v1 endpoints. Every read first computes whatever became due since
 * this process last did (`IndexComputation.ensureCurrent`).
 */
export class Indexes extends Effect.Service<Indexes>()("Market/Indexes", {
  effect: Effect.gen(function* () {
    const store = yield* IndexStore
    const tokens = yield* PageTokens
    const cache = yield* PageCache
    const events = yield* EventLogStore
    const computation = yield* IndexComputation

    /** The definition of an id the principal holds, or the one 404 for both "not held" and "no such index". */
    const heldDefinition = (principal: Principal, id: string) =>
      Effect.flatMap(Effect.mapError(store.definition(id), unavailable), (d) =>
        Option.isSome(d) && holdsIndex(principal, id) ? Effect.succeed(d.value) : Effect.fail(notFound))

    /**
     * Whether an as-of answer lies at or above the caller's floor. "The most recent earlier
     * value" may come from any distance back; it must not come from before the floor.
     */
    const aboveFloor = (principal: Principal, now: number) => {
      const grant = principal.grants.gpu_rental_indexes
      const floor = grant === undefined ? undefined : historyFloor(grant.history, now)
      if (floor === null) return () => true
      if (floor === undefined) return () => false
      const day = formatInstant(floor).slice(0, 10), instant = formatInstant(floor)
      return (row: IndexValue) => row.timestamp >= (row.type === "daily" ? day : instant)
    }

    const holdsAll = (principal: Principal, plan: PagePlan) => planIds(plan).every((id) => holdsIndex(principal, id))

    /** The floor `aboveFloor` applies, as text: unrestricted, none, or the instant. */
    const floorKey = (principal: Principal, now: number) => {
      const grant = principal.grants.gpu_rental_indexes
      const floor = grant === undefined ? undefined : historyFloor(grant.history, now)
      return floor === null ? "unrestricted" : floor === undefined ? "none" : formatInstant(floor)
    }

    const runOf = (endpoint: keyof typeof endpoints, request: MarketRequest) =>
      Effect.gen(function* () {
        yield* computation.ensureCurrent
        const now = yield* nowMicros
        return {
          collection: indexesCollection,
          endpoint: endpoints[endpoint],
          decode: decoders[endpoint],
          request,
          tokens,
          now,
          resolve: (params) =>
            Effect.as(heldDefinition(request.principal, params.id as string), [{ op: "eq", field: "id", value: params.id as string }] as ReadonlyArray<Predicate>),
          // A page token names the index it was issued for; one no longer held reads nothing.
          page: (plan) => !holdsAll(request.principal, plan)
            ? Effect.succeed([])
            : plan.scope._tag === "asOf"
            ? Effect.map(store.page(plan), (rows) => rows.filter(aboveFloor(request.principal, now)))
            : store.page(plan),
          version: store.version,
          cache,
          // What `page` reads of the caller: whether it holds the plan's index, and on as-of its floor.
          entitled: (plan) => !holdsAll(request.principal, plan)
            ? "not held"
            : plan.scope._tag === "asOf" ? `floor ${floorKey(request.principal, now)}` : "held",
          head: events.head
        } satisfies PageRun<IndexValue> & ExportRun<IndexValue>
      })
    const pageOf = (endpoint: keyof typeof endpoints, request: MarketRequest) =>
      spanned(`Indexes.${endpoint}`, Effect.flatMap(runOf(endpoint, request), runPage<IndexValue>))

    /** The latest published value of an index, if any. */
    const latestValue = (id: string) =>
      Effect.map(
        Effect.mapError(store.page({
          scope: { _tag: "latest" }, predicates: [{ op: "eq", field: "id", value: id }], sort: { by: "timestamp", order: "desc" }, after: undefined, limit: 1
        }), unavailable),
        (rows) => rows[0]
      )

    return {
      /** The index's most recent published value. */
      latest: (request: MarketRequest) => pageOf("latest", request),
      /**
       * The value in force at `at`: a daily index answers with the latest day on or before the
       * UTC date of `at`; an intraday one with the latest interval completed by `at`; with
       * nothing then, the latest earlier value. Needs historical access; `at` below the floor is 403.
       */
      asOf: (request: MarketRequest) => pageOf("asOf", request),
      /** Values whose interval starts inside `[start, end)`; needs historical access. */
      history: (request: MarketRequest) => pageOf("history", request),
      /**
       * Every value of a paged query of one index, read from one state of the store, with the
       * change feed's event id of that state (see `RowExport`).
       */
      export: (endpoint: keyof typeof endpoints, request: MarketRequest) =>
        spanned("Indexes.export", Effect.flatMap(runOf(endpoint, request), runExport<IndexValue>)),
      /** The indices the token holds (none: an empty list), their units and the caller's history floor. */
      metadata: Effect.fn("Indexes.metadata")((request: MetadataRequest) =>
        metadataBody(request, "gpu_rental_indexes", store.definitions,
          (defs): IndexMetadata["data"] => ({
            index_units: INDEX_UNITS,
            indices: defs.filter((d) => holdsIndex(request.principal, d.definition.id)).map((d) => metadataEntry(d.definition))
          })
        )
      ),

      /**
       * `GET /v1/custom-index/current`: the latest value of a computed intraday index the caller
       * holds, as the legacy record. Needs the legacy permission. `index_id` defaults to the
       * caller's sole computed intraday index; holding several, the caller must name one (422),
       * and holding none is 404.
       */
      legacyCurrent: Effect.fn("Indexes.legacyCurrent")(function* (request: { readonly principal: Principal; readonly query: QueryInput }) {
        const principal = request.principal
        yield* requireGrant(principal, indexesCollection.dataType)
        if (!principal.legacy_custom_index) {
          return yield* Effect.fail(new InsufficientEntitlement({ detail: "this token lacks the legacy custom-index permission" }))
        }
        const params = yield* decodeParams(LegacyCurrentParams, yield* collectQuery(request.query))
        yield* computation.ensureCurrent
        const eligible = (d: IndexDefinition) => d.row_type === "intraday" && d.source === "computed"
        let definition: IndexDefinition
        if (params.index_id !== undefined) {
          definition = yield* heldDefinition(principal, params.index_id)
          if (!eligible(definition)) {
            return yield* Effect.fail(validationFailed([{
              parameter: "index_id",
              message: `names a ${definition.source} ${definition.row_type} index; this endpoint serves computed intraday indices`
            }]))
          }
        } else {
          const held = (yield* Effect.mapError(store.definitions, unavailable))
            .map((d) => d.definition)
            .filter((d) => eligible(d) && holdsIndex(principal, d.id))
          if (held.length === 0) return yield* Effect.fail(new NotFound({ detail: "this token holds no computed intraday index" }))
          if (held.length > 1) {
            return yield* Effect.fail(validationFailed([{
              parameter: "index_id",
              message: `this token holds ${held.length} computed intraday indices; name one with index_id`
            }]))
          }
          definition = held[0]!
        }
        const d = definition
        const value = yield* latestValue(d.id)
        const data: LegacyCurrentIndexBody["data"] = value === undefined || value.p5 === null || value.p95 === null ? [] : [{
          blended_value: value.value,
          contract_type: d.contract_type,
          gpu_family: d.gpu_family,
          gpu_model: d.gpu_model ?? d.gpu_group,
          index_id: d.id,
          index_name: d.title,
          index_units: INDEX_UNITS,
          index_value: value.value,
          p5: value.p5,
          p95: value.p95,
          region_group: d.region_group,
          timestamp: value.timestamp,
          vendor_category: d.vendor_category
        }]
        const body: LegacyCurrentIndexBody = {
          data,
          filters: { contract_type: d.contract_type, index_id: d.id, region_group: d.region_group, vendor_category: d.vendor_category },
          total_count: data.length
        }
        return body
      }),

      /**
       * `GET /v1/info-index/available`: the informational indices, i.e. the daily indices the
       * caller holds that have a published value, with the days the caller can read: every
       * published day on or after its history floor, and always the latest.
       */
      legacyAvailable: Effect.fn("Indexes.legacyAvailable")(function* (request: { readonly principal: Principal; readonly query: QueryInput }) {
        const principal = request.principal
        const grant = yield* requireGrant(principal, indexesCollection.dataType)
        yield* refuseParameters(request.query)
        yield* computation.ensureCurrent
        const defs = (yield* Effect.mapError(store.definitions, unavailable))
          .map((d) => d.definition)
          .filter((d) => d.row_type === "daily" && holdsIndex(principal, d.id))
        const floor = historyFloor(grant.history, yield* nowMicros)
        const coverage = yield* Effect.mapError(
          store.coverage(defs.map((d) => d.id), floor === null || floor === undefined ? null : formatInstant(floor)),
          unavailable
        )
        const byId = new Map(defs.map((d) => [d.id as string, d]))
        const data = coverage.map((c) => {
          const d = byId.get(c.id)!
          // Without history, or with a floor after the last day, only the latest day is readable.
          const first = floor === undefined ? null : c.first
          return {
            first_date: first ?? c.last,
            gpu_family: d.gpu_family,
            gpu_model: d.gpu_model,
            index_name: d.title,
            index_units: INDEX_UNITS,
            last_date: c.last,
            total_days: first === null ? 1 : c.count
          }
        })
        const body: LegacyAvailableIndexBody = { data, total: data.length }
        return body
      })
    } as const
  }),
  dependencies: [PageCache.Default]
}) {}
