import { type AggregatedTransaction, transactionFields } from "@gpu-market/core"
import {
  type Cohort, dealPool, cmp, type Scope, type SeriesState, StorageConflict, type StoredDeal, type TransactionChanges, TransactionStore,
  type TransactionSummary, transactionTable, windowDates
} from "@gpu-market/core/storage"
import * as Effect from "effect/Effect"
import { Batch, untilApplied } from "./batch.js"
import type { RedisClient } from "./client.js"
import { decode, encode } from "./codec.js"
import { AFTER_VALUE, decodeText, encodeText, encodeValue } from "./lex.js"
import { cachedByVersion, replies, type Versioned } from "./reads.js"
import { makeTable, type TableSpec } from "./table.js"

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
  const { redis } = client
  const dealsKey = table.key("deals")
  const pendingKey = table.key("pending")
  const cohortsKey = table.key("cohorts")
  const seriesKey = table.key("series")
  const rowCohortsKey = table.key("row-cohorts")
  const regionsKey = table.key("regions")
  const contractsKey = table.key("contracts")
  const tenorsKey = table.key("tenors")
  const pairsKey = table.key("pairs")
  const pairDaysKey = table.key("pair-days")
  const versionKey = table.key("version")

  const hmget = (key: string, fields: ReadonlyArray<string>): Promise<Array<Buffer | null>> =>
    fields.length === 0 ? Promise.resolve([]) : redis.hmgetBuffer(key, ...fields)
  const byId = (a: StoredDeal, b: StoredDeal) => cmp(a.deal_id, b.deal_id)

  /** One attempt: read, decide as the reference does, and write if nothing it read moved meanwhile. */
  const attempt = async (changes: TransactionChanges): Promise<StorageConflict | undefined | "retry"> => {
    const assignIds = [...new Set(changes.assign.map((a) => a.deal_id))]
    const newIds = changes.deals.map((d) => d.deal_id)
    const seriesIds = [...new Set(changes.series.map((s) => s.series))]
    const [newDeals, assigned, series, cohorts, rows] = await Promise.all([
      hmget(dealsKey, newIds), hmget(dealsKey, assignIds), hmget(seriesKey, seriesIds),
      hmget(cohortsKey, changes.cohorts.map((c) => c.cohort)), table.fetch(changes.rows.map((r) => r.row.row_key))
    ])
    const assignedDeals = new Map(assignIds.map((id, i) => [id, assigned[i]!]))
    // Pools whose pending list the change reads or rewrites: those it was planned from, those
    // of new pending deals and those of deals leaving them.
    const pools = new Set(changes.pools.map((p) => p.pool))
    for (const d of changes.deals) if (d.cohort === null) pools.add(dealPool(d))
    for (const bytes of assignedDeals.values()) if (bytes !== null) pools.add(dealPool(decode<StoredDeal>(bytes)))
    const poolNames = [...pools]
    const pendingBytes = new Map((await hmget(pendingKey, poolNames)).map((bytes, i) => [poolNames[i]!, bytes]))
    const pendingOf = (pool: string) => {
      const bytes = pendingBytes.get(pool)
      return bytes === null || bytes === undefined ? [] : decode<Array<StoredDeal>>(bytes)
    }

    const conflict = (detail: string) => new StorageConflict({ detail })
    for (const p of changes.pools) {
      const now = pendingOf(p.pool).map((d) => d.deal_id)
      if (now.join("\u0000") !== [...p.pending].sort(cmp).join("\u0000")) return conflict(`pool ${p.pool} changed`)
    }
    const fresh = new Set<string>()
    for (const [i, d] of changes.deals.entries()) {
      if (newDeals[i] !== null || fresh.has(d.deal_id)) return conflict(`deal ${d.deal_id} exists`)
      fresh.add(d.deal_id)
    }
    for (const a of changes.assign) {
      const bytes = assignedDeals.get(a.deal_id)!
      if (bytes === null || decode<StoredDeal>(bytes).cohort !== null) return conflict(`deal ${a.deal_id} is no longer pending`)
    }
    for (const [i, s] of seriesIds.entries()) {
      const bytes = series[i]!
      const seq = bytes === null ? 0 : decode<StoredSeries>(bytes).seq
      for (const c of changes.series) if (c.series === s && c.expected !== seq) return conflict(`series ${s} moved`)
    }
    const newCohorts = new Set<string>()
    for (const [i, c] of changes.cohorts.entries()) {
      if (cohorts[i] !== null || newCohorts.has(c.cohort)) return conflict(`cohort ${c.cohort} exists`)
      newCohorts.add(c.cohort)
    }
    const newRows = new Set<string>()
    for (const [i, { row }] of changes.rows.entries()) {
      if (rows[i] !== undefined || newRows.has(row.row_key)) return conflict(`row ${row.row_key} exists`)
      newRows.add(row.row_key)
    }

    const batch = new Batch()
    for (const [pool, bytes] of pendingBytes) batch.expect(pendingKey, pool, bytes)
    for (const id of newIds) batch.expect(dealsKey, id, null)
    for (const [id, bytes] of assignedDeals) batch.expect(dealsKey, id, bytes)
    seriesIds.forEach((id, i) => batch.expect(seriesKey, id, series[i]!))
    for (const c of changes.cohorts) batch.expect(cohortsKey, c.cohort, null)
    for (const { row } of changes.rows) batch.expect(table.rowsKey, row.row_key, null)

    // Pending lists after the change: deals assigned leave, new pending deals join.
    const leaving = new Set(assignIds)
    const joining = new Map<string, Array<StoredDeal>>()
    for (const d of changes.deals) {
      batch.op("HSET", dealsKey, d.deal_id, encode(d))
      if (d.cohort !== null) continue
      const pool = dealPool(d)
      joining.set(pool, [...(joining.get(pool) ?? []), d])
    }
    for (const a of changes.assign) {
      batch.op("HSET", dealsKey, a.deal_id, encode({ ...decode<StoredDeal>(assignedDeals.get(a.deal_id)!), cohort: a.cohort }))
    }
    for (const pool of poolNames) {
      const before = pendingOf(pool)
      const after = [...before.filter((d) => !leaving.has(d.deal_id)), ...(joining.get(pool) ?? [])].sort(byId)
      if (after.length === before.length && after.every((d, i) => d === before[i])) continue
      if (after.length === 0) batch.op("HDEL", pendingKey, pool)
      else batch.op("HSET", pendingKey, pool, encode(after))
    }
    for (const c of changes.cohorts) batch.op("HSET", cohortsKey, c.cohort, encode(c))
    for (const s of changes.series) batch.op("HSET", seriesKey, s.series, encode({ seq: s.seq, last: s.last } satisfies StoredSeries))
    for (const { row, cohorts: ids } of changes.rows) {
      table.write(batch, undefined, row)
      batch.op("HSET", rowCohortsKey, row.row_key, encode(ids))
      batch.op("SADD", regionsKey, row.region_group)
      batch.op("SADD", contractsKey, row.contract_type)
      batch.op("SADD", tenorsKey, String(row.tenor_days))
      batch.op("HINCRBY", pairsKey, `${row.gpu_canonical_name}\u0000${row.gpu_model}`, "1")
      batch.op("ZADD", pairDaysKey, "0", Buffer.concat([pairPrefix(row.gpu_canonical_name, row.gpu_model), encodeText(row.transaction_date)]))
    }
    if (changes.rows.length > 0) batch.op("INCR", versionKey)
    if (batch.isEmpty) return undefined
    return (await batch.execute(client)) === 0 ? undefined : "retry"
  }

  /** The summary from the maintained sets and counts, and each pair's first and last date, at one version. */
  const readSummary = async (): Promise<Versioned<TransactionSummary> | "retry"> => {
    const [regions, contracts, tenors, pairs, version] = (await replies(
      redis.multi().smembers(regionsKey).smembers(contractsKey).smembers(tenorsKey).hgetall(pairsKey).get(versionKey)
    )) as [Array<string>, Array<string>, Array<string>, Record<string, string>, string | null]
    const names = Object.keys(pairs).map((k) => {
      const cut = k.indexOf("\u0000")
      return { gpu: k.slice(0, cut), model: k.slice(cut + 1), rows: Number(pairs[k]) }
    }).sort((a, b) => cmp(a.gpu, b.gpu) || cmp(a.model, b.model))
    const second = redis.multi()
    for (const { gpu, model } of names) {
      const prefix = pairPrefix(gpu, model)
      const from = Buffer.concat([Buffer.from("["), prefix])
      const to = Buffer.concat([Buffer.from("("), prefix, AFTER_VALUE])
      second.callBuffer("ZRANGE", pairDaysKey, from, to, "BYLEX", "LIMIT", "0", "1")
      second.callBuffer("ZRANGE", pairDaysKey, to, from, "BYLEX", "REV", "LIMIT", "0", "1")
    }
    const dates = await replies(second.get(versionKey))
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
    deals: (ids) =>
      client.run("transactions.deals", async () =>
        (await hmget(dealsKey, [...new Set(ids)])).flatMap((bytes) => (bytes === null ? [] : [decode<StoredDeal>(bytes)]))),

    pending: (pools) =>
      client.run("transactions.pending", async () =>
        (await hmget(pendingKey, [...new Set(pools)])).flatMap((bytes) => (bytes === null ? [] : decode<Array<StoredDeal>>(bytes))).sort(byId)),

    pendingPools: client.run("transactions.pendingPools", () => redis.hkeys(pendingKey)),

    series: (ids) =>
      client.run("transactions.series", async () => {
        const unique = [...new Set(ids)]
        const found = (await hmget(seriesKey, unique)).flatMap((bytes, i) =>
          bytes === null ? [] : [{ series: unique[i]!, ...decode<StoredSeries>(bytes) }])
        // Cohorts never change once written, so reading them after their series is safe.
        const lasts = await hmget(cohortsKey, found.map((s) => s.last))
        return found.map((s, i): SeriesState => ({ series: s.series, seq: s.seq, last: decode<Cohort>(lasts[i]!) }))
      }),

    apply: (changes) =>
      Effect.flatMap(
        untilApplied(client, "transactions.apply", () => attempt(changes), () =>
          new StorageConflict({ detail: "transactions changed under this write; re-plan it" }), 1),
        (outcome) => (outcome === undefined ? Effect.void : Effect.fail(outcome))
      ),

    page: (plan) =>
      windowDates(plan.scope) === undefined ? Effect.succeed([]) : client.run("transactions.page", () => table.page(plan)),

    summary: cachedByVersion(client, "transactions.summary", versionKey, readSummary),

    // The private audit covers every published row, so it reads them all: rows' cohorts and the
    // blended deals, from one moment.
    audit: client.run("transactions.audit", async () => {
      const [rowCohorts, deals] = (await replies(redis.multi().hgetallBuffer(rowCohortsKey).hvalsBuffer(dealsKey))) as [
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
