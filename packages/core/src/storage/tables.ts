import { hardwareClassFields, HardwarePriceRow } from "../schema/hardware-price.js"
import { IndexValueRow } from "../schema/indexes.js"
import { type LlmTokenPrice, LlmTokenPriceRow } from "../schema/llm-token-price.js"
import { type RentalPrice, RentalPriceRow } from "../schema/rental-price.js"
import { TransactionRow } from "../schema/transaction.js"
import { defineTable } from "./table.js"
import type { VersionKeys } from "./versions.js"

/** The market's data types as storage sees them, each defined once (see `TableDef`). */

/** GPU rental prices: versions of each product, current ones per vendor and per GPU. */
export const rentalPriceTable = defineTable(RentalPriceRow, {
  name: "rental_prices",
  tie: "product_key",
  sortable: ["gpu_canonical_name", "gpu_count", "gpu_memory_gb", "price_usd_per_gpu_hour", "region", "valid_from", "vendor"],
  anchors: ["vendor", "gpu_canonical_name"],
  scope: { kind: "versions", of: "base_product_key", unanchoredCurrent: false },
  // Per GPU: the manufacturer its first row named, its spellings, its vendors, whether listed.
  summary: {
    values: [], groupBy: ["gpu_canonical_name"], groupValues: ["gpu_manufacturer", "vendor_gpu_name", "gpu_model", "vendor"],
    span: null, distinct: null, listed: true
  }
})

/** How `transact` names rental rows (`product_key`) and their products (`base_product_key`). */
export const rentalPriceKeys: VersionKeys<RentalPrice> = {
  key: (r) => r[rentalPriceTable.tie],
  base: (r) => r[rentalPriceTable.scope.of]
}

/** LLM token prices: versions of each published price, per model and per serving provider. */
export const llmTokenPriceTable = defineTable(LlmTokenPriceRow, {
  name: "llm_token_prices",
  tie: "price_key",
  sortable: ["model", "serving_provider", "price_type", "price_usd_per_1m_tokens", "source", "valid_from"],
  anchors: ["model", "serving_provider"],
  scope: { kind: "versions", of: "base_price_key", unanchoredCurrent: true },
  // Per model: what its rows named and where it is served, and whether it is listed.
  summary: {
    values: [], groupBy: ["model"],
    groupValues: ["model_family", "model_creator", "model_name", "serving_provider", "source", "price_type", "region", "metric", "qualifiers"],
    span: null, distinct: null, listed: true
  }
})

/**
 * How `transact` names LLM token price rows (`price_key`) and their prices (`base_price_key`);
 * a model's prices are peers, judged together for outliers, and the flag is restatable.
 */
export const llmTokenPriceKeys: VersionKeys<LlmTokenPrice> = {
  key: (r) => r[llmTokenPriceTable.tie],
  base: (r) => r[llmTokenPriceTable.scope.of],
  peers: { field: "model", of: (r) => r.model, restatable: ["is_price_outlier"] }
}

/** GPU hardware prices: a listing's daily observations, per GPU. */
export const hardwarePriceTable = defineTable(HardwarePriceRow, {
  name: "hardware_prices",
  tie: "observation_id",
  sortable: ["condition", "gpu_canonical_name", "observed_date", "price_usd"],
  anchors: ["gpu_canonical_name"],
  scope: { kind: "observations", of: "listing_key", date: "observed_date" },
  // The classification values in use, and per GPU the days covered, rows and listings.
  summary: { values: hardwareClassFields, groupBy: ["gpu_canonical_name"], groupValues: [], span: "observed_date", distinct: "listing_key", listed: false }
})

/** Published transaction blends: rows of a date, per GPU. */
export const transactionTable = defineTable(TransactionRow, {
  name: "transaction_rows",
  tie: "row_key",
  sortable: ["contract_type", "gpu_model", "price_usd_per_gpu_hour", "region_group", "tenor_days", "total_gpu_count", "transaction_date"],
  anchors: ["gpu_canonical_name"],
  scope: { kind: "dated", date: "transaction_date" },
  // The region groups, contracts and tenors published, and per GPU and model the dates covered.
  summary: {
    values: ["region_group", "contract_type", "tenor_days"], groupBy: ["gpu_canonical_name", "gpu_model"], groupValues: [],
    span: "transaction_date", distinct: null, listed: false
  }
})

/** Index values: one per interval of each index; `timestamp` is unique within an index. */
export const indexValueTable = defineTable(IndexValueRow.from, {
  name: "index_values",
  tie: "timestamp",
  sortable: ["timestamp", "value"],
  anchors: [],
  scope: { kind: "intervals", of: "id", at: "timestamp" },
  // An index's coverage is computed from its values by `indexCoverage`, per index asked about.
  summary: null
})
