import * as Schema from "effect/Schema"

/** An instant in the stored fixed-width form `YYYY-MM-DDTHH:MM:SS.ffffffZ`. */
export const StoredInstant = Schema.String.pipe(
  Schema.pattern(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/),
  Schema.brand("StoredInstant")
)

/**
 * The validity of one version of a versioned price, in the spec's order: in force from
 * `valid_from` until `valid_to` (`null` while current), opened by the observation extracted at
 * `extracted_at`. A price change closes the current row and opens a new one, so every versioned
 * price type states these three fields the same way.
 */
export const versionValidity = {
  valid_from: StoredInstant,
  valid_to: Schema.NullOr(StoredInstant),
  extracted_at: StoredInstant
}
