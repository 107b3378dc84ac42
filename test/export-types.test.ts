import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createMarket, type DataType, type ExportName, type LocalMarket, MarketProblemError } from "@gpu-market/core"
import * as Demo from "@gpu-market/demo"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assertCsvHolds, assertJsonlHolds, assertParquetHolds, joined } from "./support/exports"

/**
 * Every paged endpoint of every data type exports what its pages hold, in every format read back
 * (Parquet by hyparquet), on the demo market in a SQLite file: the columns of each type (lists,
 * booleans, integers, dates, instants, nulls) survive each format.
 */

const yesterday = new Date(Date.now() - 86_400_000).toISOString()

/** Each paged endpoint with a query it answers with rows on the demo market. */
const CASES: ReadonlyArray<readonly [ExportName, DataType, Record<string, string>]> = [
  ["rental.prices.latest", "gpu_rental_prices", { gpu_canonical_name: "h100-sxm" }],
  ["rental.prices.asOf", "gpu_rental_prices", { gpu_canonical_name: "h100-sxm", at: yesterday }],
  ["rental.prices.history", "gpu_rental_prices", { gpu_canonical_name: "h100-sxm" }],
  ["hardware.prices.latest", "gpu_hardware_prices", {}],
  ["hardware.prices.asOf", "gpu_hardware_prices", { at: yesterday }],
  ["hardware.prices.history", "gpu_hardware_prices", {}],
  ["transactions.history", "gpu_rental_transactions", {}],
  ["llm.tokenPrices.latest", "llm_token_prices", { model: "gpt-4o" }],
  ["llm.tokenPrices.asOf", "llm_token_prices", { model: "gpt-4o", at: yesterday }],
  ["llm.tokenPrices.history", "llm_token_prices", { model: "gpt-4o" }],
  ["indices.latest", "gpu_rental_indexes", { id: "gpu-h100-sxm-na-daily" }],
  ["indices.asOf", "gpu_rental_indexes", { id: "gpu-h100-sxm-na-daily", at: yesterday }],
  ["indices.history", "gpu_rental_indexes", { id: "gpu-h100-sxm-na-intraday" }]
]

const all = async <A>(iterable: AsyncIterable<A>) => {
  const out: Array<A> = []
  for await (const a of iterable) out.push(a)
  return out
}

describe("exports of every data type", () => {
  let market: LocalMarket
  beforeAll(async () => {
    market = await createMarket({ storage: SqliteStorage.layer({ filename: join(mkdtempSync(join(tmpdir(), "gpu-market-export-types-")), "market.db") }) })
    await market.runtime.runPromise(Demo.seedDemo({ days: 3 }))
  }, 300_000)
  afterAll(() => market?.close())

  for (const [name, dataType, query] of CASES) {
    it(`${name}: the rows its pages hold, in every format`, async () => {
      const [namespace, method] = [name.slice(0, name.lastIndexOf(".")), name.slice(name.lastIndexOf(".") + 1)]
      // The paged call of the same endpoint, found by its dotted name.
      const calls = namespace.split(".").reduce((node: any, key) => node[key], market)[method] as { rows: (q: object, o: object) => AsyncIterable<Record<string, unknown>> }
      const paged = await all(calls.rows({ ...query, page_size: 1000 }, { token: "demo-all" })).catch((e: unknown) => e)
      assert.notInstanceOf(paged, MarketProblemError, JSON.stringify((paged as MarketProblemError).problem))
      const rows = paged as Array<Record<string, unknown>>
      assert.isAbove(rows.length, 0, "the demo market answers it with rows")
      const exported = await market.export(name, { ...query, page_size: "97" }, { token: "demo-all" })
      assert.strictEqual(exported.dataType, dataType)
      assert.deepStrictEqual(await all(exported.rows()), rows)
      assertCsvHolds(dataType, joined(await all(exported.bytes("csv"))), rows)
      assertJsonlHolds(joined(await all(exported.bytes("jsonl"))), rows)
      await assertParquetHolds(dataType, joined(await all(exported.bytes("parquet"))), rows)
    }, 120_000)
  }
})
