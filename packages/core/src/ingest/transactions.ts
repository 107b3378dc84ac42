import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import type { InvalidRecords, RecordIssue } from "../errors.js"
import { MICROS_PER_DAY, parseDate } from "../query/time.js"
import { type AggregatedTransaction, type BlendAxis, TransactionDeal } from "../schema/transaction.js"
import {
  type Cohort, type Deal, dealPool, type PublishedRow, type SeriesState, type StoredDeal, type TransactionChanges,
  TransactionStore, type TransactionView
} from "../storage/transactions.js"
import { type MarkedWrite, withMark } from "../storage/marks.js"
import { countedIngest, decodeRecords, invalidRecords, markReader, refuseIf, writeFailure } from "./batch.js"
import { boundIssues, IngestBounds } from "./bounds.js"
import { hash32 } from "./key-hash.js"

/**
 * The write path of aggregated transactions. Settled deals are stored privately; what is
 * published are blends of at least two of them. Deals are grouped into cohorts — disjoint sets of
 * two or more deals, formed once and never changed — and every published row is one cohort or
 * two whole cohorts of one series. So every figure of every row, and any sum or difference of
 * rows, is a sum over whole cohorts: no combination of published rows isolates one deal.
 */

/** A thin (two-deal) cohort rolls in its series' previous cohort when that is at most this many days older. */
export const ROLLING_DAYS = 7

/** What identifies a series: every descriptive field of its rows but the date. */
export interface SeriesKey {
  readonly gpu_canonical_name: string
  readonly gpu_model: string
  readonly region_group: string
  readonly blend_region_group: string
  readonly contract_type: string
  readonly tenor_days: number
  readonly blend_tenor_days: number
  readonly blend_axis: BlendAxis
}

/** A series id: the first 128 bits (hex) of SHA-256 over the series key. */
export const seriesId = (k: SeriesKey): string =>
  hash32([
    "gpu_rental_transactions", k.gpu_canonical_name, k.gpu_model, k.region_group, k.blend_region_group, k.contract_type,
    k.tenor_days, k.blend_tenor_days, k.blend_axis
  ])

/** `row_key`: the series id and the row's 1-based position in its series' publication order. */
export const transactionRowKey = (series: string, seq: number): string => `${series}-${String(seq).padStart(8, "0")}`

/** A cohort formed from pending deals, before it is published. */
export interface FormedCohort {
  /** The cohort id: the first 128 bits (hex) of SHA-256 over its deal ids. Private. */
  readonly cohort: string
  readonly key: SeriesKey
  readonly series: string
  readonly date: string
  /** Ordered by `deal_id`. */
  readonly deals: ReadonlyArray<StoredDeal>
}

const cmp = (a: string | number, b: string | number): number => (a < b ? -1 : a > b ? 1 : 0)
const byId = (a: Deal, b: Deal) => cmp(a.deal_id, b.deal_id)

const groupBy = <A>(items: Iterable<A>, key: (a: A) => string): Array<Array<A>> => {
  const groups = new Map<string, Array<A>>()
  for (const item of items) {
    const k = key(item)
    const g = groups.get(k)
    if (g === undefined) groups.set(k, [item])
    else g.push(item)
  }
  return [...groups].sort(([a], [b]) => cmp(a, b)).map(([, g]) => g)
}

const formed = (deals: ReadonlyArray<StoredDeal>, axis: BlendAxis): FormedCohort => {
  const [a, b] = deals as readonly [StoredDeal, StoredDeal]
  const key: SeriesKey = {
    gpu_canonical_name: a.gpu_canonical_name,
    gpu_model: a.gpu_model,
    region_group: a.region_group,
    blend_region_group: axis === "region_group" ? b.region_group : a.region_group,
    contract_type: a.contract_type,
    tenor_days: a.tenor_days,
    blend_tenor_days: axis === "tenor" ? b.tenor_days : a.tenor_days,
    blend_axis: axis
  }
  const sorted = [...deals].sort(byId)
  return { cohort: hash32(["cohort", ...sorted.map((d) => d.deal_id)]), key, series: seriesId(key), date: a.settlement_date, deals: sorted }
}

/**
 * Forms cohorts from pending deals, pool by pool (one GPU, model, contract type and day), in
 * three steps. 1: every tenor and region group with two or more deals makes one cohort of all
 * of them (axis `none`). 2: within each region group, the deals left, ordered by tenor, pair up
 * (axis `tenor`; an odd one out, the longest tenor, goes on). 3: within each tenor, the deals
 * left, ordered by region group, pair up (axis `region_group`). What is then left waits for a
 * partner: no two of them share a region group or a tenor, so the steps are complete and a
 * second run forms nothing.
 */
export const formCohorts = (pending: ReadonlyArray<StoredDeal>): Array<FormedCohort> => {
  const out: Array<FormedCohort> = []
  for (const pool of groupBy(pending, dealPool)) {
    const left: Array<StoredDeal> = []
    for (const cell of groupBy(pool, (d) => JSON.stringify([d.region_group, d.tenor_days]))) {
      if (cell.length >= 2) out.push(formed(cell, "none"))
      else left.push(...cell)
    }
    const last: Array<StoredDeal> = []
    for (const region of groupBy(left, (d) => d.region_group)) {
      region.sort((a, b) => a.tenor_days - b.tenor_days)
      for (let i = 0; i + 1 < region.length; i += 2) out.push(formed([region[i]!, region[i + 1]!], "tenor"))
      if (region.length % 2 === 1) last.push(region[region.length - 1]!)
    }
    for (const tenor of groupBy(last, (d) => String(d.tenor_days))) {
      tenor.sort((a, b) => cmp(a.region_group, b.region_group))
      for (let i = 0; i + 1 < tenor.length; i += 2) out.push(formed([tenor[i]!, tenor[i + 1]!], "region_group"))
    }
  }
  return out
}

const round = (n: number, places: number): number => {
  const r = Math.round(n * 10 ** places) / 10 ** places
  return r === 0 ? 0 : r
}

/** The sums of a formed cohort, added in `deal_id` order. */
const cohortOf = (f: FormedCohort): Cohort => {
  let gpu_count = 0, gpu_hours = 0, price_hours = 0
  let list_hours: number | null = 0
  for (const d of f.deals) {
    gpu_count += d.gpu_count
    gpu_hours += d.gpu_hours
    price_hours += d.price_usd_per_gpu_hour * d.gpu_hours
    list_hours = list_hours === null || d.list_price_usd_per_gpu_hour === null ? null : list_hours + d.list_price_usd_per_gpu_hour * d.gpu_hours
  }
  return {
    cohort: f.cohort,
    series: f.series,
    transaction_date: f.date,
    deals: f.deals.length,
    gpu_count, gpu_hours, price_hours, list_hours
  }
}

/**
 * The published figures of one or more cohorts of a series: price is Σ(price × GPU-hours) /
 * Σ GPU-hours (to 1e-6 USD), totals are sums, and the discount compares the same blend with
 * its list prices (null unless every deal had one).
 */
export const blendRow = (key: SeriesKey, parts: ReadonlyArray<Cohort>, date: string, rowKey: string): AggregatedTransaction => {
  let gpu_count = 0, gpu_hours = 0, price_hours = 0
  let list_hours: number | null = 0
  for (const p of parts) {
    gpu_count += p.gpu_count
    gpu_hours += p.gpu_hours
    price_hours += p.price_hours
    list_hours = list_hours === null || p.list_hours === null ? null : list_hours + p.list_hours
  }
  return {
    gpu_model: key.gpu_model,
    gpu_canonical_name: key.gpu_canonical_name,
    region_group: key.region_group,
    contract_type: key.contract_type,
    tenor_days: key.tenor_days,
    price_usd_per_gpu_hour: round(price_hours / gpu_hours, 6),
    total_gpu_count: gpu_count,
    total_gpu_hours: round(gpu_hours, 6),
    transaction_date: date,
    discount_percentage: list_hours === null ? null : round(100 * (1 - price_hours / list_hours), 4),
    is_rolling: parts.length > 1,
    blend_axis: key.blend_axis,
    blend_tenor_days: key.blend_tenor_days,
    blend_region_group: key.blend_region_group,
    row_key: rowKey
  }
}

const dayNumber = (date: string): number => (parseDate(date) ?? 0) / MICROS_PER_DAY

/** What publishing formed cohorts adds. */
export interface Publication {
  readonly cohorts: ReadonlyArray<Cohort>
  readonly rows: ReadonlyArray<PublishedRow>
  readonly series: TransactionChanges["series"]
}

/**
 * Publishes formed cohorts, each series in order of date then cohort id, one row per cohort. A
 * cohort of three or more deals stands alone. A thin cohort (two deals) rolls: its row also
 * blends the series' previous cohort, when that one is at most `ROLLING_DAYS` older and not
 * newer, and then shares those deals with the row before it (`is_rolling`).
 */
export const publishCohorts = (formedCohorts: ReadonlyArray<FormedCohort>, known: ReadonlyArray<SeriesState>): Publication => {
  const states = new Map(known.map((s) => [s.series, s]))
  const moved = new Set<string>()
  const cohorts: Array<Cohort> = []
  const rows: Array<PublishedRow> = []
  const withCohorts = formedCohorts.map((f) => ({ f, c: cohortOf(f) }))
  withCohorts.sort((a, b) => cmp(a.f.series, b.f.series) || cmp(a.f.date, b.f.date) || cmp(a.c.cohort, b.c.cohort))
  for (const { f, c } of withCohorts) {
    const state = states.get(f.series)
    moved.add(f.series)
    const prev = state?.last
    const rolls = c.deals === 2 && prev !== undefined && prev.transaction_date <= c.transaction_date &&
      dayNumber(c.transaction_date) - dayNumber(prev.transaction_date) <= ROLLING_DAYS
    const parts = rolls ? [prev, c] : [c]
    const seq = (state?.seq ?? 0) + 1
    cohorts.push(c)
    rows.push({ row: blendRow(f.key, parts, c.transaction_date, transactionRowKey(f.series, seq)), cohorts: parts.map((p) => p.cohort) })
    states.set(f.series, { series: f.series, seq, last: c })
  }
  const series = [...moved].map((id) => {
    const s = states.get(id)!
    return { series: id, seq: s.seq, last: s.last.cohort }
  })
  return { cohorts, rows, series }
}

/** One decoded deal and its position in the batch. */
export interface DecodedDeal {
  readonly index: number
  readonly deal: Deal
}

const decodeDeal = Schema.decodeUnknownEither(TransactionDeal, { errors: "all", onExcessProperty: "error" })

/**
 * Validates a batch of deals; every bad record is reported with its index. A discount becomes
 * the list price it implies. A deal id given twice in one batch is refused.
 */
export const decodeDeals = (input: ReadonlyArray<unknown>): Either.Either<ReadonlyArray<DecodedDeal>, InvalidRecords> => {
  const out: Array<DecodedDeal> = []
  const seen = new Set<string>()
  const issues = decodeRecords(input, decodeDeal, (d, index, issues) => {
    const before = issues.length
    if (d.list_price_usd_per_gpu_hour !== null && d.discount_percentage !== null) {
      issues.push({ index, message: "discount_percentage: give list_price_usd_per_gpu_hour or discount_percentage, not both" })
    }
    if (d.gpu_hours > d.gpu_count * d.tenor_days * 24) {
      issues.push({ index, message: "gpu_hours: more than gpu_count × tenor_days × 24" })
    }
    if (seen.has(d.deal_id)) issues.push({ index, message: `deal_id: ${d.deal_id} is given twice in this batch` })
    seen.add(d.deal_id)
    if (issues.length > before) return
    out.push({
      index,
      deal: {
        deal_id: d.deal_id,
        gpu_canonical_name: d.gpu_canonical_name,
        gpu_model: d.gpu_model,
        region_group: d.region_group,
        contract_type: d.contract_type,
        tenor_days: d.tenor_days,
        gpu_count: d.gpu_count,
        gpu_hours: d.gpu_hours,
        price_usd_per_gpu_hour: d.price_usd_per_gpu_hour,
        list_price_usd_per_gpu_hour: d.list_price_usd_per_gpu_hour ??
          (d.discount_percentage === null ? null : d.price_usd_per_gpu_hour / (1 - d.discount_percentage / 100)),
        settlement_date: d.settlement_date
      }
    })
  })
  return issues.length > 0 ? Either.left(invalidRecords(issues)) : Either.right(out)
}

const sameDeal = (a: Deal, b: Deal): boolean =>
  a.gpu_canonical_name === b.gpu_canonical_name && a.gpu_model === b.gpu_model && a.region_group === b.region_group &&
  a.contract_type === b.contract_type && a.tenor_days === b.tenor_days && a.gpu_count === b.gpu_count &&
  a.gpu_hours === b.gpu_hours && a.price_usd_per_gpu_hour === b.price_usd_per_gpu_hour &&
  a.list_price_usd_per_gpu_hour === b.list_price_usd_per_gpu_hour && a.settlement_date === b.settlement_date

/**
 * The change that stores `fresh` deals and publishes the cohorts formed from them and the
 * pending deals of their pools.
 */
const changesOf = (
  fresh: ReadonlyArray<Deal>,
  pending: ReadonlyArray<StoredDeal>,
  formedCohorts: ReadonlyArray<FormedCohort>,
  publication: Publication
): TransactionChanges => {
  const cohortOfDeal = new Map<string, string>()
  for (const f of formedCohorts) for (const d of f.deals) cohortOfDeal.set(d.deal_id, f.cohort)
  return {
    deals: fresh.map((d) => ({ ...d, cohort: cohortOfDeal.get(d.deal_id) ?? null })),
    assign: pending.flatMap((d) => {
      const cohort = cohortOfDeal.get(d.deal_id)
      return cohort === undefined ? [] : [{ deal_id: d.deal_id, cohort }]
    }),
    cohorts: publication.cohorts,
    rows: publication.rows,
    series: publication.series
  }
}

/** What one `record` or `publish` did. */
export const TransactionIngestSummary = Schema.Struct({
  /** Deals in the batch. */
  received: Schema.Number,
  /** Deals stored by this call. */
  recorded: Schema.Number,
  /** Deals already stored with the same terms, skipped. */
  duplicates: Schema.Number,
  /** Deals blended into new cohorts. */
  blended: Schema.Number,
  /** Rows published. */
  published: Schema.Number,
  /** Deals left waiting for a partner in the pools this call touched. */
  pending: Schema.Number
})
export type TransactionIngestSummary = typeof TransactionIngestSummary.Type

/** The write path of aggregated transactions. */
export class TransactionIngest extends Effect.Service<TransactionIngest>()("Market/TransactionIngest", {
  effect: Effect.gen(function* () {
    const store = yield* TransactionStore
    const bounds = yield* IngestBounds

    /**
     * The change that stores `fresh` deals and publishes every blend they and the pending deals
     * of `pools` make, decided on `view`.
     */
    const publishWith = (view: TransactionView, fresh: ReadonlyArray<Deal>, pools: ReadonlySet<string>) => {
      const pending = view.pending.filter((d) => pools.has(dealPool(d)))
      const formedCohorts = formCohorts([...pending, ...fresh.map((d) => ({ ...d, cohort: null }))])
      const known = view.series([...new Set(formedCohorts.map((f) => f.series))])
      const changes = changesOf(fresh, pending, formedCohorts, publishCohorts(formedCohorts, known))
      const blended = changes.cohorts.reduce((n, c) => n + c.deals, 0)
      return { changes, done: { blended, published: changes.rows.length, pending: pending.length + fresh.length - blended } }
    }

    /**
     * Records settled deals as one atomic batch and publishes every blend they make possible.
     * Invalid records refuse the whole batch, as does a deal id already stored with other
     * terms; one stored with the same terms is skipped, so a batch may be delivered again.
     * `options.mark` is written in the same step.
     */
    const record = Effect.fn("TransactionIngest.record")(function* (deals: ReadonlyArray<unknown>, options: MarkedWrite = {}) {
      const decoded = yield* decodeDeals(deals)
      yield* refuseIf(boundIssues(decoded.flatMap(({ index, deal }) => [
        { index, field: "price_usd_per_gpu_hour", value: deal.price_usd_per_gpu_hour },
        { index, field: "list_price_usd_per_gpu_hour", value: deal.list_price_usd_per_gpu_hour }
      ]), bounds.transactions))
      const reads = { deals: decoded.map((d) => d.deal.deal_id), pools: [...new Set(decoded.map((d) => dealPool(d.deal)))] }
      return yield* store.transact(reads, (view) => {
        const stored = new Map(view.deals.map((d) => [d.deal_id, d]))
        const issues: Array<RecordIssue> = []
        const fresh: Array<Deal> = []
        for (const { index, deal } of decoded) {
          const old = stored.get(deal.deal_id)
          if (old === undefined) fresh.push(deal)
          else if (!sameDeal(old, deal)) issues.push({ index, message: `deal_id: ${deal.deal_id} is already recorded with other terms` })
        }
        if (issues.length > 0) return Either.left(invalidRecords(issues))
        const { changes, done } = publishWith(view, fresh, new Set(fresh.map(dealPool)))
        const summary: TransactionIngestSummary = {
          received: decoded.length, recorded: fresh.length, duplicates: decoded.length - fresh.length, ...done
        }
        return Either.right({ changes: { ...changes, ...withMark(options.mark) }, result: summary })
      }).pipe(writeFailure)
    }, countedIngest("transactions"))

    /**
     * Publishes every blend the pending deals can form. `record` already does so, so this
     * publishes nothing new; it exists to re-run publication (after a restore, say) safely.
     */
    const publish = Effect.fn("TransactionIngest.publish")(function* () {
      const pools = yield* writeFailure(store.pendingPools)
      return yield* store.transact({ deals: [], pools }, (view) => {
        const { changes, done } = publishWith(view, [], new Set(pools))
        const summary: TransactionIngestSummary = { received: 0, recorded: 0, duplicates: 0, ...done }
        return Either.right({ changes, result: summary })
      }).pipe(writeFailure)
    })

    /** A progress mark written with a write of this type (`options.mark`). */
    return { record, publish, mark: markReader(store.mark) } as const
  })
}) {}
