/**
 * @gpu-market/core on its own: an in-memory market (no file, no server, no other package)
 * through the Promise API, then through the Effect services.
 *
 *   npx tsx examples/memory.ts
 */
import { createMarket, MarketProblemError, memory } from "@gpu-market/core"
import { Auth, marketLayer, RentalPriceIngest, RentalPrices, requestOrigin } from "@gpu-market/core"
import { Effect, Layer } from "effect"

const market = await createMarket({ storage: memory() })
await market.ingest.rental([{
  vendor: "lambda", vendor_gpu_name: "H100 SXM5 80GB", region: "us-east", gpu_count: 8, contract_type: "ondemand",
  raw_price: 19.92, raw_price_unit: "usd_per_instance_hour", extracted_at: "2026-06-01T00:00:00Z"
}])
const token = await market.tokens.create({ name: "Analyst", grants: { gpu_rental_prices: { history: { _tag: "unrestricted" } } } })
const page = await market.rental.prices.latest({ gpu_canonical_name: ["h100-sxm"] }, { token })
console.log(`${page.data[0]?.vendor} ${page.data[0]?.price_usd_per_gpu_hour}`) // lambda 2.49
try {
  await market.rental.prices.latest({}, { token }) // no anchor (vendor, GPU, …): a 400
} catch (e) {
  if (e instanceof MarketProblemError) console.log(`${e.status} ${e.code}`) // 400 missing_anchor
}
await market.close()

// The same market as Effect services: marketLayer over a storage layer.
const MarketLive = marketLayer.pipe(Layer.provideMerge(memory()))
const program = Effect.gen(function* () {
  yield* (yield* RentalPriceIngest).ingest([{
    vendor: "coreweave", vendor_gpu_name: "H100 SXM5 80GB", region: "us-east", gpu_count: 8, contract_type: "ondemand",
    raw_price: 26.32, raw_price_unit: "usd_per_instance_hour", extracted_at: "2026-06-01T00:00:00Z"
  }])
  const auth = yield* Auth
  const principal = yield* auth.authenticateToken(yield* auth.issue({
    id: "analyst", name: "Analyst", grants: { gpu_rental_prices: { history: { _tag: "none" } } },
    indices: [], legacy_custom_index: false, procurement: false, rate_limit_per_minute: 600
  }))
  // Queries here are the HTTP query string's parameters: lists are comma-separated text.
  return yield* (yield* RentalPrices).latest({ principal, query: { vendor: "coreweave" }, origin: requestOrigin("http://localhost") })
})
const effectPage = await Effect.runPromise(program.pipe(Effect.provide(MarketLive)))
console.log(`Effect: ${effectPage.data[0]?.vendor} ${effectPage.data[0]?.price_usd_per_gpu_hour}`) // Effect: coreweave 3.29
