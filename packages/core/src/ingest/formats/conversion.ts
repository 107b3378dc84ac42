import type { RejectionReason, SourcePlace } from "./report.js"

/**
 * What converting a public format yields: observations for a write path, each with where it came
 * from, what was left out on purpose (counted by reason), and what could not be read.
 */

/** One observation converted from a public format, and its place in the source. */
export interface Converted<O> extends SourcePlace {
  readonly observation: O
}

/** Something in the source that could not be read as written (a rejection of the import), and what the converter did about it. */
export interface ConversionIssue extends SourcePlace {
  readonly reason: RejectionReason
  readonly message: string
}

/** The result of converting one file. */
export interface Conversion<O> {
  readonly observations: ReadonlyArray<Converted<O>>
  /** Rows or prices left out on purpose, by reason (e.g. `cpu_only`, `no_spot`, `non_token_price`). */
  readonly skipped: Readonly<Record<string, number>>
  readonly issues: ReadonlyArray<ConversionIssue>
  /** Why the text is not in the format at all (no SkyPilot header, not a LiteLLM table): nothing of it can be imported. */
  readonly unrecognised?: string
}

/** A tally of skip reasons, built as a conversion runs. */
export const skipTally = () => {
  const counts: Record<string, number> = {}
  return {
    skip: (reason: string, n = 1) => {
      counts[reason] = (counts[reason] ?? 0) + n
    },
    counts
  }
}

/**
 * A lower-case slug of a name as a source writes it: runs of anything but letters, digits, `.`,
 * `_` and `-` become one `-`, and the ends lose separators. `"US - us-midwest-1"` is
 * `us-us-midwest-1`, `"Czechia, CZ, EU"` is `czechia-cz-eu`. Empty when nothing is left.
 */
export const slugOf = (text: string): string =>
  text.toLowerCase().replace(/[^a-z0-9._-]+/g, "-").replace(/-{2,}/g, "-").replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, "")
