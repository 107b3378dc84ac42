import { type ImportCounts, parseImportPolicy, type QuarantineRule } from "@gpu-market/core"
import * as Either from "effect/Either"
import { readFileSync } from "node:fs"
import { join } from "node:path"

/**
 * What importing each real SkyPilot catalog (test/fixtures/real/SOURCES.md) gives, whichever way
 * it is imported (the CLI or the Promise API), without a policy: what became of every entry, and
 * the lines rejected. The shipped policy (packages/cli/policies/public-sources.yaml) quarantines
 * those instead.
 */

export const SKYPILOT_CLOUDS = ["cudo", "hyperbolic", "lambda", "nebius", "primeintellect", "runpod", "shadeform", "vast"] as const
export type SkypilotCloud = (typeof SKYPILOT_CLOUDS)[number]

export interface SkypilotExpectation {
  /** Each GPU row is two entries (on-demand and spot), each CPU-only row one. */
  readonly counts: ImportCounts
  /** primeintellect lists runpod__2xH100_80GB__48__502 twice at two prices (lines 102 and 104). */
  readonly rejectedLines: ReadonlyArray<number>
}

const counts = (c: Pick<ImportCounts, "stored" | "duplicate" | "skipped"> & Partial<ImportCounts>): ImportCounts => {
  const rejected = c.rejected ?? {}
  const read = c.stored + c.duplicate + Object.values(c.skipped).reduce((n, x) => n + x, 0) + Object.values(rejected).reduce((n, x) => n + x, 0)
  return { read, stored: c.stored, unchanged: 0, duplicate: c.duplicate, skipped: c.skipped, quarantined: {}, rejected }
}

// Repeats at one instant (runpod's 14 2x_B200 zones, primeintellect's crusoecloud listings) are duplicates: stored once.
export const SKYPILOT_EXPECTED: Record<SkypilotCloud, SkypilotExpectation> = {
  cudo: { counts: counts({ stored: 195, duplicate: 0, skipped: { no_spot: 195 } }), rejectedLines: [] },
  hyperbolic: { counts: counts({ stored: 37, duplicate: 0, skipped: { no_spot: 37 } }), rejectedLines: [] },
  lambda: { counts: counts({ stored: 306, duplicate: 0, skipped: { cpu_only: 17, no_spot: 306 } }), rejectedLines: [] },
  nebius: { counts: counts({ stored: 29, duplicate: 0, skipped: { cpu_only: 40, no_spot: 13 } }), rejectedLines: [] },
  primeintellect: {
    counts: counts({ stored: 428, duplicate: 10, skipped: { no_spot: 440, cpu_only: 97 }, rejected: { conflicting_price: 2 } }),
    rejectedLines: [102, 104]
  },
  runpod: { counts: counts({ stored: 2772, duplicate: 14, skipped: { no_spot: 1214, cpu_only: 750 } }), rejectedLines: [] },
  shadeform: { counts: counts({ stored: 244, duplicate: 0, skipped: { no_spot: 244 } }), rejectedLines: [] },
  vast: { counts: counts({ stored: 61, duplicate: 0, skipped: { no_spot: 61 } }), rejectedLines: [] }
}

/** The shipped import policy for the real public files. */
export const PUBLIC_POLICY_FILE = join(import.meta.dirname, "../../packages/cli/policies/public-sources.yaml")

/** The shipped policy's quarantine rules. */
export const publicQuarantine = (): ReadonlyArray<QuarantineRule> =>
  Either.getOrThrow(parseImportPolicy(readFileSync(PUBLIC_POLICY_FILE, "utf8"))).quarantine ?? []
