import {
  type HardwareClassField, hardwareClassFields, type HardwarePrice, hardwarePriceFields, observationId, StorageError
} from "@gpu-market/core"
import {
  dayStart, type HardwareGpuCoverage, HardwarePriceStore, hardwarePriceTable, type HardwareSummary, cmp, type Scope, type ProgressMark
} from "@gpu-market/core/storage"
import * as Effect from "effect/Effect"
import { Batch, untilApplied } from "./batch.js"
import type { RedisClient } from "./client.js"
import { cachedByVersion, replies, type Versioned } from "./reads.js"
import { AFTER_VALUE, encodeValue, memberText } from "./lex.js"
import { readMark } from "./settings.js"
import { type Bound, type Bounds, makeTable, type StoredRow, type TableSpec } from "./table.js"
import { freshVersion, readVersion } from "./data-version.js"
import { logEvents } from "./event-log.js"

/**
 * A hardware row as stored: the row and the next day its listing was observed on (null on the
 * listing's latest row), kept by `put` as the SQLite store keeps it. With it, `latest` is a
 * subset of its own and `asOf` is the versioned test `observed_date <= D < next_observed_date`.
 */
export type StoredHardwarePrice = HardwarePrice & { readonly next_observed_date: string | null }

/** The row a caller sees: everything but the stored next day, in the row's field order. */
const served = ({ next_observed_date: _, ...row }: StoredHardwarePrice): HardwarePrice => row

/**
 * A page's rows as served. Each row was decoded for this page alone, so its stored next day is
 * dropped in place: the last field of the row's structure, so V8 just returns the object to the
 * shape it had before that field, where `served` would copy 40-odd fields of every row.
 */
const servedPage = (rows: Array<StoredHardwarePrice>): Array<HardwarePrice> => {
  for (const row of rows) delete (row as { next_observed_date?: string | null }).next_observed_date
  return rows
}

const MIDNIGHT = dayStart("")

/** Whether a stored row is in a scope, as `inHardwareScope` decides over all rows. */
const inScope = (r: StoredHardwarePrice, scope: Scope): boolean => {
  switch (scope._tag) {
    case "latest": return r.next_observed_date === null
    case "asOf": {
      const day = scope.at.slice(0, 10)
      return r.observed_date <= day && (r.next_observed_date === null || r.next_observed_date > day)
    }
    case "window": {
      const start = dayStart(r.observed_date)
      return start >= scope.start && start < scope.end
    }
  }
}

/**
 * A bound on the instant a day starts (`observed_date` + midnight), as a bound on the day
 * itself: with `p` the date part of the instant and `q` the rest, the day's start compares with
 * the instant as the day compares with `p`, and as midnight compares with `q` when they are equal.
 */
const dayBound = (instant: string, side: "lower" | "upper"): Bound => {
  const p = instant.slice(0, 10)
  const q = instant.slice(p.length)
  const at = encodeValue(p)
  const past = Buffer.concat([at, AFTER_VALUE])
  if (side === "lower") return { bytes: MIDNIGHT >= q ? at : past, exclusive: false }
  return MIDNIGHT < q ? { bytes: past, exclusive: false } : { bytes: at, exclusive: true }
}

/** What a scope bounds of the days a page sorted by day walks. */
const scopeBounds = (scope: Scope, sortField: string): Bounds => {
  if (sortField !== "observed_date") return {}
  switch (scope._tag) {
    case "latest": return {}
    case "asOf": return { upper: { bytes: Buffer.concat([encodeValue(scope.at.slice(0, 10)), AFTER_VALUE]), exclusive: false } }
    case "window": return { lower: dayBound(scope.start, "lower"), upper: dayBound(scope.end, "upper") }
  }
}

/**
 * Hardware rows as a table: the latest row of each listing indexed per sort field, over all
 * rows and per GPU, for `/latest`; every row indexed the same way for `/as-of` and `/history`.
 * A history page sorted by day walks only the window's days; `/as-of` and the other sorts walk
 * the sort's index and keep the rows in scope (about one per listing and day seen). The rows
 * of one listing are a group: a listing filter reads them alone.
 */
export const hardwareTable: TableSpec<StoredHardwarePrice> = {
  tag: "hardware",
  tie: hardwarePriceTable.tie,
  sortFields: hardwarePriceTable.sortable,
  subsets: [
    { name: "latest", holds: (r) => r.next_observed_date === null, anchors: hardwarePriceTable.anchors, global: true },
    { name: "all", holds: () => true, anchors: hardwarePriceTable.anchors, global: true }
  ],
  groups: [hardwarePriceTable.scope.of],
  subsetsFor: (scope) => [scope._tag === "latest" ? "latest" : "all"],
  inScope,
  scopeBounds,
  // The stored next day last, so every stored row has one shape.
  structures: [[...hardwarePriceFields, "next_observed_date"]]
}

const pair = (a: string, b: string) => `${a}\u0000${b}`

/** Where a listing's day goes in the order of its days: the stored day before and after it. */
interface Neighbours {
  readonly before: string | undefined
  readonly after: string | undefined
}

/**
 * The hardware price store. Besides the table it keeps, under the same hash tag:
 * `days:<listing_key>` (sorted set of the listing's days, to find a new day's neighbours),
 * `stamp` (hash listing → writes so far: every put checks and bumps the stamps of its listings,
 * so two writers of one listing are serialised), `values` (hash `field \0 value` → rows holding
 * it), `listings` (hash `gpu \0 listing` → rows), `gpus` (hash GPU → listings with rows) and
 * `version` (bumped by every put, so the summary is cached until something changes). A GPU's
 * first and last day and its row count are read from its day index.
 */
export const makeHardwarePriceStore = (client: RedisClient): HardwarePriceStore["Type"] => {
  const table = makeTable(client, hardwareTable)
  const { redis } = client
  const daysKey = (listing: string) => table.key("days", listing)
  const keys = table.keys("stamp", "values", "listings", "gpus", "version", "marks")
  const dayIndex = (gpu: string) => table.indexKey("all", "observed_date", { field: "gpu_canonical_name", value: gpu })

  const neighbours = async (rows: ReadonlyArray<HardwarePrice>): Promise<Array<Neighbours>> => {
    const pipeline = redis.pipeline()
    for (const r of rows) {
      pipeline.zrange(daysKey(r.listing_key), `(${r.observed_date}`, "-", "BYLEX", "REV", "LIMIT", 0, 1)
      pipeline.zrange(daysKey(r.listing_key), `(${r.observed_date}`, "+", "BYLEX", "LIMIT", 0, 1)
    }
    const days = (await replies(pipeline)) as Array<Array<string>>
    return rows.map((_, i) => ({ before: days[2 * i]![0], after: days[2 * i + 1]![0] }))
  }

  /** One attempt: read, decide as the reference does, and write if no listing moved meanwhile. */
  const attempt = async (rows: ReadonlyArray<HardwarePrice>, mark: ProgressMark | undefined) => {
    // Of two rows of one listing-day, the later stands.
    const finals = new Map<string, HardwarePrice>()
    for (const r of rows) finals.set(r.observation_id, r)
    const listings = [...new Set(rows.map((r) => r.listing_key))]
    // The stamps are read before anything they guard, so a put landing after this read fails the checks.
    const stamps = await redis.hmget(keys.stamp, ...listings)
    const written = [...finals.values()]
    const [stored, around] = await Promise.all([table.fetch(written.map((r) => r.observation_id)), neighbours(written)])

    // Counted in call order: a row of a listing-day stored before it, or earlier in the call, replaces.
    const known = new Set(written.filter((_, i) => stored[i] !== undefined).map((r) => r.observation_id))
    let inserted = 0
    for (const r of rows) {
      if (known.has(r.observation_id)) continue
      known.add(r.observation_id)
      inserted++
    }
    const replaced = rows.length - inserted

    // The new days of each listing, ascending: a day's next day is the nearer of its stored
    // next day and the first new day after it.
    const newDays = new Map<string, Array<string>>()
    written.forEach((r, i) => {
      if (stored[i] !== undefined) return
      const days = newDays.get(r.listing_key)
      if (days === undefined) newDays.set(r.listing_key, [r.observed_date])
      else days.push(r.observed_date)
    })
    for (const days of newDays.values()) days.sort()
    const nextOf = (listing: string, day: string, known: string | null | undefined): string | null => {
      const later = newDays.get(listing)?.find((d) => d > day)
      const candidates = [known ?? null, later ?? null].filter((d): d is string => d !== null)
      return candidates.length === 0 ? null : candidates.reduce((a, b) => (a < b ? a : b))
    }

    // Every row whose stored form changes: the rows written, and each stored row right before a new day.
    const changes = new Map<string, { before: StoredRow<StoredHardwarePrice> | undefined; row: HardwarePrice; next: string | null }>()
    const previous: Array<string> = []
    written.forEach((r, i) => {
      const before = stored[i]
      const next = nextOf(r.listing_key, r.observed_date, before !== undefined ? before.row.next_observed_date : around[i]!.after)
      changes.set(r.observation_id, { before, row: r, next })
      const prior = around[i]!.before
      if (before === undefined && prior !== undefined) previous.push(observationId(r.listing_key, prior))
    })
    const priorIds = [...new Set(previous)].filter((id) => !changes.has(id))
    for (const before of await table.fetch(priorIds)) {
      // Absent only when another put moved the listing since its stamp was read: the checks fail then.
      if (before === undefined) return "retry" as const
      const row = served(before.row)
      changes.set(row.observation_id, { before, row, next: nextOf(row.listing_key, row.observed_date, before.row.next_observed_date) })
    }

    // Summary deltas: rows per filter value, and rows per GPU and listing.
    const values = new Map<string, number>()
    const perListing = new Map<string, { gpu: string; delta: number }>()
    const count = (r: HardwarePrice, delta: number) => {
      for (const f of hardwareClassFields) {
        const v = r[f]
        if (v !== null) values.set(pair(f, v), (values.get(pair(f, v)) ?? 0) + delta)
      }
      const k = pair(r.gpu_canonical_name, r.listing_key)
      perListing.set(k, { gpu: r.gpu_canonical_name, delta: (perListing.get(k)?.delta ?? 0) + delta })
    }
    for (const [i, r] of written.entries()) {
      const before = stored[i]
      if (before !== undefined) count(before.row, -1)
      count(r, 1)
    }
    const moved = [...perListing].filter(([, p]) => p.delta !== 0)
    const counts = moved.length === 0 ? [] : await redis.hmget(keys.listings, ...moved.map(([k]) => k))

    const batch = new Batch()
    listings.forEach((listing, i) => batch.expect(keys.stamp, listing, stamps[i] ?? null))
    for (const { before, row, next } of changes.values()) {
      table.write(batch, before, { ...row, next_observed_date: next })
      if (before === undefined) batch.op("ZADD", daysKey(row.listing_key), "0", row.observed_date)
    }
    for (const listing of listings) batch.op("HINCRBY", keys.stamp, listing, "1")
    for (const [k, delta] of values) if (delta !== 0) batch.op("HINCRBY", keys.values, k, String(delta))
    moved.forEach(([k, { gpu, delta }], i) => {
      const was = Number(counts[i] ?? 0)
      const now = was + delta
      if (now === 0) batch.op("HDEL", keys.listings, k)
      else batch.op("HINCRBY", keys.listings, k, String(delta))
      // The GPU's listing count moves when this listing gains its first row of it or loses its last.
      if (was === 0 && now > 0) batch.op("HINCRBY", keys.gpus, gpu, "1")
      if (was > 0 && now === 0) batch.op("HINCRBY", keys.gpus, gpu, "-1")
    })
    batch.op("SET", keys.version, freshVersion())
    logEvents(client, batch, rows.map((row) => ({ type: "hardware_observation", row })))
    if (mark !== undefined) batch.op("HSET", keys.marks, mark.name, mark.value)
    return (await batch.execute(client)) === 0 ? { inserted, replaced } : "retry" as const
  }

  /** The summary from the maintained counts and the GPUs' day indexes, both at one version. */
  // Metadata may lag the primary: it is read where `client.stale` reads, version and all.
  const reader = client.stale.redis
  const readSummary = async (): Promise<Versioned<HardwareSummary> | "retry"> => {
    const [counted, listed, version] = (await replies(reader.multi().hgetall(keys.values).hgetall(keys.gpus).get(keys.version))) as [
      Record<string, string>, Record<string, string>, string | null
    ]
    const names = Object.keys(listed).filter((g) => Number(listed[g]) > 0).sort(cmp)
    const second = reader.multi()
    for (const gpu of names) {
      second.callBuffer("ZRANGE", dayIndex(gpu), "-", "+", "BYLEX", "LIMIT", "0", "1")
      second.callBuffer("ZRANGE", dayIndex(gpu), "+", "-", "BYLEX", "REV", "LIMIT", "0", "1")
      second.zcard(dayIndex(gpu))
    }
    const coverage = await replies(second.get(keys.version))
    if (coverage[coverage.length - 1] !== version) return "retry"

    const values = Object.fromEntries(hardwareClassFields.map((f) => [f, [] as Array<string>])) as Record<HardwareClassField, Array<string>>
    for (const [k, n] of Object.entries(counted)) {
      if (Number(n) <= 0) continue
      const cut = k.indexOf("\u0000")
      values[k.slice(0, cut) as HardwareClassField]?.push(k.slice(cut + 1))
    }
    for (const f of hardwareClassFields) values[f].sort(cmp)
    const gpus = names.map((gpu, i): HardwareGpuCoverage => ({
      gpu_canonical_name: gpu,
      first_observed: memberText((coverage[3 * i] as Array<Buffer>)[0]!),
      last_observed: memberText((coverage[3 * i + 1] as Array<Buffer>)[0]!),
      listings: Number(listed[gpu]),
      observations: coverage[3 * i + 2] as number
    }))
    return { version, value: { values, gpus } }
  }

  return {
    put: (rows, mark) =>
      rows.length === 0
        ? mark === undefined
          ? Effect.succeed({ inserted: 0, replaced: 0 })
          : client.run("hardware_prices.put", async (redis) => {
            await redis.hset(keys.marks, mark.name, mark.value)
            await client.acknowledged(keys.marks)
            return { inserted: 0, replaced: 0 }
          })
        : untilApplied(client, "hardware_prices.put", () => attempt(rows, mark), () =>
          new StorageError({ operation: "hardware_prices.put", cause: "hardware prices kept changing under this write" })),

    mark: readMark(client, keys.marks, "hardware_prices.mark"),

    version: readVersion(client, keys.version, "hardware_prices.version"),

    page: (plan) => client.run("hardware_prices.page", async () => servedPage(await table.page(plan))),

    summary: cachedByVersion(client.stale, "hardware_prices.summary", keys.version, readSummary)
  }
}
