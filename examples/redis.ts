/**
 * One market shared through Redis by two processes: a writer ingests vendor prices and issues a
 * token; a reader, with its own connection, authenticates that token and queries what the
 * writer wrote. Here the two "processes" are two runtimes in one Node process; across machines
 * it is the same code with the same GPU_MARKET_REDIS_URL.
 *
 *   GPU_MARKET_REDIS_URL=redis://127.0.0.1:6379 npx tsx examples/redis.ts
 */
import { Auth, PageTokens, type PrincipalInput, RentalPriceIngest, RentalPrices } from "@gpu-market/core"
import { requestOrigin } from "@gpu-market/core/adapters"
import * as RedisStorage from "@gpu-market/storage-redis"
import { Effect, Layer, ManagedRuntime } from "effect"
import { Redis } from "ioredis"

const url = process.env.GPU_MARKET_REDIS_URL ?? "redis://127.0.0.1:6379"
// A fresh namespace per run, removed at the end, so the example never meets an earlier run's data.
const prefix = `gpu-market-example-${Date.now().toString(36)}`

/** The rental market over Redis: what each process builds for itself. */
const rentalMarket = Layer.mergeAll(RentalPrices.Default, RentalPriceIngest.Default, Auth.Default).pipe(
  Layer.provideMerge(PageTokens.layerFromStorage),
  Layer.provideMerge(RedisStorage.layer({ url, prefix }))
)

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

const writes = Effect.gen(function* () {
  const ingest = yield* RentalPriceIngest
  yield* ingest.ingest([h100("lambda", 2.99, "2026-06-01T00:00:00Z"), h100("coreweave", 3.29, "2026-06-01T00:00:00Z")])
  // Lambda cuts its price: the old row closes, a new one opens, in one atomic write.
  yield* ingest.ingest([h100("lambda", 2.49, "2026-06-02T00:00:00Z")])
  return yield* (yield* Auth).issue(analyst)
})

const reads = (secret: string) =>
  Effect.gen(function* () {
    const principal = yield* (yield* Auth).authenticateToken(secret)
    const rental = yield* RentalPrices
    const origin = requestOrigin("http://localhost")
    const page = yield* rental.latest({ principal, query: { gpu_canonical_name: "h100-sxm", sort_by: "price_usd_per_gpu_hour" }, origin })
    for (const row of page.data) console.log(`${row.vendor.padEnd(10)} ${row.price_usd_per_gpu_hour.toFixed(2)} USD/GPU-h since ${row.valid_from}`)
    const history = yield* rental.history({ principal, query: { start: "2026-06-01", end: "2026-06-03" }, origin })
    console.log(`${history.data.length} price changes between 2026-06-01 and 2026-06-02`)
  })

/** Deletes this run's keys. */
const cleanUp = async () => {
  const redis = new Redis(url, { lazyConnect: true })
  await redis.connect()
  for await (const keys of redis.scanStream({ match: `${prefix}:*`, count: 500 })) if (keys.length > 0) await redis.unlink(...(keys as Array<string>))
  await redis.quit()
}

const main = async () => {
  const writer = ManagedRuntime.make(rentalMarket)
  const reader = ManagedRuntime.make(rentalMarket)
  try {
    const secret = await writer.runPromise(writes)
    console.log(`writer: ingested 3 observations into ${url} under ${prefix}`)
    await reader.runPromise(reads(secret))
  } finally {
    await writer.dispose()
    await reader.dispose()
    await cleanUp()
  }
}

main().catch((e) => {
  console.error(e)
  process.exitCode = 1
})
