import { describe, expectTypeOf, it } from "@effect/vitest"
import type {
  HardwarePriceQuery, IndexQuery, LlmTokenPriceQuery, Market, RentalPriceQuery, TransactionQuery
} from "@gpu-market/core"

/**
 * The Promise API's query types are derived from the collection declarations
 * (`packages/core/src/market/<type>.ts`): each has exactly the declared parameters, lists as one
 * value or several, numbers as numbers or their text, and `sort_by` over the type's sort fields.
 * Adding a filter to a declaration changes its query type here, and only there.
 */

type List = string | ReadonlyArray<string>
type Num = number | string
interface Paging<Sort extends string> {
  readonly page_size?: number
  readonly sort_by?: Sort
  readonly sort_order?: "asc" | "desc"
  readonly page_token?: string
}
/** Flattens an interface to its properties, so two spellings of one type compare equal. */
type Flat<T> = { [K in keyof T]: T[K] }

describe("the Promise API's query types", () => {
  it("rental prices: the declared filters, gpu_search and the sort fields", () => {
    expectTypeOf<RentalPriceQuery>().toEqualTypeOf<Flat<Paging<
      "gpu_canonical_name" | "gpu_count" | "gpu_memory_gb" | "price_usd_per_gpu_hour" | "region" | "valid_from" | "vendor"
    > & {
      readonly vendor?: List
      readonly gpu_canonical_name?: List
      readonly region?: List
      readonly contract_type?: List
      readonly base_product_key?: string
      readonly product_key?: string
      readonly availability?: string
      readonly min_price_usd_per_gpu_hour?: Num
      readonly max_price_usd_per_gpu_hour?: Num
      readonly min_gpu_count?: Num
      readonly max_gpu_count?: Num
      readonly min_gpu_memory_gb?: Num
      readonly max_gpu_memory_gb?: Num
      readonly gpu_search?: List
    }>>()
  })

  it("hardware prices: the declared filters and the sort fields", () => {
    expectTypeOf<HardwarePriceQuery>().toEqualTypeOf<Flat<Paging<"condition" | "gpu_canonical_name" | "observed_date" | "price_usd"> & {
      readonly gpu_canonical_name?: List
      readonly listing_key?: string
      readonly condition?: List
      readonly market?: List
      readonly channel?: List
      readonly transaction_level?: List
      readonly stock_status?: List
      readonly country?: List
      readonly country_group?: List
      readonly min_price_usd?: Num
      readonly max_price_usd?: Num
    }>>()
  })

  it("transactions: the declared filters, the sort fields and the window of /history", () => {
    expectTypeOf<TransactionQuery>().toEqualTypeOf<Flat<Paging<
      "contract_type" | "gpu_model" | "price_usd_per_gpu_hour" | "region_group" | "tenor_days" | "total_gpu_count" | "transaction_date"
    > & {
      readonly gpu_canonical_name?: List
      readonly region_group?: List
      readonly contract_type?: List
      readonly min_total_gpu_count?: Num
      readonly max_total_gpu_count?: Num
      readonly start?: string | Date
      readonly end?: string | Date
    }>>()
  })

  it("LLM token prices: the declared filters, model_search, exclude_outliers and the sort fields", () => {
    expectTypeOf<LlmTokenPriceQuery>().toEqualTypeOf<Flat<Paging<
      "model" | "serving_provider" | "price_type" | "price_usd_per_1m_tokens" | "source" | "valid_from"
    > & {
      readonly model?: List
      readonly serving_provider?: List
      readonly source?: List
      readonly price_type?: List
      readonly region?: List
      readonly base_price_key?: string
      readonly price_key?: string
      readonly min_price_usd_per_1m_tokens?: Num
      readonly max_price_usd_per_1m_tokens?: Num
      readonly model_search?: List
      readonly exclude_outliers?: boolean
    }>>()
  })

  it("indexes: the required id and the sort fields", () => {
    expectTypeOf<IndexQuery>().toEqualTypeOf<Flat<Paging<"timestamp" | "value"> & { readonly id: string }>>()
  })

  it("the calls take them: an index call needs its id, a rental one may name none", () => {
    expectTypeOf<Market["indices"]["latest"]>().parameter(0).toEqualTypeOf<IndexQuery>()
    expectTypeOf<Market["rental"]["prices"]["latest"]>().parameter(0).toEqualTypeOf<RentalPriceQuery | undefined>()
    expectTypeOf<Market["rental"]["prices"]["asOf"]>().parameter(0).toMatchTypeOf<{ readonly at: string | Date }>()
  })
})
