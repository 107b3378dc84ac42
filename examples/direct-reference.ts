/**
 * The Promise API's token admin and write paths, as the README's reference shows them: a
 * principal for `tokens.create`, and a rental record for `ingest.rental`.
 *
 *   npx tsx examples/direct-reference.ts
 */
import { createMarket, MarketProblemError, memory, type RentalPriceObservationInput } from "@gpu-market/core"

const market = await createMarket({ storage: memory() })

const secret = await market.tokens.create({
  name: "Acme research desk",
  grants: {                                  // data types it may read; a type left out is a 403
    gpu_rental_prices: { history: { _tag: "rolling", days: 90 } },
    gpu_rental_indexes: { history: { _tag: "since", date: "2026-01-01" } },
    llm_token_prices: { history: { _tag: "none" } }         // current values only
  },
  // Optional, with their defaults when left out:
  id: "acme-research",                       // [A-Za-z0-9._-]{1,64}, stable, never the secret; default tok-<12 random hex>
  indices: ["gpu-h100-sxm-na-daily"],        // index ids it holds, or "all"; default [] (none)
  legacy_custom_index: false,                // the /v1/custom-index/current permission; default false
  procurement: false,                        // the /supply service; default false
  rate_limit_per_minute: 600                 // data requests per minute; default 600
})
// A rental-only token needs no more than its name and grant:
await market.tokens.create({ name: "Rental desk", grants: { gpu_rental_prices: { history: { _tag: "none" } } } })

// What the vendor publishes: the GPU as it spells it, the instance's price in its unit. The write
// path resolves the GPU (h100-sxm) through the catalog and stores 23.92 / 8 = 2.99 USD per GPU-hour.
const observation: RentalPriceObservationInput = {
  vendor: "lambda", vendor_gpu_name: "H100 SXM5 80GB", region: "us-east", gpu_count: 8, contract_type: "ondemand",
  raw_price: 23.92, raw_price_unit: "usd_per_instance_hour", extracted_at: "2026-06-01T00:00:00Z"
}
const summary = await market.ingest.rental([observation])
console.log(`opened ${summary.opened} of ${summary.received}`)

const page = await market.rental.prices.latest({ vendor: ["lambda"] }, { token: secret })
console.log(`${page.data[0]?.vendor} ${page.data[0]?.price_usd_per_gpu_hour}`)

try {
  await market.hardware.prices.latest({}, { token: secret })
} catch (e) {
  if (e instanceof MarketProblemError) console.log(`${e.status} ${e.code}`)
}
await market.close()
