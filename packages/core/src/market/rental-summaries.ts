import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { reportedHistoryStart, requireGrant, requireHistory } from "../auth/entitlements.js"
import { historyFloor } from "../auth/history.js"
import { type InsufficientEntitlement, type MarketError, type ValidationFailed, validationFailed } from "../errors.js"
import {
  continueFromToken, type CollectionDef, type EndpointParameter, type MarketRequest, mergePredicates, pageMeta,
  type Params, parametersDecoder, predicatesOf, reapplyFloor
} from "../query/collection.js"
import type { PageTokens } from "../query/page-token.js"
import { collectQuery, CommaList, DEFAULT_PAGE_SIZE, InstantParam, PageSize, withMessage } from "../query/params.js"
import { formatInstant, MICROS_PER_DAY, type Micros, parseDateTime } from "../query/time.js"
import { resolveAt, resolveWindow } from "../query/window.js"
import type { Page, PageMeta } from "../schema/envelope.js"
import type { RentalPrice } from "../schema/rental-price.js"
import type { PriceChange, RentalPriceSummary, RentalPriceSummaryPoint } from "../schema/rental-summary.js"
import type { RentalPriceStore } from "../storage/contract.js"
import type { Position, Predicate, Scope } from "../storage/plan.js"
import { cmp } from "../storage/rules.js"
import { LiveOffers, OfferTally, type OfferStatistics, spotDiscountPct } from "./price-statistics.js"
import { eachRentalRow } from "./row-walk.js"
import { type PageCache, pageFromBytes, rowsBytes, withSerialisedData } from "./page-cache.js"
import { nowMicros, unavailable } from "./storage.js"
import { readEndpoint } from "../adapters/endpoints.js"

/**
 * Rental price summaries: the market of a query (the `/latest` filters) grouped by GPU and
 * optionally by vendor, region and contract type, now or as of an instant (`/summary`), and the
 * same statistics as a series of instants (`/summary/history`). Both read the matching rows
 * through the store's pages, as `/latest` and `/as-of` would, and compute the statistics once,
 * here, so every backend answers alike.
 */

/** The keys a summary may group by besides the GPU, in the order rows are sorted by them. */
export const SUMMARY_GROUPS = ["vendor", "region", "contract_type"] as const
/** One key a summary may group by besides the GPU. */
export type SummaryGroup = (typeof SUMMARY_GROUPS)[number]

/** The intervals of a summary series. */
export const SUMMARY_INTERVALS = { "1h": 3_600_000_000, "1d": MICROS_PER_DAY, "1w": 7 * MICROS_PER_DAY } as const
/** One interval of a summary series. */
export type SummaryInterval = keyof typeof SUMMARY_INTERVALS

/** Most points one series of `/summary/history` may hold (a window over an interval). */
export const MAX_SUMMARY_POINTS = 1000

/** The horizons of a summary's `change`, in days. */
const HORIZONS = [["1d", 1], ["7d", 7], ["30d", 30]] as const

/** Weeks start on Monday 00:00 UTC: 1970-01-05, four days after the epoch. */
const WEEK_ORIGIN = 4 * MICROS_PER_DAY

const GroupBy = CommaList(
  Schema.compose(Schema.String, Schema.Literal(...SUMMARY_GROUPS)),
  "group keys among vendor, region, contract_type",
  SUMMARY_GROUPS.length
)
const Interval = Schema.Literal("1h", "1d", "1w").pipe(Schema.annotations(withMessage("expected 1h, 1d or 1w")))

const optional = (name: string, schema: Schema.Schema.AnyNoContext): EndpointParameter => ({ name, schema, required: false })
const filters = (collection: CollectionDef): ReadonlyArray<EndpointParameter> =>
  Object.entries(collection.params).map(([name, p]) => ({ name, schema: p.schema, required: p.required }))

/** The query parameters of `/summary`, besides `page_token`. */
export const summaryParameters = (collection: CollectionDef): ReadonlyArray<EndpointParameter> => [
  optional("page_size", PageSize), ...filters(collection), optional("group_by", GroupBy), optional("as_of", InstantParam)
]

/** The query parameters of `/summary/history`, besides `page_token`. */
export const summaryHistoryParameters = (collection: CollectionDef): ReadonlyArray<EndpointParameter> => [
  optional("page_size", PageSize), ...filters(collection), optional("group_by", GroupBy), optional("interval", Interval),
  optional("start", InstantParam), optional("end", InstantParam)
]

/** Where a summary's rows come from: the store, the page tokens, and the predicates the type resolves itself (`gpu_search`). */
export interface SummarySource {
  readonly collection: CollectionDef
  readonly store: RentalPriceStore["Type"]
  readonly tokens: PageTokens["Type"]
  readonly resolve: (params: Params, version: string | undefined) => Effect.Effect<ReadonlyArray<Predicate>, MarketError>
  /** The market's page cache, which keeps answers of past instants. */
  readonly cache: PageCache
}

/** One request as decoded (page 1) or carried by its page token (later pages). */
interface Asked {
  readonly scope: Scope
  readonly predicates: ReadonlyArray<Predicate>
  readonly groupBy: ReadonlyArray<SummaryGroup>
  readonly interval: SummaryInterval
  readonly clamped: boolean
  readonly pageSize: number
  /** The key of the last row of the page before. */
  readonly after: ReadonlyArray<string> | undefined
}

/** A group: the GPU, then the values of the grouped keys. */
type GroupKey = ReadonlyArray<string>

const compareKeys = (a: GroupKey, b: GroupKey): number => {
  for (let i = 0; i < a.length; i++) {
    const c = cmp(a[i]!, b[i]!)
    if (c !== 0) return c
  }
  return 0
}

/** The key of a row's group: its GPU, then the grouped keys in their order. */
const keyOfRow = (row: RentalPrice, groupBy: ReadonlyArray<SummaryGroup>): GroupKey => [row.gpu_canonical_name, ...groupBy.map((g) => row[g])]

/** Versions of rental rows by group, the groups in key order. */
const groupRows = (rows: ReadonlyArray<RentalPrice>, groupBy: ReadonlyArray<SummaryGroup>) => {
  const groups = new Map<string, { readonly key: GroupKey; readonly rows: Array<RentalPrice> }>()
  for (const row of rows) {
    const key = keyOfRow(row, groupBy)
    const id = key.join("\u0000")
    const group = groups.get(id)
    if (group === undefined) groups.set(id, { key, rows: [row] })
    else group.rows.push(row)
  }
  return [...groups.values()].sort((a, b) => compareKeys(a.key, b.key))
}

/** The group key fields of a row: the GPU, then each grouped key. */
const keyFields = (key: GroupKey, groupBy: ReadonlyArray<SummaryGroup>) => {
  const fields: { gpu_canonical_name: string; vendor?: string; region?: string; contract_type?: string } = { gpu_canonical_name: key[0]! }
  groupBy.forEach((g, i) => {
    fields[g] = key[i + 1]!
  })
  return fields
}

const seriesFields = (s: OfferStatistics) => ({
  offers: s.offers, vendors: s.vendors, price_min: s.price_min, price_p10: s.price_p10, price_median: s.price_median,
  price_p90: s.price_p90, price_max: s.price_max
})

const changeOf = (now: OfferStatistics, then: OfferStatistics | undefined): PriceChange =>
  then === undefined ? null : {
    price_min: now.price_min - then.price_min,
    price_median: now.price_median - then.price_median,
    price_min_pct: ((now.price_min - then.price_min) / then.price_min) * 100,
    price_median_pct: ((now.price_median - then.price_median) / then.price_median) * 100
  }

/** `as_of` read by the as-of rules, its issues named after it rather than `at`. */
const renameAt = (e: ValidationFailed | InsufficientEntitlement) =>
  e._tag === "ValidationFailed" ? validationFailed(e.errors.map((i) => (i.parameter === "at" ? { ...i, parameter: "as_of" } : i))) : e

/** The sort a summary's rows follow, as `meta.sort.by` names it and its page token carries it. */
const sortOf = (groupBy: ReadonlyArray<SummaryGroup>, series: boolean) =>
  ({ by: ["gpu_canonical_name", ...groupBy, ...(series ? ["at"] : [])].join(","), order: "asc" as const })

/** The instants of a series: those on the interval's boundaries (UTC hours, days, Mondays) inside `[start, end)`. */
export const seriesInstants = (start: Micros, end: Micros, interval: SummaryInterval): ReadonlyArray<Micros> => {
  const step = SUMMARY_INTERVALS[interval]
  const origin = interval === "1w" ? WEEK_ORIGIN : 0
  const points: Array<Micros> = []
  for (let t = Math.ceil((start - origin) / step) * step + origin; t < end; t += step) points.push(t)
  return points
}

/** How many instants `seriesInstants` would return, without making them. */
const instantCount = (start: Micros, end: Micros, interval: SummaryInterval): number => {
  const step = SUMMARY_INTERVALS[interval]
  const origin = interval === "1w" ? WEEK_ORIGIN : 0
  const first = Math.ceil((start - origin) / step) * step + origin
  return first >= end ? 0 : Math.floor((end - 1 - first) / step) + 1
}

/** `/summary` and `/summary/history` of the rental prices, over `source`. */
export const rentalSummaries = (source: SummarySource) => {
  const { collection, store, tokens, cache } = source
  const dataType = collection.dataType
  const summaryPath = readEndpoint("rental.prices.summary").path
  const historyPath = readEndpoint("rental.prices.summaryHistory").path
  const decodeSummary = parametersDecoder(summaryParameters(collection))
  const decodeHistory = parametersDecoder(summaryHistoryParameters(collection))

  /**
   * The request of one page: decoded with its filters resolved (page 1), or as its page token
   * carries it, checked against the caller's history floor today. The token's sort names the
   * grouping; its position is the last row's key, and a series' interval rides as its tie.
   */
  const asked = (
    request: MarketRequest,
    path: string,
    floor: Micros | null,
    first: (params: Params) => Either.Either<{ readonly scope: Scope; readonly clamped: boolean }, MarketError>
  ) =>
    Effect.gen(function* () {
      const raw = yield* collectQuery(request.query)
      if (raw.page_token !== undefined) {
        const continued = yield* continueFromToken(raw, tokens, request.principal.id, path)
        const state = yield* reapplyFloor(continued.state, floor)
        const names = state.sort.by.split(",")
        return {
          scope: state.scope,
          predicates: state.predicates,
          groupBy: SUMMARY_GROUPS.filter((g) => names.includes(g)),
          interval: state.after.tie === "" ? "1d" : state.after.tie as SummaryInterval,
          clamped: state.clamped,
          pageSize: continued.pageSize ?? DEFAULT_PAGE_SIZE,
          after: JSON.parse(String(state.after.value)) as GroupKey
        } satisfies Asked
      }
      const decode = path === summaryPath ? decodeSummary : decodeHistory
      const params = yield* decode(raw)
      const extra = yield* source.resolve(params, undefined)
      const { scope, clamped } = yield* first(params)
      const groupBy = (params.group_by ?? []) as ReadonlyArray<SummaryGroup>
      return {
        scope,
        predicates: mergePredicates([...predicatesOf(collection.params, params), ...extra]),
        groupBy: SUMMARY_GROUPS.filter((g) => groupBy.includes(g)),
        interval: (params.interval ?? "1d") as SummaryInterval,
        clamped,
        pageSize: params.page_size ?? DEFAULT_PAGE_SIZE,
        after: undefined
      } satisfies Asked
    })

  /**
   * One page of the answer `compute` makes (its rows in key order), after the asked position,
   * with its `meta` (`decorate` adds the scope's part). An answer of a past instant or window
   * (none resolved from now) is kept in the market's page cache under the rental data version,
   * read first, and the caller's `entitled` state (what of the floor shaped it); an answer of the
   * current market holds now, so it is computed every time.
   */
  const answered = <Row extends object>(
    request: MarketRequest,
    path: string,
    ask: Asked,
    series: boolean,
    now: Micros,
    entitled: string,
    decorate: (meta: { -readonly [K in keyof PageMeta]: PageMeta[K] }) => void,
    compute: Effect.Effect<ReadonlyArray<{ readonly key: GroupKey; readonly row: Row }>, MarketError>
  ) =>
    Effect.gen(function* () {
      const metaOf = (returned: number, last: Position | undefined) => {
        const state = { scope: ask.scope, predicates: ask.predicates, sort: sortOf(ask.groupBy, series), clamped: ask.clamped }
        const meta = pageMeta({ pageSize: ask.pageSize, state, tokens, principal: request.principal.id, endpointPath: path, origin: request.origin }, returned, last)
        decorate(meta)
        return meta
      }
      const nowText = formatInstant(now)
      const scope = ask.scope
      const past = (scope._tag === "asOf" && scope.at !== nowText) || (scope._tag === "window" && scope.end !== nowText)
      const version = cache.enabled && past ? yield* Effect.mapError(store.version, unavailable) : undefined
      const key = `${path}\n${entitled}\n${JSON.stringify([scope, ask.predicates, ask.groupBy, ask.interval, ask.after, ask.pageSize])}`
      const hit = version === undefined ? undefined : cache.get(key, version)
      if (hit !== undefined) return pageFromBytes<Row>(hit.data, metaOf(hit.returned, hit.last))
      const rows = yield* compute
      const after = ask.after
      const from = after === undefined ? 0 : rows.findIndex((r) => compareKeys(r.key, after) > 0)
      const rest = from < 0 ? [] : rows.slice(from)
      const data = rest.slice(0, ask.pageSize).map((r) => r.row)
      const last = rest.length > ask.pageSize ? { value: JSON.stringify(rest[ask.pageSize - 1]!.key), tie: series ? ask.interval : "" } : undefined
      const page: Page<Row> = { data, meta: metaOf(data.length, last) }
      if (version === undefined) return page
      const bytes = rowsBytes(data)
      cache.set(key, { version, data: bytes, returned: data.length, last })
      return withSerialisedData(page, bytes)
    })

  /** The statistics of each group of the market of `scope`, in key order, tallied as the rows are read. */
  const marketAt = (scope: Scope, ask: Asked) => {
    const groups = new Map<string, { readonly key: GroupKey; readonly tally: OfferTally }>()
    const walk = eachRentalRow(store, scope, ask.predicates, (row) => {
      const key = keyOfRow(row, ask.groupBy)
      const id = key.join("\u0000")
      let group = groups.get(id)
      if (group === undefined) groups.set(id, group = { key, tally: new OfferTally() })
      group.tally.add(row)
    })
    return Effect.map(walk, () =>
      [...groups.values()].sort((a, b) => compareKeys(a.key, b.key)).map((g) => ({ key: g.key, statistics: g.tally.statistics() })))
  }

  /** Every row of `scope` matching `predicates`. */
  const rowsOf = (scope: Scope, predicates: ReadonlyArray<Predicate>) => {
    const rows: Array<RentalPrice> = []
    return Effect.as(eachRentalRow(store, scope, predicates, (row) => rows.push(row)), rows)
  }

  /**
   * The statistics of each group at each of `instants` (ascending), each the market as `/as-of`
   * answers it then (undefined where the group had no offer), the groups in key order. The rows
   * in force at any of them are read once (those in force at the first, and those that began
   * after it up to the last), then swept through the instants per group, rather than one as-of
   * read per instant.
   */
  const marketsAt = (instants: ReadonlyArray<string>, ask: Asked) =>
    Effect.gen(function* () {
      if (instants.length === 0) return []
      const first = instants[0]!
      const last = instants[instants.length - 1]!
      const inForce = yield* rowsOf({ _tag: "asOf", at: first }, ask.predicates)
      const began = last === first ? [] : yield* rowsOf({ _tag: "window", start: first, end: formatInstant(parseDateTime(last)! + 1) }, ask.predicates)
      const seen = new Set(inForce.map((r) => r.product_key))
      const versions = [...inForce, ...began.filter((r) => !seen.has(r.product_key))]
      return groupRows(versions, ask.groupBy).map((group) => {
        const live = new LiveOffers(group.rows)
        const points = instants.map((at) => {
          live.moveTo(at)
          return live.statistics()
        })
        return { key: group.key, points }
      })
    })

  return {
    /**
     * The market now (or as of `as_of`) of the `/latest` filters, one row per group, with the
     * change against 1, 7 and 30 days before when the token reads history.
     */
    summary: Effect.fn("RentalPrices.summary")(function* (request: MarketRequest) {
      const now = yield* nowMicros
      const grant = yield* requireGrant(request.principal, dataType)
      // undefined: the token reads current prices only, and gets no `change`.
      const floor = historyFloor(grant.history, now)
      const ask = yield* asked(request, summaryPath, floor ?? null, (params) =>
        params.as_of === undefined
          ? Either.right({ scope: { _tag: "latest" }, clamped: false })
          : Either.flatMap(requireHistory(request.principal, dataType, now), (historyFloor) =>
            Either.map(
              Either.mapLeft(resolveAt(params.as_of as string, now, historyFloor), renameAt),
              (at) => ({ scope: { _tag: "asOf", at: formatInstant(at) }, clamped: false })
            )))
      const asOfAt = ask.scope._tag === "asOf" ? ask.scope.at : undefined
      // The floor decides which changes are null, and whether there are any.
      const entitled = floor === undefined ? "current" : String(floor)
      return yield* answered(request, summaryPath, ask, false, now, entitled, (meta) => {
        if (asOfAt !== undefined) meta.as_of = asOfAt
      }, Effect.gen(function* () {
        const asOf = ask.scope._tag === "asOf" ? parseDateTime(ask.scope.at)! : now
        const current = yield* marketAt(ask.scope, ask)
        const before = floor === undefined ? undefined : yield* Effect.gen(function* () {
          const thens = HORIZONS.map(([, days]) => asOf - days * MICROS_PER_DAY)
          // The markets the floor allows, in one sweep; a horizon before the floor compares with nothing.
          const instants = thens.filter((then) => floor === null || then >= floor).sort((a, b) => a - b)
          const markets = yield* marketsAt(instants.map(formatInstant), ask)
          return thens.map((then) => {
            const i = instants.indexOf(then)
            return new Map(i < 0 ? [] : markets.flatMap((g) => {
              const s = g.points[i]
              return s === undefined ? [] : [[g.key.join("\u0000"), s] as const]
            }))
          })
        })
        const asOfText = formatInstant(asOf)
        const rows = current.map(({ key, statistics: s }) => {
          const id = key.join("\u0000")
          const row: RentalPriceSummary = {
            ...keyFields(key, ask.groupBy),
            as_of: asOfText,
            ...seriesFields(s),
            cheapest: s.cheapest,
            spot_min: s.spot_min,
            ondemand_min: s.ondemand_min,
            spot_discount_pct: spotDiscountPct(s.spot_min, s.ondemand_min),
            ...(before === undefined ? {} : {
              change: {
                "1d": changeOf(s, before[0]!.get(id)),
                "7d": changeOf(s, before[1]!.get(id)),
                "30d": changeOf(s, before[2]!.get(id))
              }
            })
          }
          return { key, row }
        })
        return rows
      }))
    }),

    /**
     * The same statistics at each instant of a window on the interval's boundaries, each the
     * market as `/as-of` answers it then, from one sweep of the rows in force at any of them.
     */
    summaryHistory: Effect.fn("RentalPrices.summaryHistory")(function* (request: MarketRequest) {
      const now = yield* nowMicros
      const floor = yield* requireHistory(request.principal, dataType, now)
      const ask = yield* asked(request, historyPath, floor, (params) =>
        Either.flatMap(resolveWindow(params, 30, now, floor), (w) => {
          const count = instantCount(w.start, w.end, (params.interval ?? "1d") as SummaryInterval)
          return count > MAX_SUMMARY_POINTS
            ? Either.left(validationFailed([{
              parameter: "interval",
              message: `the window holds ${count} instants at this interval, more than ${MAX_SUMMARY_POINTS}; narrow the window or widen the interval`
            }]))
            : Either.right({ scope: { _tag: "window", start: formatInstant(w.start), end: formatInstant(w.end) }, clamped: w.clamped })
        }))
      const window = ask.scope as Extract<Scope, { readonly _tag: "window" }>
      const instants = seriesInstants(parseDateTime(window.start)!, parseDateTime(window.end)!, ask.interval).map(formatInstant)
      const historyStartsAt = reportedHistoryStart(request.principal, dataType, now)
      // The window is already clamped to the floor: the answer depends on nothing else of the caller's.
      return yield* answered(request, historyPath, ask, true, now, "", (meta) => {
        meta.window = { start: window.start, end: window.end, clamped: ask.clamped, history_starts_at: historyStartsAt }
      }, Effect.gen(function* () {
        const rows: Array<{ readonly key: GroupKey; readonly row: RentalPriceSummaryPoint }> = []
        for (const group of yield* marketsAt(instants, ask)) {
          group.points.forEach((s, i) => {
            if (s === undefined) return
            const at = instants[i]!
            rows.push({
              key: [...group.key, at],
              row: { at, ...keyFields(group.key, ask.groupBy), ...seriesFields(s), spot_min: s.spot_min, ondemand_min: s.ondemand_min }
            })
          })
        }
        return rows
      }))
    })
  } as const
}
