import { assert } from "@effect/vitest"
import { type Market, MarketProblemError } from "@gpu-market/core"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { observations, TOKENS } from "./market"

/**
 * A small fixture market seeded through the Promise API (the same observations and tokens as the
 * Effect fixture, over days 0..10), for the adapter tests: direct calls, worker, handlers, client.
 */

/** The last fixture day seeded here (2026-05-11). */
export const ADAPTER_LAST_DAY = 10

/** A fresh SQLite file name in a new temporary folder. */
export const tempDb = (label: string) => join(mkdtempSync(join(tmpdir(), `gpu-market-${label}-`)), "market.db")

/** Seeds `market` with the fixture's first days and tokens (each token's secret is its key). */
export const seedMarket = async (market: Market) => {
  for (let day = 0; day <= ADAPTER_LAST_DAY; day++) await market.ingest.rental(observations(day))
  for (const [name, principal] of Object.entries(TOKENS)) await market.tokens.create(principal, name)
}

/** The rejection of a call, which must be a `MarketProblemError`. */
export const problemOf = async (call: Promise<unknown>): Promise<MarketProblemError> => {
  try {
    await call
  } catch (e) {
    assert.instanceOf(e, MarketProblemError)
    return e as MarketProblemError
  }
  return assert.fail("the call succeeded")
}
