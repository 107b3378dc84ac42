import { type RentalPrice, rentalPriceFields } from "@gpu-market/core"
import {
  type GpuSpelling, cmp, inVersionScope, type RentalGpuSummary, RentalPriceStore, rentalPriceTable, StorageConflict
} from "@gpu-market/core/storage"
import * as Effect from "effect/Effect"
import { Batch, untilApplied } from "./batch.js"
import type { RedisClient } from "./client.js"
import { decode, encode } from "./codec.js"
import { makeTable, type StoredRow, type TableSpec, versionScopeBounds } from "./table.js"

/**
 * Rental rows as a table: current rows indexed per vendor and per GPU for `/latest`; every
 * version indexed the same way plus globally for `/as-of` and `/history` (which filter the
 * versions they walk by scope); the versions of one product in a group.
 */
export const rentalTable: TableSpec<RentalPrice> = {
  tag: "rental",
  tie: rentalPriceTable.tie,
  sortFields: rentalPriceTable.sortable,
  subsets: [
    { name: "cur", holds: (r) => r.valid_to === null, anchors: rentalPriceTable.anchors, global: false },
    { name: "all", holds: () => true, anchors: rentalPriceTable.anchors, global: true }
  ],
  groups: [rentalPriceTable.scope.of],
  subsetsFor: (scope) => (scope._tag === "latest" ? ["cur", "all"] : ["all"]),
  inScope: inVersionScope,
  scopeBounds: versionScopeBounds,
  structures: [rentalPriceFields]
}

interface Summary {
  readonly spellings: ReadonlyArray<GpuSpelling>
  readonly gpus: ReadonlyArray<RentalGpuSummary>
}

/**
 * The rental price store. Besides the table it keeps, under the same hash tag:
 * `current` (hash base_product_key → product_key of its current row), `gpus` (hash GPU → the
 * manufacturer its first row named), `spellings` and `vendors` (sets of msgpack `[gpu, text]`),
 * `listed` (hash GPU → number of current rows) and `version` (bumped by every apply, so the
 * summary is cached until something changes).
 */
export const makeRentalPriceStore = (client: RedisClient): RentalPriceStore["Type"] => {
  const table = makeTable(client, rentalTable)
  const { redis } = client
  const currentKey = table.key("current")
  const gpusKey = table.key("gpus")
  const spellingsKey = table.key("spellings")
  const vendorsKey = table.key("vendors")
  const listedKey = table.key("listed")
  const versionKey = table.key("version")

  const currentOf = async (bases: ReadonlyArray<string>): Promise<Array<string | null>> =>
    bases.length === 0 ? [] : redis.hmget(currentKey, ...bases)

  /** One attempt: read, decide as the reference does, and write if nothing moved meanwhile. */
  const attempt = async (changes: Parameters<RentalPriceStore["Type"]["apply"]>[0]): Promise<StorageConflict | "retry" | undefined> => {
    const closeTo = new Map<string, string>()
    for (const c of changes.close) closeTo.set(c.product_key, c.valid_to)
    const openKeys = [...new Set(changes.open.map((r) => r.product_key))]
    const openBases = [...new Set(changes.open.filter((r) => r.valid_to === null).map((r) => r.base_product_key))]
    const [closing, existing, current] = await Promise.all([table.fetch([...closeTo.keys()]), table.fetch(openKeys), currentOf(openBases)])

    const closed = new Map<string, StoredRow<RentalPrice>>()
    let i = 0
    for (const pk of closeTo.keys()) {
      const stored = closing[i++]
      if (stored === undefined || stored.row.valid_to !== null) return new StorageConflict({ detail: `row ${pk} is no longer current` })
      closed.set(pk, stored)
    }
    const stored = new Map<string, StoredRow<RentalPrice>>()
    openKeys.forEach((pk, j) => {
      const s = existing[j]
      if (s !== undefined) stored.set(pk, s)
    })
    const currentByBase = new Map(openBases.map((b, j) => [b, current[j] ?? null]))
    const takenBases = new Set<string>()
    for (const [base, pk] of currentByBase) if (pk !== null && !closeTo.has(pk)) takenBases.add(base)
    // The last open of a key wins, as in the reference.
    const opens = new Map<string, RentalPrice>()
    for (const r of changes.open) {
      if (stored.has(r.product_key)) return new StorageConflict({ detail: `row ${r.product_key} exists` })
      if (r.valid_to === null) {
        if (takenBases.has(r.base_product_key)) {
          return new StorageConflict({ detail: `product ${r.base_product_key} already has a current row` })
        }
        takenBases.add(r.base_product_key)
      }
      opens.delete(r.product_key)
      opens.set(r.product_key, r)
    }

    const batch = new Batch()
    for (const [pk, s] of closed) batch.expect(table.rowsKey, pk, s.bytes)
    for (const pk of openKeys) batch.expect(table.rowsKey, pk, null)
    for (const [base, pk] of currentByBase) batch.expect(currentKey, base, pk)
    for (const [pk, s] of closed) {
      table.write(batch, s, { ...s.row, valid_to: closeTo.get(pk)! })
      batch.op("HDEL", currentKey, s.row.base_product_key)
      batch.op("HINCRBY", listedKey, s.row.gpu_canonical_name, "-1")
    }
    const seen = new Set<string>()
    const once = (k: string) => (seen.has(k) ? false : (seen.add(k), true))
    for (const r of opens.values()) {
      table.write(batch, undefined, r)
      const gpu = r.gpu_canonical_name
      if (r.valid_to === null) {
        batch.op("HSET", currentKey, r.base_product_key, r.product_key)
        batch.op("HINCRBY", listedKey, gpu, "1")
      }
      // The first row seen for a GPU names its manufacturer, as in the reference.
      if (once(`g\u0000${gpu}`)) batch.op("HSETNX", gpusKey, gpu, r.gpu_manufacturer)
      if (once(`v\u0000${gpu}\u0000${r.vendor}`)) batch.op("SADD", vendorsKey, encode([gpu, r.vendor]))
      for (const s of [r.vendor_gpu_name, r.gpu_model]) if (once(`s\u0000${gpu}\u0000${s}`)) batch.op("SADD", spellingsKey, encode([gpu, s]))
    }
    if (batch.isEmpty) return undefined
    batch.op("INCR", versionKey)
    return (await batch.execute(client)) === 0 ? undefined : "retry"
  }

  let cached: { readonly version: string | null; readonly summary: Summary } | undefined

  const readSummary = async (): Promise<Summary> => {
    const version = await redis.get(versionKey)
    if (cached !== undefined && cached.version === version) return cached.summary
    // One MULTI, so the four structures come from one moment.
    const replies = (await redis.multi().hgetall(gpusKey).smembersBuffer(spellingsKey).smembersBuffer(vendorsKey)
      .hgetall(listedKey).get(versionKey).exec()) ?? []
    for (const [error] of replies) if (error !== null) throw error
    const manufacturers = replies[0]![1] as Record<string, string>
    const pairs = (reply: unknown) => {
      const byGpu = new Map<string, Array<string>>()
      for (const bytes of reply as Array<Buffer>) {
        const [gpu, text] = decode<[string, string]>(bytes)
        const list = byGpu.get(gpu)
        if (list === undefined) byGpu.set(gpu, [text])
        else list.push(text)
      }
      return byGpu
    }
    const spellingsByGpu = pairs(replies[1]![1])
    const vendorsByGpu = pairs(replies[2]![1])
    const listed = replies[3]![1] as Record<string, string>
    const spellings: Array<GpuSpelling> = []
    const gpus = Object.keys(manufacturers).sort(cmp).map((name): RentalGpuSummary => {
      const own = (spellingsByGpu.get(name) ?? []).sort(cmp)
      spellings.push({ gpu_canonical_name: name, spelling: name })
      for (const spelling of own) if (spelling !== name) spellings.push({ gpu_canonical_name: name, spelling })
      return {
        gpu_canonical_name: name,
        gpu_manufacturer: manufacturers[name]!,
        spellings: [...own],
        currently_listed: Number(listed[name] ?? 0) > 0,
        vendors: (vendorsByGpu.get(name) ?? []).sort(cmp)
      }
    })
    const summary: Summary = { spellings, gpus }
    cached = { version: replies[4]![1] as string | null, summary }
    return summary
  }

  return {
    current: (keys) =>
      client.run("rental_prices.current", async () => {
        const bases = [...new Set(keys)]
        const pks = (await currentOf(bases)).filter((pk): pk is string => pk !== null)
        const out: Array<RentalPrice> = []
        for (const s of await table.fetch(pks)) if (s !== undefined && s.row.valid_to === null) out.push(s.row)
        return out
      }),

    apply: (changes) =>
      Effect.flatMap(
        untilApplied(client, "rental_prices.apply", () => attempt(changes), () =>
          new StorageConflict({ detail: "rental prices changed under this write; re-plan it" }), 1),
        (outcome) => (outcome === undefined ? Effect.void : Effect.fail(outcome))
      ),

    page: (plan) => client.run("rental_prices.page", () => table.page(plan)),

    spellings: client.run("rental_prices.spellings", async () => (await readSummary()).spellings),

    gpus: client.run("rental_prices.gpus", async () => (await readSummary()).gpus)
  }
}
