/**
 * A few vendor price observations and an analyst token, shared by the examples.
 */
import type { Market, PrincipalInput } from "@gpu-market/core"

const h100 = (vendor: string, region: string, price: number, extracted_at: string) => ({
  vendor, vendor_gpu_name: "H100 SXM5 80GB", region, gpu_canonical_name: "h100-sxm", gpu_manufacturer: "nvidia",
  gpu_model: "H100", gpu_count: 8, gpu_memory_gb: 80, contract_type: "ondemand",
  price_usd_per_gpu_hour: price, raw_price: price * 8, raw_price_unit: "usd_per_instance_hour", extracted_at
})

/** Reads rental prices with full history. */
export const analyst: PrincipalInput = {
  id: "analyst", name: "Example analyst",
  grants: { gpu_rental_prices: { history: { _tag: "unrestricted" } } },
  indices: "all", legacy_custom_index: false, procurement: false, rate_limit_per_minute: 600
}

/** Ingests six H100 prices (three vendors, two regions) and returns the analyst's token. */
export const seedSample = async (market: Market): Promise<string> => {
  const vendors = [["lambda", 2.99], ["coreweave", 3.29], ["nebius", 2.95]] as const
  await market.ingest.rental(vendors.flatMap(([vendor, price]) =>
    ["us-east", "eu-west"].map((region) => h100(vendor, region, price, "2026-06-01T00:00:00Z"))))
  return market.tokens.create(analyst)
}
