import { assert, describe, layer } from "@effect/vitest"
import {
  Auth, basePriceKey, baseProductKey, HardwarePriceIngest, IngestBounds, IndexComputation, type IndexDefinitionInput, IndexIngest, LlmTokenPriceIngest, type LlmTokenPriceObservationInput, marketLayer, type MarketServices, type Principal, RentalPriceIngest, type RentalPriceObservationInput, type Storage, TransactionIngest
} from "@gpu-market/core"
import { MemoryStorage, SettingsStore } from "@gpu-market/core/storage"
import * as RedisStorage from "@gpu-market/storage-redis"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Context, Effect, FastCheck as fc, Layer, TestClock } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { hardwareObservation, HW_CHANNELS, HW_CONDITIONS, HW_COUNTRIES, HW_GPUS, HW_LAST_DAY, HW_LISTINGS, HW_STOCK, hwDate } from "./support/hardware"
import { FIXTURE_DEFINITIONS, FIXTURE_PRODUCTS, FIXTURE_WEIGHTS } from "./support/indexes"
import { LAST_DAY as LLM_LAST_DAY, LLM, llmObservations } from "./support/llm"
import { dayIso, GPUS, http, NOW_MS, TOKENS, VENDORS } from "./support/market"
import { TX, TX_CONTRACTS, TX_GPUS, TX_LAST_DAY, TX_REGIONS, txDate, txDeals } from "./support/transactions"
import { TestRedis, testRedisLayer, uniquePrefix } from "./support/redis"

/**
 * Differential test: one generated market, written through the write path into memory, SQLite
 * and Redis, must read back as IDENTICAL HTTP replies on every backend, page by page to the last
 * page (status, body including `meta.next` and the rate-limit headers). The three backends share
 * their secrets, so the page tokens in `meta.next` and the hardware listing keys compare equal too.
 *
 * A data type joins the test with one `TypeCase` (its market, how it is written, its queries);
 * only types with a Redis store belong here.
 */

/**
 * The deployment secrets kept in `SettingsStore`, the same on every backend, so page tokens and
 * hardware listing keys compare equal.
 */
const SECRETS = {
  page_token_secret: "differential-test-page-token-secret-0123456789",
  hardware_listing_key_secret: "differential-test-listing-key-secret-0123456789"
}
const DAY_MS = 86_400_000
const HOUR_MS = 3_600_000
/** Day 0 of generated markets; day 9 still lies before the fixture's "now". */
const DAY0_MS = NOW_MS - 10 * DAY_MS
const instant = (day: number, hour = 0) => new Date(DAY0_MS + day * DAY_MS + hour * HOUR_MS).toISOString()
const date = (day: number) => instant(day).slice(0, 10)
const MAX_PAGES = 400

/** One data type under test. */
interface TypeCase<Market> {
  readonly name: string
  readonly market: fc.Arbitrary<Market>
  /** Writes the market through the type's write path. */
  readonly write: (market: Market) => Effect.Effect<void, unknown, MarketServices>
  /** Paths (with query) to read, each followed through all its pages. */
  readonly queries: (market: Market) => fc.Arbitrary<ReadonlyArray<string>>
  /** Generated markets to compare (default 20). */
  readonly runs?: number
}

/** A comma list of 1..n distinct values from `values`. */
const someOf = <A>(values: ReadonlyArray<A>, n = 2) =>
  fc.uniqueArray(fc.constantFrom(...values), { minLength: 1, maxLength: n }).map((xs) => xs.join(","))
/** The query string of the defined parameters. */
const query = (params: Record<string, string | number | undefined>) =>
  Object.entries(params).filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`).join("&")
/** `arb` one time in `n`, otherwise absent. */
const oneIn = <A>(n: number, arb: fc.Arbitrary<A>) =>
  fc.oneof({ arbitrary: arb, weight: 1 }, { arbitrary: fc.constant(undefined), weight: n - 1 })

// ---- rental prices ----

interface RentalProduct {
  readonly vendor: string
  readonly gpu: number
  readonly region: string
  readonly contract: string
  readonly count: number
  readonly availability: string | null
}
/** An ingest batch at (day, hour): products with a price step each; then some withdrawn half an hour later. */
interface RentalBatch {
  readonly at: readonly [day: number, hour: number]
  readonly prices: ReadonlyArray<readonly [product: number, step: number]>
  readonly withdraw: ReadonlyArray<number>
}
interface RentalMarket {
  readonly products: ReadonlyArray<RentalProduct>
  readonly batches: ReadonlyArray<RentalBatch>
}

const rentalObservation = (p: RentalProduct, step: number, at: string): RentalPriceObservationInput => {
  const gpu = GPUS[p.gpu]!
  // Few distinct prices, so sorts by price tie often and the tie-breaker decides.
  const price = 1 + p.gpu * 0.5 + step * 0.25
  return {
    vendor: p.vendor, vendor_gpu_name: gpu.names[VENDORS.indexOf(p.vendor)]!, vendor_sku: p.count === 8 ? `${gpu.slug}-8x` : null,
    region: p.region, gpu_canonical_name: gpu.slug, gpu_manufacturer: "nvidia", gpu_model: gpu.model, gpu_count: p.count,
    gpu_memory_gb: gpu.memory, contract_type: p.contract, availability: p.availability, price_usd_per_gpu_hour: price,
    raw_price: price * p.count, raw_price_unit: "usd_per_instance_hour", extracted_at: at
  }
}
const rentalBase = (p: RentalProduct) => baseProductKey({
  vendor_sku: null, vendor_region: null, instance_type: null, instance_variant: null, os: null, contract_term: null,
  ...rentalObservation(p, 0, instant(0))
})

const rentalMarket: fc.Arbitrary<RentalMarket> = fc.uniqueArray(
  fc.record({
    vendor: fc.constantFrom(...VENDORS),
    gpu: fc.integer({ min: 0, max: GPUS.length - 1 }),
    region: fc.constantFrom("us-east", "eu-west"),
    contract: fc.constantFrom("ondemand", "spot"),
    count: fc.constantFrom(1, 8),
    availability: fc.constantFrom("available", "limited", null)
  }),
  { minLength: 1, maxLength: 14, selector: (p) => `${p.vendor}/${p.gpu}/${p.region}/${p.contract}/${p.count}` }
).chain((products) =>
  fc.uniqueArray(
    fc.record({
      at: fc.tuple(fc.integer({ min: 0, max: 9 }), fc.integer({ min: 0, max: 23 })),
      prices: fc.uniqueArray(fc.tuple(fc.nat(products.length - 1), fc.nat(3)), { minLength: 1, maxLength: products.length, selector: ([i]) => i }),
      withdraw: fc.uniqueArray(fc.nat(products.length - 1), { maxLength: 2 })
    }),
    { minLength: 1, maxLength: 12, selector: (b) => b.at[0] * 24 + b.at[1] }
  ).map((batches) => ({ products, batches: [...batches].sort((a, b) => a.at[0] * 24 + a.at[1] - (b.at[0] * 24 + b.at[1])) }))
)

const rental: TypeCase<RentalMarket> = {
  name: "rental prices",
  market: rentalMarket,
  write: (market) =>
    Effect.gen(function* () {
      const ingest = yield* RentalPriceIngest
      for (const batch of market.batches) {
        const at = instant(...batch.at)
        yield* ingest.ingest(batch.prices.map(([i, step]) => rentalObservation(market.products[i]!, step, at)))
        if (batch.withdraw.length > 0) {
          yield* ingest.withdraw(batch.withdraw.map((i) => rentalBase(market.products[i]!)), instant(batch.at[0], batch.at[1] + 0.5))
        }
      }
    }),
  queries: (market) => {
    const anchors = fc.record({
      vendor: oneIn(2, someOf(VENDORS)),
      gpu_canonical_name: oneIn(3, someOf(GPUS.map((g) => g.slug))),
      gpu_search: oneIn(4, someOf(["h100", "a100-sxm", "l40", "tesla", "80g", "nvidia"])),
      base_product_key: oneIn(8, fc.constantFrom(...market.products.map(rentalBase)))
    })
    const narrowing = fc.record({
      region: oneIn(5, someOf(["us-east", "eu-west", "ap-south"])),
      contract_type: oneIn(5, someOf(["ondemand", "spot"])),
      availability: oneIn(6, fc.constantFrom("available", "limited")),
      min_price_usd_per_gpu_hour: oneIn(6, fc.constantFrom(1, 1.5, 2.25)),
      max_price_usd_per_gpu_hour: oneIn(6, fc.constantFrom(1.75, 2.5, 3)),
      min_gpu_count: oneIn(6, fc.constantFrom(1, 2, 8)),
      max_gpu_memory_gb: oneIn(6, fc.constantFrom(48, 80))
    })
    const sort = fc.record({
      sort_by: oneIn(2, fc.constantFrom("gpu_canonical_name", "gpu_count", "gpu_memory_gb", "price_usd_per_gpu_hour", "region", "valid_from", "vendor")),
      sort_order: oneIn(2, fc.constantFrom("asc", "desc")),
      page_size: fc.oneof(fc.integer({ min: 1, max: 4 }), fc.constant(100))
    })
    const time = fc.tuple(fc.integer({ min: 0, max: 10 }), fc.integer({ min: 0, max: 23 }), fc.constantFrom(0, 30))
    const at = time.map(([d, h, m]) => new Date(DAY0_MS + d * DAY_MS + h * HOUR_MS + m * 60_000).toISOString())
    const bound = fc.oneof(fc.integer({ min: 0, max: 10 }).map(date), at)
    const base = "/api/v2/gpu/rental/prices"
    const read = fc.oneof(
      { weight: 3, arbitrary: fc.tuple(anchors, narrowing, sort).map(([a, n, s]) => `${base}/latest?${query({ ...a, ...n, ...s })}`) },
      { weight: 3, arbitrary: fc.tuple(anchors, narrowing, sort, at).map(([a, n, s, t]) => `${base}/as-of?${query({ ...a, ...n, ...s, at: t })}`) },
      {
        weight: 3,
        arbitrary: fc.tuple(anchors, narrowing, sort, oneIn(2, bound), oneIn(2, bound)).map(([a, n, s, start, end]) =>
          `${base}/history?${query({ ...a, ...n, ...s, start, end })}`)
      },
      { weight: 1, arbitrary: fc.constant(`${base}/metadata`) }
    )
    return fc.array(read, { minLength: 2, maxLength: 6 })
  }
}

// ---- hardware prices: some fixture listings (test/support/hardware.ts) on some days ----

interface HardwareMarket {
  readonly listings: ReadonlyArray<number>
  readonly days: ReadonlyArray<number>
}

const hardware: TypeCase<HardwareMarket> = {
  name: "hardware prices",
  market: fc.record({
    listings: fc.uniqueArray(fc.nat(HW_LISTINGS - 1), { minLength: 1, maxLength: 12 }),
    days: fc.uniqueArray(fc.nat(HW_LAST_DAY), { minLength: 1, maxLength: 8 }).map((days) => [...days].sort((a, b) => a - b))
  }),
  write: (market) =>
    Effect.gen(function* () {
      const ingest = yield* HardwarePriceIngest
      for (const day of market.days) {
        const observations = market.listings.flatMap((l) => hardwareObservation(l, day) ?? [])
        if (observations.length > 0) yield* ingest.ingest(observations)
      }
    }),
  queries: (market) => {
    const filters = fc.record({
      gpu_canonical_name: oneIn(3, someOf(HW_GPUS)),
      condition: oneIn(5, someOf(HW_CONDITIONS)),
      market: oneIn(6, someOf(["primary", "secondary"])),
      channel: oneIn(6, someOf(HW_CHANNELS)),
      stock_status: oneIn(6, someOf(HW_STOCK)),
      country: oneIn(6, someOf(HW_COUNTRIES.map(([c]) => c))),
      country_group: oneIn(6, someOf(["north_america", "europe", "apac"])),
      min_price_usd: oneIn(6, fc.constantFrom(20_000, 300_000)),
      max_price_usd: oneIn(6, fc.constantFrom(30_000, 1_000_000)),
      sort_by: oneIn(2, fc.constantFrom("condition", "gpu_canonical_name", "observed_date", "price_usd")),
      sort_order: oneIn(2, fc.constantFrom("asc", "desc")),
      page_size: fc.oneof(fc.integer({ min: 1, max: 4 }), fc.constant(100))
    })
    // Mostly a day of the market (or the next), so as-of and windows land on rows.
    const day = fc.oneof(fc.constantFrom(...market.days).chain((d) => fc.constantFrom(d, d + 1)), fc.nat(HW_LAST_DAY + 1)).map(hwDate)
    const base = "/api/v2/gpu/hardware/prices"
    return fc.array(fc.oneof(
      { weight: 3, arbitrary: filters.map((f) => `${base}/latest?${query(f)}`) },
      { weight: 3, arbitrary: fc.tuple(filters, day).map(([f, at]) => `${base}/as-of?${query({ ...f, at })}`) },
      { weight: 3, arbitrary: fc.tuple(filters, oneIn(2, day), oneIn(2, day)).map(([f, start, end]) => `${base}/history?${query({ ...f, start, end })}`) },
      { weight: 1, arbitrary: fc.constant(`${base}/metadata`) }
    ), { minLength: 2, maxLength: 6 })
  }
}

// ---- aggregated transactions: the fixture deals (test/support/transactions.ts) of some days ----

const transactions: TypeCase<ReadonlyArray<number>> = {
  name: "transactions",
  market: fc.uniqueArray(fc.nat(TX_LAST_DAY), { minLength: 1, maxLength: 5 }).map((days) => [...days].sort((a, b) => a - b)),
  write: (days) => Effect.flatMap(TransactionIngest, (ingest) => Effect.forEach(days, (day) => ingest.record(txDeals(day)), { discard: true })),
  queries: (days) => {
    const day = fc.oneof(fc.constantFrom(...days).chain((d) => fc.constantFrom(d, d + 1)), fc.nat(TX_LAST_DAY + 1)).map(txDate)
    const history = fc.record({
      gpu_canonical_name: oneIn(3, someOf(TX_GPUS.map((g) => g.slug))),
      region_group: oneIn(4, someOf(TX_REGIONS)),
      contract_type: oneIn(4, someOf(TX_CONTRACTS.map((c) => c.type))),
      min_total_gpu_count: oneIn(6, fc.constantFrom(8, 16, 40)),
      max_total_gpu_count: oneIn(6, fc.constantFrom(16, 64)),
      sort_by: oneIn(2, fc.constantFrom("contract_type", "gpu_model", "price_usd_per_gpu_hour", "region_group", "tenor_days", "total_gpu_count", "transaction_date")),
      sort_order: oneIn(2, fc.constantFrom("asc", "desc")),
      // A day's deals are a dozen rows or more (rolling rows too): pages of 1 would be hundreds of calls.
      page_size: fc.oneof(fc.integer({ min: 3, max: 8 }), fc.constant(100)),
      start: oneIn(2, day),
      end: oneIn(2, day)
    })
    return fc.array(fc.oneof(
      { weight: 9, arbitrary: history.map((q) => `${TX}/history?${query(q)}`) },
      { weight: 1, arbitrary: fc.constant(`${TX}/metadata`) }
    ), { minLength: 2, maxLength: 6 })
  }
}

// ---- LLM token prices: the fixture prices (test/support/llm.ts) of some series, on some days and hours ----

/** A fixture series: one serving provider's prices of one model. */
const seriesOf = (o: LlmTokenPriceObservationInput) => `${o.serving_provider}/${o.model}`
const LLM_SERIES = [...new Set(Array.from({ length: LLM_LAST_DAY + 1 }, (_, day) => llmObservations(day).map(seriesOf)).flat())]
const LLM_PRICE_TYPES = ["input", "output", "cached_input"]
const llmInstant = (day: number, hour: number) => new Date(Date.parse(dayIso(day)) + hour * HOUR_MS).toISOString()
const llmBase = (o: LlmTokenPriceObservationInput) => basePriceKey({ region: "global", metric: "tokens", qualifiers: null, ...o })

/**
 * An ingest batch at (fixture day, hour): the day's fixture prices of the market's series but
 * `skip`, those of `bump` times a factor (a move, up to an outlier); then the series of
 * `withdraw` withdrawn half an hour later.
 */
interface LlmBatch {
  readonly at: readonly [day: number, hour: number]
  readonly skip: ReadonlyArray<string>
  readonly bump: readonly [series: string, factor: number] | undefined
  readonly withdraw: ReadonlyArray<string>
}
interface LlmMarket {
  readonly series: ReadonlyArray<string>
  readonly batches: ReadonlyArray<LlmBatch>
}

const llmBatch = (market: LlmMarket, batch: LlmBatch): Array<LlmTokenPriceObservationInput> =>
  llmObservations(batch.at[0]).flatMap((o) => {
    const series = seriesOf(o)
    if (!market.series.includes(series) || batch.skip.includes(series)) return []
    const factor = batch.bump?.[0] === series ? batch.bump[1] : 1
    return [{ ...o, price_usd_per_1m_tokens: o.price_usd_per_1m_tokens * factor, raw_price: o.raw_price * factor, extracted_at: llmInstant(...batch.at) }]
  })

const llm: TypeCase<LlmMarket> = {
  name: "LLM token prices",
  runs: 30,
  market: fc.uniqueArray(fc.constantFrom(...LLM_SERIES), { minLength: 3, maxLength: LLM_SERIES.length }).chain((series) =>
    fc.uniqueArray(
      fc.record({
        at: fc.tuple(fc.nat(LLM_LAST_DAY - 1), fc.nat(23)),
        skip: fc.uniqueArray(fc.constantFrom(...series), { maxLength: 1 }),
        bump: oneIn(2, fc.tuple(fc.constantFrom(...series), fc.constantFrom(1.5, 6))),
        withdraw: fc.uniqueArray(fc.constantFrom(...series), { maxLength: 1 })
      }),
      { minLength: 1, maxLength: 8, selector: (b) => b.at[0] * 24 + b.at[1] }
    ).map((batches) => ({ series, batches: [...batches].sort((a, b) => a.at[0] * 24 + a.at[1] - (b.at[0] * 24 + b.at[1])) }))
  ),
  write: (market) =>
    Effect.gen(function* () {
      const ingest = yield* LlmTokenPriceIngest
      for (const batch of market.batches) {
        const observations = llmBatch(market, batch)
        if (observations.length > 0) yield* ingest.ingest(observations)
        const withdrawn = llmObservations(batch.at[0]).filter((o) => batch.withdraw.includes(seriesOf(o))).map(llmBase)
        if (withdrawn.length > 0) yield* ingest.withdraw(withdrawn, llmInstant(batch.at[0], batch.at[1] + 0.5))
      }
    }),
  queries: (market) => {
    const observed = market.batches.flatMap((b) => llmBatch(market, b))
    // Filters around one observed price, so most queries match rows; a list may add other values.
    const around = (value: string | null | undefined, others: ReadonlyArray<string>, n: number) =>
      oneIn(n, fc.subarray([...others]).map((xs) => [...new Set([value ?? "global", ...xs])].join(",")))
    const filters = fc.constantFrom(...observed).chain((o) => fc.record({
      model: around(o.model, ["gpt-4o"], 3),
      serving_provider: around(o.serving_provider, ["p-alpha"], 4),
      source: around(o.source, [], 6),
      price_type: around(o.price_type, LLM_PRICE_TYPES, 4),
      region: around(o.region, ["eu-west"], 6),
      model_search: oneIn(6, someOf(["llama", "gpt-4o", "deepseek-chat", "mixtral", "70b", "legacy"])),
      base_price_key: oneIn(10, fc.constant(llmBase(o))),
      min_price_usd_per_1m_tokens: oneIn(6, fc.constantFrom(1, 0.5).map((k) => Math.floor(o.price_usd_per_1m_tokens * k * 100) / 100)),
      max_price_usd_per_1m_tokens: oneIn(6, fc.constantFrom(1, 3).map((k) => Math.ceil(o.price_usd_per_1m_tokens * k * 100) / 100)),
      exclude_outliers: oneIn(3, fc.constantFrom("true", "false")),
      sort_by: oneIn(2, fc.constantFrom("model", "serving_provider", "price_type", "price_usd_per_1m_tokens", "source", "valid_from")),
      sort_order: oneIn(2, fc.constantFrom("asc", "desc")),
      page_size: fc.oneof(fc.integer({ min: 1, max: 6 }), fc.constant(100))
    }))
    // Mostly at or a little after a batch (its withdrawal half an hour on, the next day), so as-of and windows land on rows.
    const at = fc.oneof(
      { weight: 4, arbitrary: fc.tuple(fc.constantFrom(...market.batches), fc.constantFrom(0, 0.5, 1, 12, 24, 48)).map(([b, h]) => llmInstant(b.at[0], b.at[1] + h)) },
      { weight: 2, arbitrary: fc.constantFrom(...market.batches).map((b) => dayIso(b.at[0] + 1).slice(0, 10)) },
      { weight: 1, arbitrary: fc.nat(LLM_LAST_DAY).map((d) => dayIso(d).slice(0, 10)) }
    )
    return fc.array(fc.oneof(
      { weight: 3, arbitrary: filters.map((f) => `${LLM}/latest?${query(f)}`) },
      { weight: 3, arbitrary: fc.tuple(filters, at).map(([f, t]) => `${LLM}/as-of?${query({ ...f, at: t })}`) },
      { weight: 3, arbitrary: fc.tuple(filters, oneIn(2, at), oneIn(2, at)).map(([f, start, end]) => `${LLM}/history?${query({ ...f, start, end })}`) },
      { weight: 1, arbitrary: fc.constant(`${LLM}/metadata`) }
    ), { minLength: 2, maxLength: 6 })
  }
}

// ---- indices: the fixture definitions (test/support/indexes.ts) over generated rental moves and administered values ----

const MINUTE_MS = 60_000
const JUNE_MS = Date.UTC(2026, 5, 1)
/** The instant `minutes` after 2026-06-01T00:00Z; the fixture's products are first priced at minute 0. */
const june = (minutes: number) => new Date(JUNE_MS + minutes * MINUTE_MS).toISOString()
/** The last minute of generated index markets: the fixture's "now". */
const JUNE_END = (NOW_MS - JUNE_MS) / MINUTE_MS
const DAY_MINUTES = 1440
const INTRADAY_FROM = 9 * DAY_MINUTES

/** An administered intraday index beside the fixture's daily one, so administered values have 30-minute publication edges too. */
const INDEX_DEFINITIONS: ReadonlyArray<IndexDefinitionInput> = [
  ...FIXTURE_DEFINITIONS,
  { ...FIXTURE_DEFINITIONS.find((d) => d.id === "adm-daily")!, id: "adm-intraday", row_type: "intraday", publication: "end_of_30_minute_interval", interval: "PT30M" }
]
const INDEX_IDS = INDEX_DEFINITIONS.map((d) => d.id)
const indexDefinition = (id: string) => INDEX_DEFINITIONS.find((d) => d.id === id)!
/** `ids` and the components of its reference indices, which are defined with them. */
const withComponents = (ids: ReadonlyArray<string>) => {
  const wanted = new Set(ids.flatMap((id) => { const i = indexDefinition(id).inputs; return i.kind === "reference" ? [id, ...i.components] : [id] }))
  return INDEX_IDS.filter((id) => wanted.has(id))
}

/** An administered value: index, interval start in minutes (a day's midnight for the daily index), value. */
type Administered = readonly [id: "adm-daily" | "adm-intraday", start: number, value: number]

/**
 * An index market. Phase one, at `definedAt`: the products not `late` and their moves so far,
 * the fleet weights, the definitions (computing what is due) and the administered values
 * complete by then. Phase two, at `readAt` (the reads' clock): the rest of the moves and the
 * `late` products (data arriving after their intervals were computed), the other administered
 * values complete by then, `restated` ones with a new value, and maybe a recomputation of a
 * range of days, which picks up the late data there.
 */
interface IndexMarket {
  readonly products: ReadonlyArray<number>
  readonly late: ReadonlyArray<number>
  /** Price moves in time order: the product's new price at a minute, or null for its withdrawal. */
  readonly moves: ReadonlyArray<readonly [product: number, minute: number, price: number | null]>
  readonly ids: ReadonlyArray<string>
  readonly definedAt: number
  readonly readAt: number
  readonly administered: ReadonlyArray<Administered>
  readonly restated: ReadonlyArray<Administered>
  readonly recompute: readonly [fromDay: number, toDay: number] | undefined
}

const administeredEnd = ([id, start]: Administered) => start + (id === "adm-daily" ? DAY_MINUTES : 30)
const publication = ([id, start, value]: Administered) =>
  ({ id, timestamp: id === "adm-daily" ? june(start).slice(0, 10) : june(start), value })

const indexMarket: fc.Arbitrary<IndexMarket> = fc.record({
  // Most products, so most intervals have the two vendors a value needs.
  products: fc.subarray(FIXTURE_PRODUCTS.map((_, i) => i), { minLength: FIXTURE_PRODUCTS.length - 3 }),
  // Some computed indices, and mostly an administered one or both.
  ids: fc.tuple(
    fc.uniqueArray(fc.constantFrom(...INDEX_IDS.filter((id) => indexDefinition(id).source === "computed")), { minLength: 1, maxLength: 3 }),
    fc.subarray(INDEX_IDS.filter((id) => indexDefinition(id).source === "administered"))
  ).map(([computed, administered]) => withComponents([...computed, ...administered])),
  // Reads in the last days, on, just after or just before a 30-minute publication edge; the definitions any time before.
  times: fc.tuple(fc.nat(3 * DAY_MINUTES / 30), fc.constantFrom(0, 1, 29)).chain(([slot, m]) => {
    const readAt = JUNE_END - slot * 30 - (m === 0 ? 0 : 30) + m
    return fc.nat(readAt).map((definedAt) => [definedAt, readAt] as const)
  }),
  administered: fc.uniqueArray(fc.oneof(
    fc.integer({ min: 0, max: 14 }).map((d): Administered => ["adm-daily", d * DAY_MINUTES, 2 + d / 100]),
    fc.integer({ min: INTRADAY_FROM / 30, max: JUNE_END / 30 }).map((slot): Administered => ["adm-intraday", slot * 30, 2 + (slot % 48) / 100])
  ), { minLength: 2, maxLength: 24, selector: ([id, start]) => `${id}/${start}` })
}).chain(({ products, ids, times: [definedAt, readAt], administered }) => fc.record({
  products: fc.constant(products),
  late: fc.subarray(products, { maxLength: 2 }),
  moves: fc.uniqueArray(fc.tuple(fc.constantFrom(...products), fc.integer({ min: 1, max: JUNE_END }), fc.constantFrom(1, 1.5, 2, 2.8, 3, 4, null)), {
    maxLength: 16, selector: ([p, minute]) => `${p}/${minute}`
  }).map((moves) => [...moves].sort((a, b) => a[1] - b[1])),
  ids: fc.constant(ids),
  definedAt: fc.constant(definedAt),
  readAt: fc.constant(readAt),
  administered: fc.constant(administered),
  restated: fc.subarray(administered, { minLength: 1, maxLength: Math.min(3, administered.length) }).map((xs) => xs.map(([id, start, value]): Administered => [id, start, value + 0.5])),
  recompute: oneIn(2, fc.tuple(fc.nat(13), fc.integer({ min: 1, max: 3 })).map(([from, days]) => [from, from + days] as const))
}))

const indexes: TypeCase<IndexMarket> = {
  name: "indices",
  runs: 40,
  market: indexMarket,
  write: (market) =>
    Effect.gen(function* () {
      const rental = yield* RentalPriceIngest
      const ingest = yield* IndexIngest
      const computation = yield* IndexComputation
      const defined = (v: Administered) => market.ids.includes(v[0])
      const move = ([p, minute, price]: IndexMarket["moves"][number]) => {
        const product = FIXTURE_PRODUCTS[p]!
        return price === null
          ? Effect.asVoid(rental.withdraw([baseProductKey({ vendor_sku: null, vendor_region: null, instance_type: null, instance_variant: null, os: null, contract_term: null, ...product })], june(minute)))
          : Effect.asVoid(rental.ingest([{ ...product, price_usd_per_gpu_hour: price, raw_price: price * product.gpu_count, extracted_at: june(minute) }]))
      }
      const inPhaseOne = ([p, minute]: IndexMarket["moves"][number]) => !market.late.includes(p) && minute <= market.definedAt

      yield* TestClock.setTime(JUNE_MS + market.definedAt * MINUTE_MS)
      yield* rental.ingest(market.products.filter((p) => !market.late.includes(p)).map((p) => FIXTURE_PRODUCTS[p]!))
      yield* Effect.forEach(market.moves.filter(inPhaseOne), move, { discard: true })
      yield* ingest.setFleetWeights(FIXTURE_WEIGHTS)
      yield* ingest.define(market.ids.map(indexDefinition))
      const early = market.administered.filter((v) => defined(v) && administeredEnd(v) <= market.definedAt)
      if (early.length > 0) yield* ingest.publish(early.map(publication))

      yield* TestClock.setTime(JUNE_MS + market.readAt * MINUTE_MS)
      if (market.late.length > 0) yield* rental.ingest(market.late.map((p) => FIXTURE_PRODUCTS[p]!))
      yield* Effect.forEach(market.moves.filter((m) => !inPhaseOne(m)), move, { discard: true })
      const later = [...market.administered, ...market.restated].filter((v) => defined(v) && administeredEnd(v) <= market.readAt && !early.includes(v))
      // A restatement may repeat a value of this batch: each goes in its own batch, in order.
      yield* Effect.forEach(later, (v) => ingest.publish([publication(v)]), { discard: true })
      if (market.recompute !== undefined) {
        const [from, to] = market.recompute
        yield* computation.computeRange(june(from * DAY_MINUTES), june(to * DAY_MINUTES))
      }
    }),
  queries: (market) => {
    const BASE = "/api/v2/gpu/rental/indexes"
    // Mostly an index of the market; h100-west-daily never has the two vendors a value needs.
    const id = fc.oneof(
      { weight: 9, arbitrary: fc.constantFrom(...market.ids.filter((i) => i !== "h100-west-daily"), market.ids[0]!) },
      { weight: 1, arbitrary: fc.constantFrom(...INDEX_IDS) }
    ).map(indexDefinition)
    // Publication edges of the index's intervals: a second before, on, a second and ten minutes after; or a date.
    const edge = (d: IndexDefinitionInput) => fc.oneof(
      {
        weight: 4,
        arbitrary: fc.tuple(fc.integer({ min: d.row_type === "daily" ? 0 : INTRADAY_FROM / 30, max: Math.ceil(market.readAt / 30) }), fc.constantFrom(-1, 0, 1, 600))
          .map(([slot, s]) => new Date(JUNE_MS + slot * 30 * MINUTE_MS + s * 1000).toISOString().replace(".000Z", "Z"))
      },
      { weight: 1, arbitrary: fc.integer({ min: -1, max: 15 }).map((day) => june(day * DAY_MINUTES).slice(0, 10)) }
    )
    // A daily index has a value a day, an intraday one 48: pages of a few rows, or of 8 to 40, walk several pages.
    const sort = (d: IndexDefinitionInput) => fc.record({
      sort_by: oneIn(2, fc.constantFrom("timestamp", "value")),
      sort_order: oneIn(2, fc.constantFrom("asc", "desc")),
      page_size: fc.oneof(
        { weight: 3, arbitrary: d.row_type === "daily" ? fc.integer({ min: 1, max: 5 }) : fc.integer({ min: 8, max: 40 }) },
        { weight: 1, arbitrary: fc.constant(100) }
      )
    })
    const span = fc.constantFrom(6 * 60, DAY_MINUTES, 3 * DAY_MINUTES).map((m) => m * MINUTE_MS)
    const window = (d: IndexDefinitionInput) => fc.oneof(
      fc.tuple(oneIn(3, edge(d)), oneIn(3, edge(d))).map(([start, end]) => ({ start, end })),
      fc.tuple(edge(d), span).map(([start, ms]) => ({ start, end: new Date(Date.parse(start) + ms).toISOString() }))
    )
    return fc.array(fc.oneof(
      { weight: 2, arbitrary: id.map((d) => `${BASE}/latest?id=${d.id}`) },
      { weight: 3, arbitrary: id.chain((d) => edge(d).map((at) => `${BASE}/as-of?${query({ id: d.id, at })}`)) },
      { weight: 4, arbitrary: id.chain((d) => fc.tuple(window(d), sort(d)).map(([w, s]) => `${BASE}/history?${query({ id: d.id, ...w, ...s })}`)) },
      {
        weight: 1,
        arbitrary: fc.constantFrom(`${BASE}/metadata`, "/api/v1/info-index/available", "/api/v1/custom-index/current",
          ...market.ids.map((i) => `/api/v1/custom-index/current?index_id=${i}`))
      }
    ), { minLength: 2, maxLength: 6 })
  }
}

/** The types compared. */
const TYPES: ReadonlyArray<TypeCase<any>> = [rental, hardware, transactions, llm, indexes]

/** The caller of every query: full history of every type, a limit it never reaches. */
const caller: Principal = {
  ...TOKENS.all,
  grants: {
    ...TOKENS.all.grants,
    gpu_hardware_prices: { history: { _tag: "unrestricted" } },
    gpu_rental_transactions: { history: { _tag: "unrestricted" } },
    llm_token_prices: { history: { _tag: "unrestricted" } },
    gpu_rental_indexes: { history: { _tag: "unrestricted" } }
  },
  legacy_custom_index: true
}

// ---- backends ----

/** The shared secrets, stored before the market's services read them. */
const sharedSecret = Layer.effectDiscard(Effect.flatMap(SettingsStore, (s) => Effect.forEach(Object.entries(SECRETS), ([k, v]) => s.getOrSet(k, v))))
/** LLM bounds wide enough for the fixture's 1000× mistake moved 6× more: the cases compare backends, not bounds. */
const wideBounds = IngestBounds.layer({ llm: { min: 0, max: 1_000_000 } })
const market = <E, R>(storage: Layer.Layer<Storage, E, R>) =>
  marketLayer.pipe(Layer.provide(wideBounds), Layer.provideMerge(Layer.provideMerge(sharedSecret, storage)))

const sqliteStorage = Layer.unwrapScoped(Effect.map(
  Effect.acquireRelease(Effect.sync(() => mkdtempSync(join(tmpdir(), "gpu-market-differential-"))), (dir) =>
    Effect.sync(() => rmSync(dir, { recursive: true, force: true }))),
  (dir) => SqliteStorage.layer({ filename: join(dir, "market.db") })
))
/** Redis for every type it stores, under a fresh prefix; memory only fills the types it does not store yet. */
const redisStorage = Layer.unwrapEffect(Effect.map(TestRedis, (server) =>
  Layer.merge(MemoryStorage.layer, RedisStorage.layer({ url: server.url, prefix: uniquePrefix("differential") }))))

const BACKENDS = {
  memory: market(MemoryStorage.layer),
  sqlite: market(sqliteStorage),
  redis: market(redisStorage)
}

/** What a caller sees of one page; must be the same on every backend (a problem's `request_id` is per request). */
const observe = (path: string) =>
  Effect.map(http(path, { token: "all" }), (r) => ({
    status: r.status,
    body: r.body?.request_id === undefined ? r.body ?? r.text : { ...r.body, request_id: "…" },
    limit: [r.headers.get("x-ratelimit-limit"), r.headers.get("x-ratelimit-remaining"), r.headers.get("x-ratelimit-reset")]
  }))

describe("backends agree", () => {
  layer(testRedisLayer(), { timeout: "60 seconds" })((it) => {
    for (const type of TYPES) {
      it.effect.prop(
        `${type.name}: memory, SQLite and Redis give identical envelopes, page by page`,
        { run: type.market.chain((m) => fc.tuple(fc.constant(m), type.queries(m))) },
        ({ run: [generated, paths] }) =>
          Effect.gen(function* () {
            yield* TestClock.setTime(NOW_MS)
            const contexts = yield* Effect.forEach(Object.values(BACKENDS), (backend) =>
              Effect.gen(function* () {
                const context = yield* Layer.build(backend)
                yield* Effect.provide(Effect.flatMap(Auth, (auth) => auth.issue(caller, "all")), context)
                yield* Effect.provide(type.write(generated), context)
                return context
              }))
            const names = Object.keys(BACKENDS)
            let pages = 0
            for (const first of paths) {
              let path: string | null = first
              while (path !== null) {
                const replies = yield* Effect.forEach(contexts, (context) => Effect.provide(observe(path!), context as Context.Context<MarketServices>))
                assert.notStrictEqual(replies[0]!.status, 500, JSON.stringify(replies[0]!.body))
                // Compared as text, so a failure shows a readable diff of the two replies.
                const texts = replies.map((r) => JSON.stringify(r, null, 1))
                for (let i = 1; i < texts.length; i++) assert.strictEqual(texts[i], texts[0], `${names[i]} vs ${names[0]}: ${path}`)
                const next = replies[0]!.status === 200 ? replies[0]!.body.meta?.next : undefined
                path = next ? next.url.slice("http://market.test".length) : null
                assert.isBelow(++pages, MAX_PAGES)
              }
            }
          }).pipe(Effect.scoped),
        { timeout: 240_000, fastCheck: { numRuns: type.runs ?? 20 } }
      )
    }
  })
})
