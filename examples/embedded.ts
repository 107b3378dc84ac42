/**
 * Embedding gpu-market in-process: a SQLite market, a few vendor price observations through the
 * write path, a token, and a `/latest` query — no HTTP anywhere.
 *
 *   npx tsx examples/embedded.ts
 */
import { Auth, marketLayer, type PrincipalInput, RentalPriceIngest, RentalPrices } from "@gpu-market/core"
import { requestOrigin } from "@gpu-market/core/adapters"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Effect, Layer } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const filename = join(mkdtempSync(join(tmpdir(), "gpu-market-example-")), "market.db")
const MarketLive = marketLayer.pipe(Layer.provideMerge(SqliteStorage.layer({ filename })))

const h100 = (vendor: string, price: number, extracted_at: string) => ({
  vendor, vendor_gpu_name: "H100 SXM5 80GB", region: "us-east", gpu_canonical_name: "h100-sxm",
  gpu_manufacturer: "nvidia", gpu_model: "H100", gpu_count: 8, gpu_memory_gb: 80, contract_type: "ondemand",
  price_usd_per_gpu_hour: price, raw_price: price * 8, raw_price_unit: "usd_per_instance_hour", extracted_at
})

const analyst: PrincipalInput = {
  id: "analyst", name: "Example analyst",
  grants: { gpu_rental_prices: { history: { _tag: "unrestricted" } } },
  indices: "all", legacy_custom_index: false, procurement: false, rate_limit_per_minute: 600
}

const program = Effect.gen(function* () {
  const ingest = yield* RentalPriceIngest
  yield* ingest.ingest([h100("lambda", 2.99, "2026-06-01T00:00:00Z"), h100("coreweave", 3.29, "2026-06-01T00:00:00Z")])
  // Lambda cuts its price: the old row closes, a new one opens.
  yield* ingest.ingest([h100("lambda", 2.49, "2026-06-02T00:00:00Z")])

  const auth = yield* Auth
  const secret = yield* auth.issue(analyst)
  const principal = yield* auth.authenticateToken(secret)

  const rental = yield* RentalPrices
  const page = yield* rental.latest({
    principal,
    query: { gpu_canonical_name: "h100-sxm", sort_by: "price_usd_per_gpu_hour" },
    origin: requestOrigin("http://localhost")
  })
  for (const row of page.data) console.log(`${row.vendor.padEnd(10)} ${row.price_usd_per_gpu_hour.toFixed(2)} USD/GPU-h since ${row.valid_from}`)
  const history = yield* rental.history({ principal, query: { start: "2026-06-01", end: "2026-06-03" }, origin: requestOrigin("http://localhost") })
  console.log(`${history.data.length} price changes between 2026-06-01 and 2026-06-02`)
})

Effect.runPromise(program.pipe(Effect.provide(MarketLive))).catch((e) => {
  console.error(e)
  process.exitCode = 1
})
