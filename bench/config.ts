import * as path from "node:path"
import { fileURLToPath } from "node:url"

/**
 * Every size and duration of a benchmark run in one place, so quick mode differs from the full
 * run only here.
 */

/**
 * Bump when the generator's output changes: the cache file is named after it, so an old market
 * is never measured by mistake.
 */
export const GENERATOR_VERSION = 1

export const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url))
export const REPO_ROOT = path.resolve(BENCH_DIR, "..")
export const DATA_DIR = path.join(BENCH_DIR, ".data")

/** The GPU every benchmark query anchors on: the most listed one in the generated market. */
export const POPULAR_GPU = "h100-sxm"
export const SORT_BY = "price_usd_per_gpu_hour"

/** Secret of the bench principal's bearer token (the market stores only its hash). */
export const BENCH_TOKEN = "bench-token-0123456789"

export interface BenchConfig {
  readonly quick: boolean
  readonly dbFile: string
  /** Products generated; each has several versions (closed rows plus one current row). */
  readonly products: number
  /** Rows per `RentalPriceStore.transact` (one `putVersions`) while building. */
  readonly batchRows: number
  /** (a) and (b): calls per subject, after `warmup` untimed calls each. */
  readonly iterations: number
  readonly warmup: number
  /** Timed calls are split into this many rounds, alternating subjects, so both see the same noise. */
  readonly rounds: number
  /** (b): the page size and the deep page compared with page 1. */
  readonly deepPageSize: number
  readonly deepPage: number
  /** (c): autocannon settings, in seconds. */
  readonly connections: number
  readonly httpWarmupSeconds: number
  readonly httpSeconds: number
  readonly httpRuns: number
  /** (h), (i): timed starts per subject, after one untimed warm-up start each. */
  readonly startupRuns: number
}

export const configFromEnv = (env: NodeJS.ProcessEnv = process.env): BenchConfig => {
  const quick = env.BENCH_QUICK === "1"
  return quick
    ? {
        quick,
        dbFile: path.join(DATA_DIR, `market-v${GENERATOR_VERSION}-quick.db`),
        products: 12_000,
        batchRows: 20_000,
        iterations: 400,
        warmup: 100,
        rounds: 10,
        deepPageSize: 10,
        // The quick market has ~2,000 current rows of the popular GPU: page 100 is as deep as it goes.
        deepPage: 100,
        connections: 10,
        httpWarmupSeconds: 1,
        httpSeconds: 2,
        httpRuns: 1,
        startupRuns: 3
      }
    : {
        quick,
        dbFile: path.join(DATA_DIR, `market-v${GENERATOR_VERSION}.db`),
        products: 120_000,
        batchRows: 20_000,
        iterations: 2_000,
        warmup: 300,
        rounds: 20,
        // No GPU has 100,000 current rows in a 120,000-product market, so page 1,000 is reached
        // with 10-row pages (rows 9,991..10,000 of the anchor).
        deepPageSize: 10,
        deepPage: 1_000,
        connections: 10,
        httpWarmupSeconds: 5,
        httpSeconds: 10,
        // Five runs rather than three: the median then survives one run hit by a neighbour's burst.
        httpRuns: 5,
        startupRuns: 7
      }
}
