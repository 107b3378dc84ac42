/**
 * What importing each real SkyPilot catalog (test/fixtures/real/SOURCES.md) gives, whichever way
 * it is imported: observations converted, rows opened, what was skipped, and the lines refused.
 */

export const SKYPILOT_CLOUDS = ["cudo", "hyperbolic", "lambda", "nebius", "primeintellect", "runpod", "shadeform", "vast"] as const
export type SkypilotCloud = (typeof SKYPILOT_CLOUDS)[number]

export interface SkypilotExpectation {
  readonly observations: number
  /** Rows opened: observations less repeats (runpod's 14 2x_B200 zones, primeintellect's crusoecloud listings) and refusals. */
  readonly opened: number
  readonly skipped: Readonly<Record<string, number>>
  /** primeintellect lists runpod__2xH100_80GB__48__502 twice at two prices (lines 102 and 104). */
  readonly rejectedLines: ReadonlyArray<number>
}

export const SKYPILOT_EXPECTED: Record<SkypilotCloud, SkypilotExpectation> = {
  cudo: { observations: 195, opened: 195, skipped: { no_spot: 195 }, rejectedLines: [] },
  hyperbolic: { observations: 37, opened: 37, skipped: { no_spot: 37 }, rejectedLines: [] },
  lambda: { observations: 306, opened: 306, skipped: { cpu_only: 17, no_spot: 306 }, rejectedLines: [] },
  nebius: { observations: 29, opened: 29, skipped: { cpu_only: 40, no_spot: 13 }, rejectedLines: [] },
  primeintellect: { observations: 440, opened: 428, skipped: { no_spot: 440, cpu_only: 97 }, rejectedLines: [102, 104] },
  runpod: { observations: 2786, opened: 2772, skipped: { no_spot: 1214, cpu_only: 750 }, rejectedLines: [] },
  shadeform: { observations: 244, opened: 244, skipped: { no_spot: 244 }, rejectedLines: [] },
  vast: { observations: 61, opened: 61, skipped: { no_spot: 61 }, rejectedLines: [] }
}
