import * as Schema from "effect/Schema"

/**
 * The descriptive fields of a hardware row (`payment_terms`, `includes_nics`,
 * `includes_cooling_hw`, `software_entitlements`, each item of `services_included`) hold terms of
 * a vocabulary, never text as a source wrote it: a source's text is read into terms by one small
 * grammar (`termsOf`), and ingest keeps a term only when the field's vocabulary holds it. A
 * seller's name, address or number, however spelt, is not a term of the vocabulary, so it cannot
 * be stored.
 */

/**
 * A term of a descriptive field's vocabulary: lower-case ASCII letters and digits in words joined
 * by single hyphens (`connectx-7`, `net-30`, `rear-door`), at most 64 characters. It is exactly
 * what `termsOf` makes of a piece of text, so every term of a vocabulary can be written.
 */
export const TermSlug = Schema.String.pipe(
  Schema.pattern(/^(?=.{1,64}$)[a-z0-9]+(?:-[a-z0-9]+)*$/),
  Schema.annotations({ message: () => "expected a term: lower-case a-z or 0-9 words joined by single '-', at most 64 characters" })
)

/** The default terms of each descriptive field, in the row's field order. */
export const hardwareTermDefaults = {
  payment_terms: Schema.Literal(
    "prepaid", "deposit", "net-15", "net-30", "net-45", "net-60", "net-90", "cash-on-delivery", "escrow", "letter-of-credit",
    "wire-transfer", "credit-card", "purchase-order", "financing", "lease", "installments"
  ).annotations({ description: "how the price is paid" }),
  includes_nics: Schema.Literal(
    "connectx-6", "connectx-6-dx", "connectx-7", "connectx-8", "bluefield-2", "bluefield-3", "infiniband-hdr",
    "infiniband-ndr", "infiniband-xdr", "ethernet", "roce", "25gbe", "100gbe", "200gbe", "400gbe", "800gbe", "spectrum-x",
    "broadcom-thor-2", "intel-e810"
  ).annotations({ description: "the network adapters included: models, fabrics and speeds" }),
  includes_cooling_hw: Schema.Literal(
    "air", "liquid", "direct-to-chip", "cold-plate", "immersion", "rear-door", "cdu", "in-row", "fans", "heatsinks"
  ).annotations({ description: "the cooling hardware included" }),
  software_entitlements: Schema.Literal(
    "nvidia-ai-enterprise", "nvidia-base-command-manager", "nvidia-run-ai", "nvidia-vgpu", "nvidia-ufm", "nvidia-dgx-os",
    "rhel", "ubuntu-pro", "windows-server", "vmware-vsphere"
  ).annotations({ description: "the software licences included" }),
  services_included: Schema.Literal(
    "installation", "rack-and-stack", "cabling", "burn-in-testing", "configuration", "on-site-support", "remote-support",
    "advance-replacement", "next-business-day-replacement", "data-erasure", "asset-recovery", "shipping", "insurance",
    "customs-clearance", "training"
  ).annotations({ description: "the services included" })
} as const

/** A descriptive field of the hardware row: its value is terms of its vocabulary. */
export type HardwareTermField = keyof typeof hardwareTermDefaults

/** The descriptive fields, in the row's field order. */
export const hardwareTermFields = Object.keys(hardwareTermDefaults) as ReadonlyArray<HardwareTermField>

/** What a field stores between two terms: `net-30, escrow`. A stored value reads back as the same terms. */
export const TERM_JOIN = ", "

// Where a text splits into pieces: a comma, semicolon, slash, bar, plus, ampersand, bullet or line break.
const SEPARATORS = /[,;/|+&•\n\r\u2028\u2029]/
// Characters that show nothing: a zero-width space inside a word does not split it.
const INVISIBLE = /\p{Default_Ignorable_Code_Point}/gu
// Words are runs of letters, digits and their combining marks, of any script.
const NOT_WORD = /[^\p{L}\p{N}\p{M}]+/u
// A leading count: `8x`, `8 x`, `8×`.
const COUNT = /^\d+\s*(?:x\b|×)\s*/

/** A piece of text in slug form: its words, joined by `-` (empty when it has none). */
const slugOf = (piece: string): string => piece.split(NOT_WORD).filter((w) => w.length > 0).join("-")

/** One piece of a text: its slug, and the slug without a leading count (`8x`), if it had one. */
export interface TermPiece {
  readonly term: string
  readonly uncounted: string | undefined
}

/**
 * A text read as terms: Unicode NFKC, invisible characters removed, lower case; split at the
 * separators (`,` `;` `/` `|` `+` `&` `•` and line breaks); each piece in slug form (its words of
 * letters and digits joined by `-`). Pieces with no word are not terms. The vocabulary decides
 * which are kept: a piece is its slug, or, when that is no term, the slug of the piece without a
 * leading count (`8x ConnectX-7` is `connectx-7`; the count is never kept).
 */
export const termsOf = (text: string): ReadonlyArray<TermPiece> => {
  const pieces: Array<TermPiece> = []
  for (const raw of text.normalize("NFKC").replace(INVISIBLE, "").toLowerCase().normalize("NFKC").split(SEPARATORS)) {
    const term = slugOf(raw)
    if (term.length === 0) continue
    const rest = raw.trim().replace(COUNT, "")
    pieces.push({ term, uncounted: rest.length < raw.trim().length ? slugOf(rest) : undefined })
  }
  return pieces
}
