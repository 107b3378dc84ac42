import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createMarket, type LocalMarket, MarketProblemError } from "@gpu-market/core"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assertCsvHolds, assertParquetHolds, joined } from "./support/exports"
import { dayIso, LAST_DAY, observations, seed } from "./support/market"

/**
 * `market.export` of the Promise API on a real SQLite file: rows and files equal to walking the
 * pages, the page's refusals, and an export read across a write throws instead of ending short.
 */

const WINDOW = { start: dayIso(0), end: dayIso(LAST_DAY + 1) }

const all = async <A>(iterable: AsyncIterable<A>) => {
  const out: Array<A> = []
  for await (const a of iterable) out.push(a)
  return out
}

describe("market.export", () => {
  let market: LocalMarket
  beforeAll(async () => {
    market = await createMarket({ storage: SqliteStorage.layer({ filename: join(mkdtempSync(join(tmpdir(), "gpu-market-export-promise-")), "market.db") }) })
    await market.runtime.runPromise(seed)
  }, 120_000)
  afterAll(() => market?.close())

  it("gives the rows the pages give, as rows and as files, with an estimate", async () => {
    const paged = await all(market.rental.prices.history.rows({ ...WINDOW, page_size: 1000 }, { token: "all" }))
    const exported = await market.export("rental.prices.history", { ...WINDOW, page_size: 17 }, { token: "all" })
    assert.strictEqual(exported.dataType, "gpu_rental_prices")
    assert.deepStrictEqual(await all(exported.rows()), paged)
    const csv = joined(await all(exported.bytes("csv")))
    assertCsvHolds("gpu_rental_prices", csv, paged)
    const parquet = joined(await all(exported.bytes("parquet")))
    await assertParquetHolds("gpu_rental_prices", parquet, paged)
    assert.deepStrictEqual(await exported.estimate(), {
      rows: paged.length,
      bytes: { csv: csv.length, jsonl: joined(await all(exported.bytes("jsonl"))).length, parquet: parquet.length }
    })
  })

  it("refuses what the page refuses", async () => {
    const refused = await market.export("rental.prices.history", WINDOW, { token: "current" }).catch((e: unknown) => e)
    assert.instanceOf(refused, MarketProblemError)
    assert.strictEqual((refused as MarketProblemError).problem.status, 403)
    const bad = await market.export("rental.prices.latest", { colour: "red" }, { token: "all" }).catch((e: unknown) => e)
    assert.strictEqual((bad as MarketProblemError).problem.status, 422)
  })

  it("throws while reading rows that changed since the watermark, never ending short", async () => {
    const exported = await market.export("rental.prices.history", { ...WINDOW, page_size: 5 }, { token: "all" })
    const changed = observations(LAST_DAY).slice(0, 3).map((o) => ({ ...o, price_usd_per_gpu_hour: 7.5, raw_price: 7.5 * o.gpu_count, extracted_at: new Date().toISOString() }))
    let read = 0
    const failed = await (async () => {
      for await (const _ of exported.rows()) if (++read === 1) await market.ingest.rental(changed)
    })().catch((e: unknown) => e)
    assert.instanceOf(failed, MarketProblemError)
    assert.strictEqual((failed as MarketProblemError).problem.status, 503)
    assert.include((failed as MarketProblemError).problem.detail, exported.watermark)
    assert.isBelow(read, 10)
  })
})
