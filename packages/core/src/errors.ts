import * as Schema from "effect/Schema"

/**
 * Errors that cross the library's boundary. Each carries what a caller needs to act; the HTTP
 * adapter turns each into one RFC 9457 problem in a single module.
 */

/** One parameter that failed validation. */
export const ParameterIssue = Schema.Struct({ parameter: Schema.String, message: Schema.String })
export type ParameterIssue = typeof ParameterIssue.Type

/** Missing, unknown or revoked bearer token. */
export class Unauthenticated extends Schema.TaggedError<Unauthenticated>()("Unauthenticated", {
  detail: Schema.String
}) {}

/** The token lacks the grant the request needs (data type, history depth, permission). */
export class InsufficientEntitlement extends Schema.TaggedError<InsufficientEntitlement>()(
  "InsufficientEntitlement",
  {
    detail: Schema.String,
    /** The caller's history floor where the refusal is about depth (`null` = no history at all). */
    history_starts_at: Schema.optional(Schema.NullOr(Schema.String))
  }
) {}

/** No such resource, or none the caller may see; the two are indistinguishable on purpose. */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", {
  detail: Schema.String
}) {}

/** One or more parameters (or body fields) failed validation. */
export class ValidationFailed extends Schema.TaggedError<ValidationFailed>()("ValidationFailed", {
  detail: Schema.String,
  errors: Schema.Array(ParameterIssue)
}) {}

/** A collection query of a type that needs an anchor filter came without one. */
export class MissingAnchor extends Schema.TaggedError<MissingAnchor>()("MissingAnchor", {
  detail: Schema.String,
  anchors: Schema.Array(Schema.String)
}) {}

/** A `gpu_search` resolved to more GPUs than a query may name. */
export class SearchTooBroad extends Schema.TaggedError<SearchTooBroad>()("SearchTooBroad", {
  detail: Schema.String,
  matched: Schema.Int,
  limit: Schema.Int
}) {}

/** The caller spent its request budget for the current window. */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  detail: Schema.String,
  limit: Schema.Int,
  retry_after_seconds: Schema.Int
}) {}

/** Storage cannot be reached; the request may be retried. */
export class StorageUnavailable extends Schema.TaggedError<StorageUnavailable>()("StorageUnavailable", {
  detail: Schema.String,
  /** What an operator must fix, where the backend named it (the detail says it in words): the disk is full, or the file is corrupt. */
  fault: Schema.optional(Schema.Literal("disk_full", "corrupt"))
}) {}

/**
 * A change-feed subscription resumed from an id the event log no longer holds the events after
 * (it keeps the newest ones only): the caller reads the current state and subscribes afresh.
 */
export class EventIdExpired extends Schema.TaggedError<EventIdExpired>()("EventIdExpired", {
  detail: Schema.String
}) {}

/** One refused input record of a write (its position in the batch and what is wrong). */
export const RecordIssue = Schema.Struct({ index: Schema.Int, message: Schema.String })
export type RecordIssue = typeof RecordIssue.Type

/** A write batch was refused as a whole: nothing of it was stored. */
export class InvalidRecords extends Schema.TaggedError<InvalidRecords>()("InvalidRecords", {
  detail: Schema.String,
  errors: Schema.Array(RecordIssue)
}) {}

/** The offer's 30 minutes are over: it can no longer be procured. */
export class OfferExpired extends Schema.TaggedError<OfferExpired>()("OfferExpired", {
  detail: Schema.String,
  expires_at: Schema.String
}) {}

/** A request body in a media type the endpoint does not take. */
export class UnsupportedMediaType extends Schema.TaggedError<UnsupportedMediaType>()("UnsupportedMediaType", {
  detail: Schema.String,
  /** The media types the endpoint takes, comma-separated. */
  accept: Schema.String
}) {}

/** A request body over the endpoint's byte cap; it was not parsed. */
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", {
  detail: Schema.String,
  limit_bytes: Schema.Int
}) {}

/** An `Idempotency-Key` already used by this caller for a different request. */
export class IdempotencyConflict extends Schema.TaggedError<IdempotencyConflict>()("IdempotencyConflict", {
  detail: Schema.String
}) {}

/** The supply provider cannot be reached; the request may be retried. */
export class ProviderUnavailable extends Schema.TaggedError<ProviderUnavailable>()("ProviderUnavailable", {
  detail: Schema.String
}) {}

/** Any error a procurement request can end with. */
export type ProcurementError =
  | Unauthenticated
  | InsufficientEntitlement
  | NotFound
  | ValidationFailed
  | SearchTooBroad
  | RateLimited
  | StorageUnavailable
  | OfferExpired
  | UnsupportedMediaType
  | PayloadTooLarge
  | IdempotencyConflict
  | ProviderUnavailable

/** Any error a market request can end with. */
export type MarketError =
  | Unauthenticated
  | InsufficientEntitlement
  | NotFound
  | ValidationFailed
  | MissingAnchor
  | SearchTooBroad
  | RateLimited
  | StorageUnavailable

/** Builds a `ValidationFailed` whose detail names every offending parameter. */
export const validationFailed = (errors: ReadonlyArray<ParameterIssue>): ValidationFailed =>
  new ValidationFailed({
    detail: errors.map((e) => `${e.parameter}: ${e.message}`).join("; "),
    errors
  })

/**
 * Builds the `SearchTooBroad` of a name search: `parameter` matched `matched` of `what` (GPUs,
 * models), more than the `limit` a query may name; `narrow` says what the caller should narrow.
 */
export const searchTooBroad = (search: {
  readonly parameter: string
  readonly matched: number
  readonly what: string
  readonly limit: number
  readonly narrow: string
}): SearchTooBroad =>
  new SearchTooBroad({
    detail: `${search.parameter} matches ${search.matched} ${search.what}; at most ${search.limit} are allowed, so narrow ${search.narrow}`,
    matched: search.matched,
    limit: search.limit
  })
