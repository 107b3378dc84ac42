import { type RentalPrice, rentalPriceFields } from "@gpu-market/core"
import {
  type GpuSpelling, cmp, type RentalGpuSummary, rentalPriceEvents, rentalPriceKeys, type RentalPriceStore, rentalPriceTable
} from "@gpu-market/core/storage"
import type { RedisClient } from "./client.js"
import { decode, encode } from "./codec.js"
import { makeTable, type RowCacheOptions } from "./table.js"
import { readMark } from "./settings.js"
import { redisTransact, versionTableSpec } from "./versions.js"
import { readVersion } from "./data-version.js"

/**
 * Rental rows as a table (`versionTableSpec`): current rows indexed per vendor and per GPU for
 * `/latest`, which needs an anchor; every version indexed the same way plus globally.
 */
export const rentalTable = versionTableSpec<RentalPrice>(rentalPriceTable, "rental", { structures: [rentalPriceFields] })

interface Summary {
  readonly spellings: ReadonlyArray<GpuSpelling>
  readonly gpus: ReadonlyArray<RentalGpuSummary>
}

/**
 * The rental price store. Besides the table it keeps, under the same hash tag:
 * `current` (hash base_product_key → product_key of its current row), `gpus` (hash GPU → the
 * manufacturer its first row named), `spellings` and `vendors` (sets of msgpack `[gpu, text]`),
 * `listed` (hash GPU → number of current rows) and `version` (bumped by every write, so the
 * summary is cached until something changes).
 */
export const makeRentalPriceStore = (client: RedisClient, rowCache?: RowCacheOptions): RentalPriceStore["Type"] => {
  const table = makeTable(client, rentalTable, rowCache)
  const keys = table.keys("current", "gpus", "spellings", "vendors", "listed", "version", "marks")
  const { redis } = client

  let cached: { readonly version: string | null; readonly summary: Summary } | undefined

  const readSummary = async (): Promise<Summary> => {
    const version = await redis.get(keys.version)
    if (cached !== undefined && cached.version === version) return cached.summary
    // One MULTI, so the four structures come from one moment.
    const replies = (await redis.multi().hgetall(keys.gpus).smembersBuffer(keys.spellings).smembersBuffer(keys.vendors)
      .hgetall(keys.listed).get(keys.version).exec()) ?? []
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
    mark: readMark(client, keys.marks, "rental_prices.mark"),

    version: readVersion(client, keys.version, "rental_prices.version"),
    transact: redisTransact(client, "rental_prices.transact", {
      table,
      keys: rentalPriceKeys,
      baseField: rentalPriceTable.scope.of,
      toStored: (row) => row,
      fromStored: (row) => row,
      currentKey: keys.current,
      versionKey: keys.version,
      marksKey: keys.marks,
      events: rentalPriceEvents,
      closed: (batch, row) => batch.op("HINCRBY", keys.listed, row.gpu_canonical_name, "-1"),
      opened: (batch, r, once) => {
        const gpu = r.gpu_canonical_name
        if (r.valid_to === null) batch.op("HINCRBY", keys.listed, gpu, "1")
        // The first row seen for a GPU names its manufacturer, as in the reference.
        if (once(`g\u0000${gpu}`)) batch.op("HSETNX", keys.gpus, gpu, r.gpu_manufacturer)
        if (once(`v\u0000${gpu}\u0000${r.vendor}`)) batch.op("SADD", keys.vendors, encode([gpu, r.vendor]))
        for (const s of [r.vendor_gpu_name, r.gpu_model]) if (once(`s\u0000${gpu}\u0000${s}`)) batch.op("SADD", keys.spellings, encode([gpu, s]))
      }
    }),

    page: (plan) => client.run("rental_prices.page", () => table.page(plan)),

    spellings: client.run("rental_prices.spellings", async () => (await readSummary()).spellings),

    gpus: client.run("rental_prices.gpus", async () => (await readSummary()).gpus)
  }
}
