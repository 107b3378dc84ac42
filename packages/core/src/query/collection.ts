import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { readEndpoint, type ServiceName } from "../adapters/endpoints.js"
import type { DataType, Principal } from "../auth/principal.js"
import { reportedHistoryStart, requireGrant, requireHistory } from "../auth/entitlements.js"
import { type MarketError, MissingAnchor, type ValidationFailed, validationFailed } from "../errors.js"
import { type PageCache, pageFromBytes, rowsBytes, withSerialisedData } from "../market/page-cache.js"
import { unavailable } from "../market/storage.js"
import type { Page, PageMeta, SortOrder } from "../schema/envelope.js"
import { type PagePlan, type Position, type Predicate, type Scope, sortValue } from "../storage/plan.js"
import type { StorageError } from "../storage/contract.js"

import type { PageTokens, PageTokenState } from "./page-token.js"
import {
  collectQuery, decodeParams, DEFAULT_PAGE_SIZE, InstantParam, PageSize, type QueryInput, SortByParam,
  SortOrderParam
} from "./params.js"
import { formatInstant, type Micros } from "./time.js"
import { beforeFloor, resolveAt, resolveWindow } from "./window.js"

/** How a parameter narrows rows. */
export interface FilterRule {
  /** `list`: field in any of the values; `single`: field equals; `min`/`max`: inclusive bound. */
  readonly kind: "list" | "single" | "min" | "max"
  /** The row field it applies to; absent: the field of the parameter's name. */
  readonly field?: string
}

/**
 * One query parameter of a collection: its schema over the raw text (`A` once decoded), whether
 * every request names it, and the filter it applies (absent: the type resolves it itself, as
 * `gpu_search` or an index's `id`). `query/filters.ts` builds them.
 */
export interface ParamDef<A> {
  readonly schema: Schema.Schema<A, string>
  readonly required: boolean
  readonly filter?: FilterRule
}

/** A collection's parameters by name, in the order they are documented and decoded. */
// Schema is invariant in its type, so only `any` admits every parameter's schema.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ParamDefs = Readonly<Record<string, ParamDef<any>>>

/**
 * A paged data type, declared once: its parameters (filters and the ones it resolves itself),
 * sorts, anchors and tie-breaker. Its routes, OpenAPI entries and the Promise API's query type
 * (`CollectionQuery`) are all derived from this declaration.
 */
export interface CollectionDef<P extends ParamDefs = ParamDefs, Sort extends string = string, Anchor extends string = string> {
  readonly dataType: DataType
  /** The namespace of its read endpoints (`rental.prices`), which names their paths (`readEndpoints`). */
  readonly service: ServiceName
  /** Its own query parameters, besides paging, sorting and an endpoint's `at` or `start`/`end`. */
  readonly params: P
  readonly sortFields: ReadonlyArray<Sort>
  /** The unique row field that breaks ties in every sort. */
  readonly tieBreaker: string
  /** Parameters that anchor a query, where the type needs an anchor. */
  readonly anchors: ReadonlyArray<Anchor>
}

/** Declares a collection, keeping the names and types of its parameters and sorts; its anchors are among its parameters. */
export const collection = <const P extends ParamDefs, const Sort extends string, const Anchor extends keyof P & string = never>(
  def: CollectionDef<P, Sort, Anchor>
): CollectionDef<P, Sort, Anchor> => def

/** The decoded type of a parameter. */
export type DecodedParam<D> = D extends ParamDef<infer A> ? A : never

/** The names of the parameters every request of a collection must name. */
export type RequiredParamNames<P extends ParamDefs> = { [K in keyof P]: P[K] extends { readonly required: true } ? K : never }[keyof P]

/** One paged endpoint of a type. */
export interface EndpointDef {
  /** The method, which with the collection's namespace names the endpoint (`rental.prices.asOf`). */
  readonly name: "latest" | "asOf" | "history"
  readonly defaultSort: { readonly by: string; readonly order: SortOrder }
  readonly needsAnchor: boolean
  /** `/history` default span. */
  readonly defaultSpanDays?: number
}

/** Where responses say they came from: `meta.next.url` is `origin + prefix + path`. */
export interface RequestOrigin {
  readonly origin: string
  readonly prefix: string
}

/** Parses a base URL such as `http://127.0.0.1:8787` or `https://example.com/market`. */
export const requestOrigin = (baseUrl: string): RequestOrigin => {
  const url = new URL(baseUrl)
  return { origin: url.origin, prefix: url.pathname.replace(/\/+$/, "") }
}

/** One data request as every adapter hands it to the core. */
export interface MarketRequest {
  readonly principal: Principal
  readonly query: QueryInput
  readonly origin: RequestOrigin
}

/** The decoded parameters of one endpoint: the paging, sorting and window ones typed, the type's own by name. */
export type Params = Readonly<Record<string, unknown>> & {
  readonly page_size?: number
  readonly sort_by?: string
  readonly sort_order?: SortOrder
  readonly at?: string
  readonly start?: string
  readonly end?: string
}

/** One query parameter of an endpoint: its name, its schema over the raw text, and whether it is required. */
export interface EndpointParameter {
  readonly name: string
  readonly schema: Schema.Schema.AnyNoContext
  readonly required: boolean
}

/** The query parameters one endpoint of a collection accepts, besides `page_token`. */
export const endpointParameters = (collection: CollectionDef, endpoint: EndpointDef): ReadonlyArray<EndpointParameter> => {
  const optional = (name: string, schema: Schema.Schema.AnyNoContext) => ({ name, schema, required: false })
  return [
    optional("page_size", PageSize),
    optional("sort_by", SortByParam(collection.sortFields)),
    optional("sort_order", SortOrderParam),
    ...Object.entries(collection.params).map(([name, p]) => ({ name, schema: p.schema, required: p.required })),
    ...(endpoint.name === "asOf" ? [{ name: "at", schema: InstantParam, required: true }] : []),
    ...(endpoint.name === "history" ? [optional("start", InstantParam), optional("end", InstantParam)] : [])
  ]
}

/** The query parameters of a Struct of `Schema.optional` fields, in field order. */
export const optionalParameters = (
  fields: Readonly<Record<string, { readonly from: Schema.Schema.AnyNoContext }>>
): ReadonlyArray<EndpointParameter> => Object.entries(fields).map(([name, field]) => ({ name, schema: field.from, required: false }))

/** The decoder of a query of `parameters`: their schemas in one Struct, compiled once, here. */
export const parametersDecoder = (parameters: ReadonlyArray<EndpointParameter>): ParamsDecoder => {
  const fields: Record<string, Schema.Schema.AnyNoContext | Schema.optional<Schema.Schema.AnyNoContext>> = {}
  for (const p of parameters) fields[p.name] = p.required ? p.schema : Schema.optional(p.schema)
  const schema = Schema.Struct(fields)
  return (raw) => decodeParams(schema, raw)
}

/** The decoder of one endpoint's query. */
export const endpointDecoder = (collection: CollectionDef, endpoint: EndpointDef): ParamsDecoder =>
  parametersDecoder(endpointParameters(collection, endpoint))

/** Decodes one endpoint's collected query, refusing what its schema does not accept. */
export type ParamsDecoder = (raw: Record<string, string>) => Either.Either<Params, ValidationFailed>

/** Merges predicates: two `in` lists on one field become their intersection. */
export const mergePredicates = (predicates: ReadonlyArray<Predicate>): ReadonlyArray<Predicate> => {
  const lists = new Map<string, ReadonlyArray<string>>()
  const rest: Array<Predicate> = []
  for (const p of predicates) {
    if (p.op !== "in") rest.push(p)
    else {
      const seen = lists.get(p.field)
      lists.set(p.field, seen === undefined ? [...new Set(p.values)] : seen.filter((v) => p.values.includes(v)))
    }
  }
  return [...[...lists].map(([field, values]): Predicate => ({ op: "in", field, values })), ...rest]
}

/** The predicates of the filters among `params` (a collection's, or another list's) in decoded parameters. */
export const predicatesOf = (params: ParamDefs, decoded: Readonly<Record<string, unknown>>): Array<Predicate> => {
  const out: Array<Predicate> = []
  for (const [name, { filter }] of Object.entries(params)) {
    const v = decoded[name]
    if (v === undefined || filter === undefined) continue
    const field = filter.field ?? name
    switch (filter.kind) {
      case "list": out.push({ op: "in", field, values: v as ReadonlyArray<string> }); break
      case "single": out.push({ op: "eq", field, value: v as string }); break
      case "min": out.push({ op: "gte", field, value: v as number }); break
      case "max": out.push({ op: "lte", field, value: v as number }); break
    }
  }
  return out
}

const anyAbsent = (predicates: ReadonlyArray<Predicate>) => predicates.some((p) => p.op === "in" && p.values.length === 0)

/** The one parameter allowed beside `page_token`; built once, as Schema compiles a parser per schema. */
const PageSizeOnly = Schema.Struct({ page_size: Schema.optional(PageSize) })

/** What the collection engine needs from a data type's service for one request. */
export interface PageRun<Row> {
  readonly collection: CollectionDef
  readonly endpoint: EndpointDef
  /** Parameter decoder of the endpoint, built once by `endpointDecoder`. */
  readonly decode: ParamsDecoder
  readonly request: MarketRequest
  readonly tokens: PageTokens["Type"]
  readonly now: Micros
  /**
   * Extra predicates from parameters the type resolves itself. `version` is the type's data
   * version when the page cache is on, read before: what the type reads to resolve may be kept
   * under it in the page cache (`PageCache.memo`).
   */
  readonly resolve: (params: Params, version: string | undefined) => Effect.Effect<ReadonlyArray<Predicate>, MarketError>
  readonly page: (plan: PagePlan) => Effect.Effect<ReadonlyArray<Row>, StorageError>
  /**
   * The type's data version (its store's `version`), which every write of the type changes: read
   * before a page's rows, it is what a cached page is kept under.
   */
  readonly version: Effect.Effect<string, StorageError>
  readonly cache: PageCache
  /**
   * What of the caller's entitlements `page` itself reads, beyond the plan (an index's holdings,
   * its floor on as-of answers): part of the cache key, so callers share entries exactly when
   * `page` would answer them alike. Absent when `page` reads the plan alone.
   */
  readonly entitled?: (plan: PagePlan) => string
}

const fromEither = <A, E>(e: Either.Either<A, E>): Effect.Effect<A, E> =>
  Either.isRight(e) ? Effect.succeed(e.right) : Effect.fail(e.left)

/**
 * The request a `page_token` carries, and the page size asked beside it: the only parameter
 * allowed there, since the token holds the whole request.
 */
export const continueFromToken = (
  raw: Readonly<Record<string, string>>,
  tokens: PageTokens["Type"],
  principal: string,
  endpointPath: string
): Either.Either<{ readonly state: PageTokenState; readonly pageSize: number | undefined }, ValidationFailed> => {
  const beside = Object.keys(raw).filter((k) => k !== "page_token" && k !== "page_size")
  if (beside.length > 0) {
    return Either.left(validationFailed(beside.map((parameter) => ({
      parameter,
      message: "not allowed beside page_token, which carries the whole request; only page_size may change"
    }))))
  }
  return Either.flatMap(
    decodeParams(PageSizeOnly, raw.page_size === undefined ? {} : { page_size: raw.page_size }),
    ({ page_size }) => Either.map(
      tokens.open(principal, endpointPath, raw.page_token ?? ""),
      (state) => ({ state, pageSize: page_size })
    )
  )
}

/** What a page's `meta` needs besides its rows. */
export interface PageCut {
  readonly pageSize: number
  readonly state: Omit<PageTokenState, "after">
  readonly tokens: PageTokens["Type"]
  readonly principal: string
  /** The path the token is bound to; `meta.next.path` is the origin's prefix and this path. */
  readonly endpointPath: string
  readonly origin: RequestOrigin
}

/** The `pageSize + 1` rows storage returned cut to one page, and the keyset position after its last row when there are more. */
export const pageRows = <Row extends Readonly<Record<string, unknown>>>(
  rows: ReadonlyArray<Row>,
  pageSize: number,
  sortBy: string,
  tieBreaker: string
): { readonly data: ReadonlyArray<Row>; readonly last: Position | undefined } => {
  if (rows.length <= pageSize) return { data: rows, last: undefined }
  const data = rows.slice(0, pageSize)
  const last = data[data.length - 1]!
  return { data, last: { value: sortValue(last, sortBy), tie: last[tieBreaker] as string } }
}

/**
 * A page's `meta`: `returned` rows, and when `last` says there are more, a token for the next
 * page positioned after it, signed for the caller.
 */
export const pageMeta = (
  cut: PageCut,
  returned: number,
  last: Position | undefined
): { -readonly [K in keyof PageMeta]: PageMeta[K] } => {
  const { pageSize, state } = cut
  let next: PageMeta["next"] = null
  if (last !== undefined) {
    const token = cut.tokens.sign(cut.principal, cut.endpointPath, {
      scope: state.scope, predicates: state.predicates, sort: state.sort, clamped: state.clamped, after: last
    })
    const path = cut.origin.prefix + cut.endpointPath
    const size = String(pageSize)
    next = {
      url: `${cut.origin.origin}${path}?page_token=${token}&page_size=${size}`,
      path,
      query_params: { page_token: token, page_size: size }
    }
  }
  return { page_size: pageSize, returned, has_more: last !== undefined, next, sort: { by: state.sort.by, order: state.sort.order } }
}

/**
 * Cuts the `pageSize + 1` rows storage returned to one page and builds `meta`, with a signed
 * token for the next page positioned after the last row.
 */
export const cutPage = <Row extends Readonly<Record<string, unknown>>>(
  rows: ReadonlyArray<Row>,
  cut: PageCut & { readonly tieBreaker: string }
): { readonly data: ReadonlyArray<Row>; readonly meta: { -readonly [K in keyof PageMeta]: PageMeta[K] } } => {
  const { data, last } = pageRows(rows, cut.pageSize, cut.state.sort.by, cut.tieBreaker)
  return { data, meta: pageMeta(cut, data.length, last) }
}

/** One page's rows as read (or found cached): how many, where the next page starts, and the page around a `meta`. */
interface PageRead<Row> {
  readonly returned: number
  readonly last: Position | undefined
  readonly page: (meta: PageMeta) => Page<Row>
}

/**
 * Whether a plan's scope was resolved from the clock (a default window ending now, an `at` in
 * the future): such a page is asked once, so it is read and not cached.
 */
const resolvedFromNow = (scope: Scope, now: Micros): boolean => {
  const nowText = formatInstant(now)
  return scope._tag === "asOf" ? scope.at === nowText : scope._tag === "window" && scope.end === nowText
}

/**
 * The rows of a plan: from the page cache when it holds them at `version`, the type's version
 * read before them (undefined: the cache is off), else from storage (and then cached, serialised
 * once). An entry is so never older than the version it is kept under, and a write, which changes
 * the version in the step that changes the rows, retires every entry of its type.
 */
const readPage = <Row extends Readonly<Record<string, unknown>>>(
  run: PageRun<Row>,
  plan: PagePlan,
  endpointPath: string,
  version: string | undefined
): Effect.Effect<PageRead<Row>, MarketError> =>
  Effect.gen(function* () {
    const pageSize = plan.limit - 1
    const cut = (rows: ReadonlyArray<Row>) => pageRows(rows, pageSize, plan.sort.by, run.collection.tieBreaker)
    if (anyAbsent(plan.predicates)) return { returned: 0, last: undefined, page: (meta) => ({ data: [], meta }) }
    if (version === undefined || resolvedFromNow(plan.scope, run.now)) {
      const { data, last } = cut(yield* Effect.mapError(run.page(plan), unavailable))
      // Its body is spliced as a cached page's is (when one is asked for: a direct call reads the
      // rows), so its answer's entity tag is the same whichever way it came.
      return { returned: data.length, last, page: (meta) => withSerialisedData({ data, meta }) }
    }
    const key = `${endpointPath}\n${run.entitled?.(plan) ?? ""}\n${JSON.stringify(plan)}`
    const hit = run.cache.get(key, version)
    if (hit !== undefined) return { returned: hit.returned, last: hit.last, page: (meta) => pageFromBytes<Row>(hit.data, meta) }
    const { data, last } = cut(yield* Effect.mapError(run.page(plan), unavailable))
    const bytes = rowsBytes(data)
    run.cache.set(key, { version, data: bytes, returned: data.length, last })
    return { returned: data.length, last, page: (meta) => withSerialisedData({ data, meta }, bytes) }
  })

/** A request decoded and checked: what to read, in which order, and how many rows a page holds. */
export interface PlannedQuery {
  readonly state: Omit<PageTokenState, "after"> & { readonly after: PageTokenState["after"] | undefined }
  /** The `page_size` asked for, if any. */
  readonly pageSize: number | undefined
  /** The endpoint's path (`/v2/gpu/rental/prices/history`), which page tokens are bound to. */
  readonly endpointPath: string
  /** The data version the plan was made at, when one was read. */
  readonly version: string | undefined
}

type PlanRun = Pick<PageRun<never>, "collection" | "endpoint" | "decode" | "request" | "tokens" | "now" | "resolve">

/** What a request's first checks leave: the caller's history floor, its raw query, its endpoint's path. */
interface CheckedRequest {
  readonly floor: Micros | null
  readonly raw: Readonly<Record<string, string>>
  readonly endpointPath: string
}

/** The grant, the history floor and the query's shape: plain checks, before anything is read. */
const checkRequest = (run: PlanRun): Either.Either<CheckedRequest, MarketError> => {
  const { collection, endpoint, request, now } = run
  const principal = request.principal
  const granted = requireGrant(principal, collection.dataType)
  if (Either.isLeft(granted)) return Either.left(granted.left)
  const floor = endpoint.name === "latest" ? Either.right(null) : requireHistory(principal, collection.dataType, now)
  if (Either.isLeft(floor)) return Either.left(floor.left)
  const raw = collectQuery(request.query)
  if (Either.isLeft(raw)) return Either.left(raw.left)
  return Either.right({ floor: floor.right, raw: raw.right, endpointPath: readEndpoint(`${collection.service}.${endpoint.name}`).path })
}

/** A checked request planned: continued from its page token (against the floor today), or decoded and resolved at `version`. */
const planChecked = (run: PlanRun, checked: CheckedRequest, version: string | undefined): Effect.Effect<PlannedQuery, MarketError> =>
  Effect.gen(function* () {
    const { collection, endpoint, request, now } = run
    const { floor, raw, endpointPath } = checked
    if (raw.page_token !== undefined) {
      const continued = yield* fromEither(continueFromToken(raw, run.tokens, request.principal.id, endpointPath))
      return { state: yield* fromEither(reapplyFloor(continued.state, floor)), pageSize: continued.pageSize, endpointPath, version }
    }
    const params = yield* fromEither(run.decode(raw))
    if (endpoint.needsAnchor && !collection.anchors.some((a) => params[a] !== undefined)) {
      return yield* Effect.fail(new MissingAnchor({
        detail: `this query needs an anchor: at least one of ${collection.anchors.join(", ")}`,
        anchors: collection.anchors
      }))
    }
    const extra = yield* run.resolve(params, version)
    const predicates = mergePredicates([...predicatesOf(collection.params, params), ...extra])
    let scope: Scope = { _tag: "latest" }
    let clamped = false
    if (endpoint.name === "asOf") {
      scope = { _tag: "asOf", at: formatInstant(yield* fromEither(resolveAt(params.at!, now, floor))) }
    } else if (endpoint.name === "history") {
      const w = yield* fromEither(resolveWindow(params, endpoint.defaultSpanDays ?? 30, now, floor))
      scope = { _tag: "window", start: formatInstant(w.start), end: formatInstant(w.end) }
      clamped = w.clamped
    }
    const sort = { by: params.sort_by ?? endpoint.defaultSort.by, order: params.sort_order ?? endpoint.defaultSort.order }
    return { state: { scope, predicates, sort, clamped, after: undefined }, pageSize: params.page_size, endpointPath, version }
  })

/**
 * Validation, entitlements and the plan of one request (its parameters, or the request a
 * `page_token` carries, checked against the caller's floor today): the one way every read of a
 * collection, a page or an export, turns a query into what storage executes. `readVersion` reads
 * the type's data version, or undefined where nothing is kept under it (see `PageRun.resolve`),
 * once the request is known to be well formed and before anything the answer is made of.
 */
export const planQuery = (run: PlanRun, readVersion: Effect.Effect<string | undefined, MarketError>): Effect.Effect<PlannedQuery, MarketError> =>
  Effect.flatMap(fromEither(checkRequest(run)), (checked) => Effect.flatMap(readVersion, (version) => planChecked(run, checked, version)))

/** Whether a plan's predicates select nothing (a list filter left empty by an intersection): storage is not asked. */
export const selectsNothing = anyAbsent

/** Runs one page request end to end: validation, entitlements, plan, storage, envelope. */
export const runPage = <Row extends Readonly<Record<string, unknown>>>(
  run: PageRun<Row>
): Effect.Effect<Page<Row>, MarketError> =>
  // The checks before the cache are plain functions and one read, run as flat steps: a `/latest`
  // page the cache answers goes no further, and a generator here cost it more than the checks.
  Effect.suspend(() => {
    const checked = checkRequest(run)
    if (Either.isLeft(checked)) return Effect.fail(checked.left)
    if (!run.cache.enabled) return readAndAnswer(run, checked.right, undefined, undefined)
    // Read once, before anything the answer is made of (a search's resolution, the rows).
    return Effect.flatMap(Effect.mapError(run.version, unavailable), (version) => {
      // A `/latest` page moves with nothing but the data: the same request of a caller with the
      // same entitlements, whose links lead to the same origin, is answered with the same page at
      // one version, found before its query is decoded and planned.
      if (run.endpoint.name !== "latest") return readAndAnswer(run, checked.right, version, undefined)
      const answer = { key: answerKeyOf(run, checked.right.endpointPath, checked.right.raw), version }
      const hit = run.cache.answer<Row>(answer.key, answer.version)
      return hit !== undefined ? Effect.succeed(hit) : readAndAnswer(run, checked.right, version, answer)
    })
  })

/**
 * `runPage` past the checks and the cache: the query planned, the page read and its envelope
 * made; a `/latest` page kept as the `answer` it was not.
 */
const readAndAnswer = <Row extends Readonly<Record<string, unknown>>>(
  run: PageRun<Row>,
  checked: CheckedRequest,
  version: string | undefined,
  answer: { readonly key: string; readonly version: string } | undefined
): Effect.Effect<Page<Row>, MarketError> =>
  Effect.gen(function* () {
    const { collection, request, now } = run
    const principal = request.principal
    const { state, endpointPath, ...planned } = yield* planChecked(run, checked, version)
    const pageSize = planned.pageSize ?? DEFAULT_PAGE_SIZE
    const read = yield* readPage(run, {
      scope: state.scope, predicates: state.predicates, sort: state.sort, after: state.after, limit: pageSize + 1
    }, endpointPath, version)
    const meta = pageMeta({ pageSize, state, tokens: run.tokens, principal: principal.id, endpointPath, origin: request.origin }, read.returned, read.last)
    if (state.scope._tag === "window") {
      meta.window = {
        start: state.scope.start,
        end: state.scope.end,
        clamped: state.clamped,
        history_starts_at: reportedHistoryStart(principal, collection.dataType, now)
      }
    } else if (state.scope._tag === "asOf") meta.as_of = state.scope.at
    const page = read.page(meta)
    if (answer !== undefined) run.cache.keepAnswer(answer.key, answer.version, page)
    return page
  })

/**
 * The key of a whole `/latest` page (`PageCache.answer`): the endpoint; the caller's entitlement
 * scope the page follows from (who they are, which the next-page token is signed for, their grant
 * of the type and the indices they hold); the origin and prefix of its links; the query as sent,
 * its parameters in order of name.
 */
const answerKeyOf = <Row extends Readonly<Record<string, unknown>>>(
  run: PageRun<Row>,
  endpointPath: string,
  raw: Readonly<Record<string, string>>
): string => {
  const { principal, origin } = run.request
  const scope = JSON.stringify([principal.id, principal.grants[run.collection.dataType], principal.indices])
  const query = JSON.stringify(Object.keys(raw).sort().map((k) => [k, raw[k]]))
  return `answer\n${endpointPath}\n${scope}\n${origin.origin}${origin.prefix}\n${query}`
}

/**
 * A token's request checked against the caller's floor today: the floor may have moved since
 * page 1 (a rolling grant) or the grant may have changed, and a token never reads below it.
 */
export const reapplyFloor = (state: PageTokenState, floor: Micros | null) => {
  if (floor === null) return Either.right(state)
  const floorText = formatInstant(floor)
  const scope = state.scope
  if (scope._tag === "asOf") return scope.at < floorText ? Either.left(beforeFloor(floor)) : Either.right(state)
  if (scope._tag === "window" && scope.start < floorText) {
    const end = scope.end < floorText ? floorText : scope.end
    return Either.right({ ...state, scope: { _tag: "window" as const, start: floorText, end }, clamped: true })
  }
  return Either.right(state)
}
