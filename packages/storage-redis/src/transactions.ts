import { type AggregatedTransaction, transactionFields } from "@gpu-market/core"
import { StorageError } from "@gpu-market/core"
import {
  type Cohort, cmp, type Decision, dealPool, type Scope, type SeriesState, type StoredDeal, transactionChangeFault, type TransactionChanges,
  type TransactionReads, type TransactionStore, type TransactionSummary, transactionTable, type TransactionView, windowDates
} from "@gpu-market/core/storage"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { Batch, BATCH_ATTEMPTS, untilApplied } from "./batch.js"
import { InvalidPlan } from "./errors.js"
import type { RedisClient } from "./client.js"
import { decode, encode } from "./codec.js"
import { AFTER_VALUE, decodeText, encodeText, encodeValue } from "./lex.js"
import { cachedByVersion, replies, type Versioned } from "./reads.js"
import { readMark } from "./settings.js"
import { makeTable, type TableSpec } from "./table.js"
import { freshVersion, readVersion } from "./data-version.js"
import { logEvents } from "./event-log.js"

/** The dates of the last scope asked about: `inScope` runs per row read, with one scope per page. */
let lastScope: { readonly scope: Scope; readonly dates: ReturnType<typeof windowDates> } | undefined
const datesOf = (scope: Scope) => {
  if (lastScope?.scope !== scope) lastScope = { scope, dates: windowDates(scope) }
  return lastScope.dates
}

/**
 * Published rows as a table: every row indexed per sort field, over all rows and per GPU. A
 * page sorted by date walks only the window's dates; the other sorts walk their index and keep
 * the rows inside the window. `row_key`, the tie-breaker, is a sort of its own, as in SQLite.
 */
export const transactionSpec: TableSpec<AggregatedTransaction> = {
  tag: "transactions",
  tie: transactionTable.tie,
  sortFields: [...transactionTable.sortable, transactionTable.tie],
  subsets: [{ name: "rows", holds: () => true, anchors: transactionTable.anchors, global: true }],
  groups: [],
  subsetsFor: () => ["rows"],
  inScope: (r, scope) => {
    const dates = datesOf(scope)
    return dates !== undefined && r.transaction_date >= dates.from && r.transaction_date < dates.to
  },
  scopeBounds: (scope, sortField) => {
    const dates = datesOf(scope)
    if (sortField !== "transaction_date" || dates === undefined) return {}
    return { lower: { bytes: encodeValue(dates.from), exclusive: false }, upper: { bytes: encodeValue(dates.to), exclusive: true } }
  },
  structures: [transactionFields]
}

/** Thrown by a view's `series` for series not read yet: the attempt reads them and decides again. */
class SeriesNeeded extends Error {}

/** A series as stored: rows published so far and the id of its latest cohort. */
interface StoredSeries {
  readonly seq: number
  readonly last: string
}

/** The members of one GPU and model in `pair-days`: `lex(gpu) ++ lex(model)`, then `lex(date)`. */
const pairPrefix = (gpu: string, model: string) => Buffer.concat([encodeText(gpu), encodeText(model)])

/**
 * The transaction store. Besides the table of published rows it keeps, under the same hash tag:
 * `deals` (hash deal id → msgpack deal), `pending` (hash pool → msgpack list of the pool's
 * pending deals, by id; a pool with none has no field), `cohorts` (hash id → msgpack cohort),
 * `series` (hash id → msgpack `{ seq, last }`), `row-cohorts` (hash row key → msgpack cohort ids,
 * private), and for the summary `regions`, `contracts`, `tenors` (sets), `pairs` (hash
 * `gpu \0 model` → rows) and `pair-days` (sorted set `lex(gpu) ++ lex(model) ++ lex(date)`, for
 * each pair's first and last date), and `version` (bumped when rows are published).
 */
export const makeTransactionStore = (client: RedisClient): TransactionStore["Type"] => {
  const table = makeTable(client, transactionSpec)
  const keys = table.keys("deals", "pending", "cohorts", "series", "row-cohorts", "regions", "contracts", "tenors", "pairs", "pair-days", "version", "marks")
  const { redis } = client

  const hmget = (key: string, fields: ReadonlyArray<string>): Promise<Array<Buffer | null>> =>
    fields.length === 0 ? Promise.resolve([]) : redis.hmgetBuffer(key, ...fields)
  const byId = (a: StoredDeal, b: StoredDeal) => cmp(a.deal_id, b.deal_id)

  const dealsOf = async (ids: ReadonlyArray<string>) =>
    (await hmget(keys.deals, [...new Set(ids)])).flatMap((bytes) => (bytes === null ? [] : [decode<StoredDeal>(bytes)]))
  const seriesOf = async (ids: ReadonlyArray<string>): Promise<Array<{ readonly id: string; readonly bytes: Buffer | null; readonly state?: SeriesState }>> => {
    const unique = [...new Set(ids)]
    const found = await hmget(keys.series, unique)
    const stored = found.map((bytes) => (bytes === null ? undefined : decode<StoredSeries>(bytes)))
    const known = stored.filter((s): s is StoredSeries => s !== undefined)
    // Cohorts never change once written, so reading them after their series is safe.
    const lasts = await hmget(keys.cohorts, known.map((s) => s.last))
    const lastOf = new Map(known.map((s, i) => [s.last, lasts[i]!]))
    return unique.map((id, i) => {
      const s = stored[i]
      return s === undefined
        ? { id, bytes: found[i]! }
        : { id, bytes: found[i]!, state: { series: id, seq: s.seq, last: decode<Cohort>(lastOf.get(s.last)!) } }
    })
  }

  /**
   * One attempt: read, decide, and write in one checked batch whose checks are what the
   * decision read (each pool's pending list, each series, the absence of every new key).
   * The view's `series` answers from what was read; asking for series not read yet throws
   * `SeriesNeeded`, and the attempt reads them and decides again.
   */
  const attempt = async <A, E>(
    reads: TransactionReads,
    decide: (view: TransactionView) => Either.Either<Decision<TransactionChanges, A>, E>
  ): Promise<{ readonly refused: E } | { readonly result: A } | "retry"> => {
    const poolNames = [...new Set(reads.pools)]
    const [deals, pendingLists] = await Promise.all([dealsOf(reads.deals), hmget(keys.pending, poolNames)])
    const pendingBytes = new Map<string, Buffer | null>(poolNames.map((pool, i) => [pool, pendingLists[i]!]))
    const pendingOf = (pool: string) => {
      const bytes = pendingBytes.get(pool)
      return bytes === null || bytes === undefined ? [] : decode<Array<StoredDeal>>(bytes)
    }
    const read = { deals, pending: poolNames.flatMap(pendingOf).sort(byId) }
    const series = new Map<string, { readonly bytes: Buffer | null; readonly state?: SeriesState }>()
    let decision: Either.Either<Decision<TransactionChanges, A>, E> | undefined
    while (decision === undefined) {
      const missing: Array<string> = []
      try {
        decision = decide({
          ...read,
          series: (ids) => {
            const out: Array<SeriesState> = []
            for (const id of ids) {
              const hit = series.get(id)
              if (hit === undefined) missing.push(id)
              else if (hit.state !== undefined) out.push(hit.state)
            }
            if (missing.length > 0) throw new SeriesNeeded()
            return out
          }
        })
      } catch (e) {
        if (!(e instanceof SeriesNeeded)) throw e
        for (const s of await seriesOf(missing)) series.set(s.id, s)
      }
    }
    if (Either.isLeft(decision)) return { refused: decision.left }
    const { changes, result } = decision.right
    const fault = transactionChangeFault(reads, read, new Set(series.keys()), changes)
    if (fault !== undefined) throw new InvalidPlan(`transactions.transact: the decision ${fault}`)
    if (changes.deals.length === 0 && changes.rows.length === 0 && changes.assign.length === 0 && changes.mark === undefined) return { result }

    // Pools whose pending list the change rewrites: those read, and those of new pending deals.
    const extra = [...new Set(changes.deals.filter((d) => d.cohort === null).map(dealPool))].filter((p) => !pendingBytes.has(p))
    const [extraBytes, cohortsFound, rowsFound] = await Promise.all([
      hmget(keys.pending, extra), hmget(keys.cohorts, changes.cohorts.map((c) => c.cohort)), table.fetch(changes.rows.map((r) => r.row.row_key))
    ])
    for (const [i, bytes] of extraBytes.entries()) pendingBytes.set(extra[i]!, bytes)
    // Cohorts and rows are never rewritten: a decision that names a stored one is a bug, unless
    // another writer stored it since this step read (then what it read moved too, and it decides again).
    const taken = changes.cohorts.find((_, i) => cohortsFound[i] !== null)?.cohort ?? changes.rows.find((_, i) => rowsFound[i] !== undefined)?.row.row_key
    if (taken !== undefined) {
      const pools = [...pendingBytes.keys()]
      const ids = [...series.keys()]
      const [pendingNow, seriesNow] = await Promise.all([hmget(keys.pending, pools), hmget(keys.series, ids)])
      const same = (a: Buffer | null, b: Buffer | null | undefined) => (a === null ? b === null : b !== null && b !== undefined && a.equals(b))
      const moved = pools.some((p, i) => !same(pendingNow[i]!, pendingBytes.get(p))) || ids.some((id, i) => !same(seriesNow[i]!, series.get(id)!.bytes))
      if (moved) return "retry"
      throw new InvalidPlan(`transactions.transact: the decision writes ${taken}, which is stored`)
    }

    const batch = new Batch()
    for (const [pool, bytes] of pendingBytes) batch.expect(keys.pending, pool, bytes)
    for (const d of changes.deals) batch.expect(keys.deals, d.deal_id, null)
    for (const [id, s] of series) batch.expect(keys.series, id, s.bytes)
    for (const c of changes.cohorts) batch.expect(keys.cohorts, c.cohort, null)
    for (const { row } of changes.rows) batch.expect(table.rowsKey, row.row_key, null)

    // Pending lists after the change: deals assigned leave, new pending deals join.
    const cohortOf = new Map(changes.assign.map((a) => [a.deal_id, a.cohort]))
    const joining = new Map<string, Array<StoredDeal>>()
    for (const d of changes.deals) {
      batch.op("HSET", keys.deals, d.deal_id, encode(d))
      if (d.cohort !== null) continue
      const pool = dealPool(d)
      joining.set(pool, [...(joining.get(pool) ?? []), d])
    }
    for (const d of read.pending) {
      const cohort = cohortOf.get(d.deal_id)
      if (cohort !== undefined) batch.op("HSET", keys.deals, d.deal_id, encode({ ...d, cohort }))
    }
    for (const pool of pendingBytes.keys()) {
      const before = pendingOf(pool)
      const after = [...before.filter((d) => !cohortOf.has(d.deal_id)), ...(joining.get(pool) ?? [])].sort(byId)
      if (after.length === before.length && after.every((d, i) => d === before[i])) continue
      if (after.length === 0) batch.op("HDEL", keys.pending, pool)
      else batch.op("HSET", keys.pending, pool, encode(after))
    }
    for (const c of changes.cohorts) batch.op("HSET", keys.cohorts, c.cohort, encode(c))
    for (const s of changes.series) batch.op("HSET", keys.series, s.series, encode({ seq: s.seq, last: s.last } satisfies StoredSeries))
    for (const { row, cohorts: ids } of changes.rows) {
      table.write(batch, undefined, row)
      batch.op("HSET", keys["row-cohorts"], row.row_key, encode(ids))
      batch.op("SADD", keys.regions, row.region_group)
      batch.op("SADD", keys.contracts, row.contract_type)
      batch.op("SADD", keys.tenors, String(row.tenor_days))
      batch.op("HINCRBY", keys.pairs, `${row.gpu_canonical_name}\u0000${row.gpu_model}`, "1")
      batch.op("ZADD", keys["pair-days"], "0", Buffer.concat([pairPrefix(row.gpu_canonical_name, row.gpu_model), encodeText(row.transaction_date)]))
    }
    if (changes.rows.length > 0) batch.op("SET", keys.version, freshVersion())
    logEvents(client, batch, changes.rows.map(({ row }) => ({ type: "transaction_blend", row })))
    if (changes.mark !== undefined) batch.op("HSET", keys.marks, changes.mark.name, changes.mark.value)
    return (await batch.execute(client)) === 0 ? { result } : "retry"
  }

  /** The summary from the maintained sets and counts, and each pair's first and last date, at one version. */
  // Metadata may lag the primary: it is read where `client.stale` reads, version and all.
  const reader = client.stale.redis
  const readSummary = async (): Promise<Versioned<TransactionSummary> | "retry"> => {
    const [regions, contracts, tenors, pairs, version] = (await replies(
      reader.multi().smembers(keys.regions).smembers(keys.contracts).smembers(keys.tenors).hgetall(keys.pairs).get(keys.version)
    )) as [Array<string>, Array<string>, Array<string>, Record<string, string>, string | null]
    const names = Object.keys(pairs).map((k) => {
      const cut = k.indexOf("\u0000")
      return { gpu: k.slice(0, cut), model: k.slice(cut + 1), rows: Number(pairs[k]) }
    }).sort((a, b) => cmp(a.gpu, b.gpu) || cmp(a.model, b.model))
    const second = reader.multi()
    for (const { gpu, model } of names) {
      const prefix = pairPrefix(gpu, model)
      const from = Buffer.concat([Buffer.from("["), prefix])
      const to = Buffer.concat([Buffer.from("("), prefix, AFTER_VALUE])
      second.callBuffer("ZRANGE", keys["pair-days"], from, to, "BYLEX", "LIMIT", "0", "1")
      second.callBuffer("ZRANGE", keys["pair-days"], to, from, "BYLEX", "REV", "LIMIT", "0", "1")
    }
    const dates = await replies(second.get(keys.version))
    if (dates[dates.length - 1] !== version) return "retry"
    const dateOf = (reply: unknown, prefix: Buffer) => decodeText((reply as Array<Buffer>)[0]!.subarray(prefix.length))
    return {
      version,
      value: {
        region_groups: regions.sort(cmp),
        contract_types: contracts.sort(cmp),
        tenors: tenors.map(Number).sort((a, b) => a - b),
        gpus: names.map(({ gpu, model, rows }, i) => {
          const prefix = pairPrefix(gpu, model)
          return {
            gpu_canonical_name: gpu,
            gpu_model: model,
            first_transaction_date: dateOf(dates[2 * i], prefix),
            last_transaction_date: dateOf(dates[2 * i + 1], prefix),
            rows
          }
        })
      }
    }
  }

  return {
    deals: (ids) => client.run("transactions.deals", () => dealsOf(ids)),

    pending: (pools) =>
      client.run("transactions.pending", async () =>
        (await hmget(keys.pending, [...new Set(pools)])).flatMap((bytes) => (bytes === null ? [] : decode<Array<StoredDeal>>(bytes))).sort(byId)),

    pendingPools: client.run("transactions.pendingPools", () => redis.hkeys(keys.pending)),

    series: (ids) =>
      client.run("transactions.series", async () => (await seriesOf(ids)).flatMap((s) => (s.state === undefined ? [] : [s.state]))),

    mark: readMark(client, keys.marks, "transactions.mark"),

    version: readVersion(client, keys.version, "transactions.version"),

    transact: <A, E>(reads: TransactionReads, decide: (view: TransactionView) => Either.Either<Decision<TransactionChanges, A>, E>) =>
      Effect.flatMap(
        untilApplied(client, "transactions.transact", () => attempt(reads, decide), () =>
          new StorageError({ operation: "transactions.transact", cause: `other writers moved these deals ${BATCH_ATTEMPTS} times in a row` })),
        (outcome) => ("refused" in outcome ? Effect.fail(outcome.refused) : Effect.succeed(outcome.result))
      ),

    page: (plan) =>
      windowDates(plan.scope) === undefined ? Effect.succeed([]) : client.run("transactions.page", () => table.page(plan)),

    summary: cachedByVersion(client.stale, "transactions.summary", keys.version, readSummary),

    // The private audit covers every published row, so it reads them all: rows' cohorts and the
    // blended deals, from one moment.
    audit: client.run("transactions.audit", async () => {
      const [rowCohorts, deals] = (await replies(redis.multi().hgetallBuffer(keys["row-cohorts"]).hvalsBuffer(keys.deals))) as [
        Record<string, Buffer>, Array<Buffer>
      ]
      const members = new Map<string, Array<string>>()
      for (const bytes of deals) {
        const d = decode<StoredDeal>(bytes)
        if (d.cohort === null) continue
        const list = members.get(d.cohort)
        if (list === undefined) members.set(d.cohort, [d.deal_id])
        else list.push(d.deal_id)
      }
      return Object.keys(rowCohorts).sort(cmp).map((row_key) => ({
        row_key,
        deal_ids: decode<Array<string>>(rowCohorts[row_key]!).flatMap((c) => members.get(c) ?? []).sort(cmp)
      }))
    })
  }
}
