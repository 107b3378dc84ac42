import { type FxRateInput, type GpuCatalogEntryInput, StorageError } from "@gpu-market/core"
import { cmp, type ProgressMark, type ReferenceDataStore, type ReferencePutSummary } from "@gpu-market/core/storage"
import { Batch, untilApplied } from "./batch.js"
import type { RedisClient } from "./client.js"
import { replies } from "./reads.js"
import { readMark } from "./settings.js"

/**
 * Reference data under the hash tag `{reference}`: `fx` (hash `CCY:date` → USD per unit),
 * `fx:<CCY>` (sorted set of `date:value` members, so the rates of a date range, and the latest
 * before it, are lexical ranges read together in one MULTI), `gpus` (hash slug → the entry as
 * JSON) and `marks` (the progress marks written with them).
 */
export const makeReferenceDataStore = (client: RedisClient): ReferenceDataStore["Type"] => {
  const { redis } = client
  const key = (...parts: ReadonlyArray<string>) => client.keys.key("reference", ...parts)
  const fx = key("fx")
  const gpus = key("gpus")
  const marks = key("marks")
  const member = (date: string, value: string) => `${date}:${value}`

  /**
   * Writes the last record of each hash field with `add`, checking every field still holds what
   * was read, so the counts are exact and a racing writer makes it decide again.
   */
  const put = <A>(
    operation: string,
    hash: string,
    records: ReadonlyArray<A>,
    field: (a: A) => string,
    value: (a: A) => string,
    add: (batch: Batch, a: A, old: string | null) => void,
    mark: ProgressMark | undefined
  ) => {
    const finals = new Map<string, A>()
    for (const r of records) finals.set(field(r), r)
    return untilApplied(client, operation, async (): Promise<ReferencePutSummary | "retry"> => {
      const fields = [...finals.keys()]
      const olds = fields.length === 0 ? [] : await redis.hmget(hash, ...fields)
      const batch = new Batch()
      let inserted = 0
      fields.forEach((f, i) => {
        const r = finals.get(f)!
        const old = olds[i] ?? null
        if (old === null) inserted++
        batch.expect(hash, f, old).op("HSET", hash, f, value(r))
        add(batch, r, old)
      })
      if (mark !== undefined) batch.op("HSET", marks, mark.name, mark.value)
      if (batch.isEmpty) return { inserted: 0, replaced: 0 }
      return (await batch.execute(client)) === 0 ? { inserted, replaced: fields.length - inserted } : "retry"
    }, () => new StorageError({ operation, cause: "the reference data kept changing under this write" }))
  }

  return {
    putFxRates: (rates, mark) =>
      put("reference.putFxRates", fx, rates, (r) => `${r.currency}:${r.date}`, (r) => String(r.usd_per_unit), (batch, r, old) => {
        if (old !== null) batch.op("ZREM", key("fx", r.currency), member(r.date, old))
        batch.op("ZADD", key("fx", r.currency), "0", member(r.date, String(r.usd_per_unit)))
      }, mark),

    fxRates: (currencies, from, to) =>
      client.run("reference.fxRates", async () => {
        if (currencies.length === 0) return []
        const multi = redis.multi()
        for (const c of currencies) {
          // A date's members sort after the bare date and before the date followed by ";".
          multi.zrange(key("fx", c), `(${from}`, "-", "BYLEX", "REV", "LIMIT", 0, 1)
          multi.zrange(key("fx", c), `[${from}`, `(${to};`, "BYLEX")
        }
        const ranges = (await replies(multi)) as Array<Array<string>>
        const out: Array<FxRateInput> = []
        currencies.forEach((currency, i) => {
          for (const m of [...ranges[2 * i]!, ...ranges[2 * i + 1]!]) {
            const at = m.indexOf(":")
            out.push({ currency, date: m.slice(0, at), usd_per_unit: Number(m.slice(at + 1)) })
          }
        })
        return out.sort((a, b) => cmp(a.currency, b.currency) || cmp(a.date, b.date))
      }),

    putGpus: (entries, mark) =>
      put("reference.putGpus", gpus, entries, (e) => e.gpu_canonical_name, (e) => JSON.stringify(e), () => {}, mark),

    gpus: client.run("reference.gpus", async () =>
      Object.entries(await redis.hgetall(gpus))
        .sort(([a], [b]) => cmp(a, b))
        .map(([, json]) => JSON.parse(json) as GpuCatalogEntryInput)),

    mark: readMark(client, marks, "reference.mark")
  }
}
