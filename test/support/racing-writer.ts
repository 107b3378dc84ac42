import { createMarket, type Market, MarketProblemError, type RentalPriceObservationInput } from "@gpu-market/core"
import { redis } from "@gpu-market/storage-redis"
import { sqlite } from "@gpu-market/storage-sqlite"
import { createInterface } from "node:readline"

/**
 * One of two writers racing on one product, in its own process (so two SQLite connections really
 * write at once, not in turns on one thread): `tsx test/support/racing-writer.ts` with RACE_DB (a
 * SQLite file) or RACE_REDIS_URL and RACE_REDIS_PREFIX, RACE_PARITY (0 or 1), and RACE_ROUNDS. It opens its market, prints `ready`, and on `go` from stdin ingests, each minute its
 * own call, in time order, as fast as it can: every minute below 2 * rounds (two replicas of
 * one feed). Every refusal is recorded, not retried, and the last line it prints is `result <json>`.
 */

/** The product both writers price: one identity, a new price every minute. */
export const RACE_VENDOR = "v-race"
/** Minute 0 of the race: a fixed instant in the past, so the expected history is exact. */
export const RACE_START_MS = Date.UTC(2025, 5, 1)

/** The price of minute `m`: different every minute, so every observation is a price change. */
export const racePrice = (m: number) => Math.round((2 + m * 0.001) * 10_000) / 10_000
export const raceInstant = (m: number) => new Date(RACE_START_MS + m * 60_000).toISOString()

export const raceObservation = (m: number): RentalPriceObservationInput => ({
  vendor: RACE_VENDOR, vendor_gpu_name: "H100 SXM", vendor_sku: "race-1x", region: "us-east",
  gpu_canonical_name: "h100-sxm", gpu_manufacturer: "nvidia", gpu_model: "H100", gpu_count: 1, gpu_memory_gb: 80,
  contract_type: "ondemand", price_usd_per_gpu_hour: racePrice(m), raw_price: racePrice(m),
  raw_price_unit: "usd_per_instance_hour", extracted_at: raceInstant(m)
})

/** What a writer reports. */
export interface RaceResult {
  readonly parity: number
  readonly calls: number
  readonly written: number
  readonly refused: ReadonlyArray<{ readonly minute: number; readonly status: number; readonly detail: string }>
}

const main = async () => {
  const parity = Number(process.env.RACE_PARITY)
  const rounds = Number(process.env.RACE_ROUNDS)
  const minutes = Array.from({ length: 2 * rounds }, (_, m) => m)
  const storage = process.env.RACE_DB !== undefined
    ? sqlite(process.env.RACE_DB)
    : redis(process.env.RACE_REDIS_URL!, process.env.RACE_REDIS_PREFIX)
  const market: Market = await createMarket({ storage })
  process.stdout.write("ready\n")
  // Both writers start on one signal, so they race from the first minute.
  for await (const line of createInterface({ input: process.stdin })) if (line === "go") break
  const refused: Array<RaceResult["refused"][number]> = []
  let written = 0
  for (const minute of minutes) {
    try {
      await market.ingest.rental([raceObservation(minute)])
      written++
    } catch (e) {
      const problem = e instanceof MarketProblemError ? e.problem : undefined
      refused.push({
        minute,
        status: problem?.status ?? 0,
        detail: problem === undefined ? String(e) : `${problem.code}: ${problem.detail}${JSON.stringify((problem as { errors?: unknown }).errors ?? "")}`
      })
    }
  }
  await market.close()
  const result: RaceResult = { parity, calls: minutes.length, written, refused }
  process.stdout.write(`result ${JSON.stringify(result)}\n`)
}

// Run only as a script: the test imports the observation builders above.
if (process.argv[1]?.endsWith("racing-writer.ts") === true) {
  main().then(() => process.exit(0), (e) => {
    console.error(e)
    process.exit(1)
  })
}
