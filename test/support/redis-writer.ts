import { RentalPriceIngest, type RentalPriceObservationInput } from "@gpu-market/core"
import * as RedisStorage from "@gpu-market/storage-redis"
import { Effect, Schedule } from "effect"

/**
 * A rental price feed in its own process, for tests that crash Redis under it:
 * `tsx test/support/redis-writer.ts` with GPU_MARKET_REDIS_URL and GPU_MARKET_REDIS_PREFIX.
 * Batch n ingests WRITER_BATCH_SIZE new products of vendor WRITER_VENDOR whose SKUs are `b<n>-<i>`,
 * and prints `ack <n>` once Redis acknowledged it. A failed batch is retried as it is (ingest is
 * idempotent), so it prints `retry <n>` first. The feed stops after the batch in flight when
 * stdin closes, and prints `done`.
 */

const vendor = process.env.WRITER_VENDOR ?? "v-writer"
const size = Number(process.env.WRITER_BATCH_SIZE ?? 40)
let stopping = false
process.stdin.on("end", () => (stopping = true)).resume()

const batch = (n: number): Array<RentalPriceObservationInput> =>
  Array.from({ length: size }, (_, i) => ({
    vendor, vendor_gpu_name: "H100 SXM", vendor_sku: `b${n}-${i}`, region: "us-east",
    gpu_canonical_name: "h100-sxm", gpu_manufacturer: "nvidia", gpu_model: "H100", gpu_count: 1, gpu_memory_gb: 80,
    contract_type: "ondemand", price_usd_per_gpu_hour: 2 + (i % 7) * 0.25, raw_price: 2 + (i % 7) * 0.25,
    raw_price_unit: "usd_per_instance_hour", extracted_at: "2026-01-01T00:00:00Z"
  }))

const say = (line: string) => Effect.sync(() => process.stdout.write(line + "\n"))

const feed = Effect.gen(function* () {
  const ingest = yield* RentalPriceIngest
  for (let n = 0; !stopping; n++) {
    yield* ingest.ingest(batch(n)).pipe(
      Effect.tapError((e) => say(`retry ${n} ${e._tag}`)),
      Effect.retry({ while: (e) => e._tag === "StorageUnavailable", schedule: Schedule.spaced("100 millis") }),
      Effect.zipRight(say(`ack ${n}`))
    )
    // A feed's pace, so a test's kill lands mid-stream rather than after a burst.
    yield* Effect.sleep("10 millis")
  }
  yield* say("done")
})

Effect.runPromise(feed.pipe(Effect.provide(RentalPriceIngest.Default), Effect.provide(RedisStorage.layerConfig))).then(
  () => process.exit(0),
  (e) => {
    console.error(e)
    process.exit(1)
  }
)
