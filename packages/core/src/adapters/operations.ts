import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { Auth } from "../auth/auth.js"
import { Principal, type PrincipalInput } from "../auth/principal.js"
import { type RateLimitCount, RateLimits, type RateLimitStatus } from "../auth/rate-limits.js"
import {
  InsufficientEntitlement, InvalidRecords, type MarketError, MissingAnchor, NotFound, RateLimited, SearchTooBroad,
  StorageUnavailable, Unauthenticated, ValidationFailed, EventIdExpired
} from "../errors.js"
import { Feed } from "../feed/feed.js"
import { FormatImport, type FormatImportOptions, FormatImportSummary, type SkypilotImportOptions } from "../ingest/formats/import.js"
import { HardwareIngestSummary, HardwarePriceIngest } from "../ingest/hardware-prices.js"
import { IndexDefineSummary, IndexIngest } from "../ingest/indexes.js"
import { LlmIngestSummary, LlmTokenPriceIngest } from "../ingest/llm-token-prices.js"
import { type GpuCatalogRecordInput, ReferenceDataIngest, ReferenceIngestSummary } from "../ingest/reference-data.js"
import { RentalPriceIngest } from "../ingest/rental-prices.js"
import { TransactionIngest, TransactionIngestSummary } from "../ingest/transactions.js"
import { IngestSummary } from "../ingest/versions.js"
import { unavailable } from "../market/storage.js"
import { startedTogether } from "../market/together.js"
import type { RequestOrigin } from "../query/collection.js"
import type { FxRateInput } from "../schema/fx-rate.js"
import type { HardwarePriceObservationInput } from "../schema/hardware-price.js"
import type { AdministeredValueInput, FleetWeight, IndexDefinitionInput } from "../schema/indexes.js"
import type { LlmTokenPriceObservationInput } from "../schema/llm-token-price.js"
import type { RentalPriceObservationInput } from "../schema/rental-price.js"
import type { TransactionDealInput } from "../schema/transaction.js"
import { TokenStore } from "../storage/contract.js"
import { EXPORT_REQUESTS } from "../export/rows.js"
import { type CatalogueEntry, makeExportCalls, makeReadCalls } from "./catalogue.js"
import type { EndpointName, ReadResult } from "./reads.js"

/**
 * The market's operations as the in-process adapters run them: a read by catalogue entry with
 * the caller's token, the token admin and the write paths. The Promise API calls them in its
 * runtime; the worker calls them in its thread and sends the results back.
 */

/**
 * Who is calling, with their rate-limit budget charged for this request: the rule every adapter
 * applies before a data call (401, then 429), so a token behaves the same over HTTP and in-process.
 *
 * A token this process has looked up before is counted under its cached principal while it is
 * authenticated, so a store that pipelines (Redis) answers the version read and the count in one
 * round trip. The count is judged under the principal authentication returns: if the token now
 * reaches another principal, that one is counted instead; if it is no longer valid, the 401 stands.
 */
export const admit = (
  auth: Auth,
  limits: RateLimits,
  authorization: string | undefined
): Effect.Effect<Admission, MarketError> => {
  // Hashed once: the guess and the authentication look up the same hash.
  const credential = auth.credential(authorization)
  if (Either.isLeft(credential)) return Effect.fail(credential.left)
  const guess = auth.guess(credential.right)
  const authenticated = auth.authenticateCredential(credential.right)
  if (guess === undefined) return Effect.flatMap(authenticated, (principal) => charge(limits, principal))
  // Counted beside the authentication, so a store that pipelines sends both in one round trip.
  return Effect.flatMap(startedTogether(authenticated, limits.count(key(guess))), ([principal, counted]) =>
    judged(limits, principal, guess, counted))
}

const judged = (limits: RateLimits, principal: Principal, guess: Principal, counted: RateLimitCount) =>
  Effect.map(
    principal.id === guess.id
      ? limits.judge(counted, principal.rate_limit_per_minute)
      : limits.consume(key(principal), principal.rate_limit_per_minute),
    (status): Admission => ({ principal, status })
  )

/** Who a request was admitted as, with their rate-limit budget charged. */
export interface Admission {
  readonly principal: Principal
  readonly status: RateLimitStatus
}

/** The rate-limit key of a principal's data requests. */
const key = (principal: Principal) => `data:${principal.id}`

/** One request of a principal whose token was just authenticated, counted against its rate limit, `RateLimited` past it. */
const charge = (limits: RateLimits, principal: Principal): Effect.Effect<Admission, RateLimited | StorageUnavailable> =>
  Effect.map(limits.consume(key(principal), principal.rate_limit_per_minute), (status) => ({ principal, status }))

/** Every error an operation ends with; a Schema, so the worker sends them typed. */
export const OperationError = Schema.Union(
  Unauthenticated, InsufficientEntitlement, NotFound, ValidationFailed, MissingAnchor, SearchTooBroad, RateLimited,
  StorageUnavailable, InvalidRecords, EventIdExpired
)
export type OperationError = typeof OperationError.Type

/**
 * Logs a defect (a bug, a stored record that does not decode) with its cause where an operation
 * ends, so once per call: it answers 500 `internal_error`, whose detail says it was logged. The
 * market errors, storage trouble included, are answers and are not logged.
 */
const logDefect = (cause: Cause.Cause<unknown>): Effect.Effect<void> =>
  Cause.isDie(cause) ? Effect.logError("operation failed", cause) : Effect.void

/** The write operations, by the name the Promise API and the worker call them. */
export const writeNames = [
  "tokens.create", "tokens.list", "tokens.revoke",
  "ingest.rental", "ingest.withdrawRental", "ingest.hardware", "ingest.llm", "ingest.withdrawLlm", "ingest.transactions",
  "ingest.indexDefinitions", "ingest.fleetWeights", "ingest.indexValues", "ingest.skypilot", "ingest.litellm", "ingest.fxRates", "ingest.gpus"
] as const
export type WriteName = (typeof writeNames)[number]

/** The token admin and write paths over the market's services, by dotted name. */
const makeWrites = Effect.gen(function* () {
  const auth = yield* Auth
  const tokens = yield* TokenStore
  const rentalIngest = yield* RentalPriceIngest
  const hardwareIngest = yield* HardwarePriceIngest
  const llmIngest = yield* LlmTokenPriceIngest
  const transactionIngest = yield* TransactionIngest
  const indexIngest = yield* IndexIngest
  const formats = yield* FormatImport
  const referenceIngest = yield* ReferenceDataIngest
  return {
    "tokens.create": (principal: PrincipalInput, secret?: string) => auth.issue(principal, secret),
    "tokens.list": () => Effect.mapBoth(tokens.list, { onFailure: unavailable, onSuccess: (all) => all.map((t) => t.principal) }),
    "tokens.revoke": (principalId: string) => Effect.mapError(tokens.revoke(principalId), unavailable),
    "ingest.rental": (observations: ReadonlyArray<RentalPriceObservationInput>) => rentalIngest.ingest(observations),
    "ingest.withdrawRental": (baseProductKeys: ReadonlyArray<string>, at: string) => rentalIngest.withdraw(baseProductKeys, at),
    "ingest.hardware": (observations: ReadonlyArray<HardwarePriceObservationInput>) => hardwareIngest.ingest(observations),
    "ingest.llm": (observations: ReadonlyArray<LlmTokenPriceObservationInput>) => llmIngest.ingest(observations),
    "ingest.withdrawLlm": (basePriceKeys: ReadonlyArray<string>, at: string) => llmIngest.withdraw(basePriceKeys, at),
    "ingest.transactions": (deals: ReadonlyArray<TransactionDealInput>) => transactionIngest.record(deals),
    "ingest.indexDefinitions": (definitions: ReadonlyArray<IndexDefinitionInput>) => indexIngest.define(definitions),
    "ingest.fleetWeights": (weights: ReadonlyArray<FleetWeight>) => indexIngest.setFleetWeights(weights),
    "ingest.indexValues": (values: ReadonlyArray<AdministeredValueInput>) => indexIngest.publish(values),
    "ingest.skypilot": (csvText: string, options: SkypilotImportOptions) => formats.skypilot(csvText, options),
    "ingest.litellm": (jsonText: string, options: FormatImportOptions = {}) => formats.litellm(jsonText, options),
    "ingest.fxRates": (rates: ReadonlyArray<FxRateInput>) => referenceIngest.fxRates(rates),
    "ingest.gpus": (entries: ReadonlyArray<GpuCatalogRecordInput>) => referenceIngest.gpus(entries)
  } satisfies Record<WriteName, (...args: never) => Effect.Effect<unknown, OperationError>>
})

type Writes = Effect.Effect.Success<typeof makeWrites>
/** The arguments of one write. */
export type WriteArgs<N extends WriteName> = Parameters<Writes[N]>
/** What one write answers. */
export type WriteResult<N extends WriteName> = Effect.Effect.Success<ReturnType<Writes[N]>>

/**
 * What each write answers, as a Schema: a result that crosses a thread is encoded and decoded
 * with its write's. The compiler holds each to what its write returns. A principal crosses as it
 * is (its type's schema), as it does in the process.
 */
export const writeResults: { readonly [N in WriteName]: Schema.Schema<WriteResult<N>> } = {
  "tokens.create": Schema.String,
  "tokens.list": Schema.mutable(Schema.Array(Schema.typeSchema(Principal))),
  "tokens.revoke": Schema.Boolean,
  "ingest.rental": IngestSummary,
  "ingest.withdrawRental": Schema.Number,
  "ingest.hardware": HardwareIngestSummary,
  "ingest.llm": LlmIngestSummary,
  "ingest.withdrawLlm": Schema.Number,
  "ingest.transactions": TransactionIngestSummary,
  "ingest.indexDefinitions": IndexDefineSummary,
  "ingest.fleetWeights": Schema.Number,
  "ingest.indexValues": Schema.Number,
  "ingest.skypilot": FormatImportSummary(IngestSummary),
  "ingest.litellm": FormatImportSummary(LlmIngestSummary),
  "ingest.fxRates": ReferenceIngestSummary,
  "ingest.gpus": ReferenceIngestSummary
}

/**
 * Counts the requests an export adds to the one that asked for it (`EXPORT_REQUESTS` in all):
 * refused with 429 once the budget is spent. The caller's budget after them.
 */
export const chargeExport = (limits: RateLimits, principal: Principal): Effect.Effect<RateLimitStatus | undefined, RateLimited | StorageUnavailable> =>
  Effect.gen(function* () {
    let status: RateLimitStatus | undefined
    for (let i = 1; i < EXPORT_REQUESTS; i++) status = (yield* charge(limits, principal)).status
    return status
  })

/** Builds the operations over the market's services. */
export const makeOperations = Effect.gen(function* () {
  const auth = yield* Auth
  const limits = yield* RateLimits
  const readCall = yield* makeReadCalls
  const exportCall = yield* makeExportCalls
  const feed = yield* Feed
  const writes = yield* makeWrites
  // Indexed by a name's own type, a write takes its own arguments and answers its own result.
  const byName: { readonly [N in WriteName]: (...args: WriteArgs<N>) => Effect.Effect<WriteResult<N>, OperationError> } = writes

  return {
    /** One read, authenticated and rate-limited like an HTTP request with `Authorization: Bearer <token>`. */
    read: <N extends EndpointName>(
      entry: CatalogueEntry & { readonly name: N },
      query: Readonly<Record<string, string>>,
      token: string | undefined,
      origin: RequestOrigin
    ): Effect.Effect<ReadResult<N>, MarketError> =>
      Effect.flatMap(admit(auth, limits, token === undefined ? undefined : `Bearer ${token}`), ({ principal }) =>
        readCall(entry)({ principal, query, origin })).pipe(Effect.tapErrorCause(logDefect)),
    /**
     * One export, authenticated like a read, planned, then counted as `EXPORT_REQUESTS` requests
     * (a refused one counts one, as its page would).
     */
    export: (entry: CatalogueEntry, query: Readonly<Record<string, string>>, token: string | undefined, origin: RequestOrigin) =>
      Effect.flatMap(admit(auth, limits, token === undefined ? undefined : `Bearer ${token}`), ({ principal }) =>
        Effect.tap(
          exportCall(entry)?.({ principal, query, origin }) ?? Effect.dieMessage(`${entry.name} is not paged`),
          () => chargeExport(limits, principal)
        )).pipe(Effect.tapErrorCause(logDefect)),
    /** A change-feed subscription, admitted like a read (one count against the rate limit). */
    subscribe: (query: Readonly<Record<string, string>>, token: string | undefined, lastEventId: string | undefined) =>
      Effect.flatMap(admit(auth, limits, token === undefined ? undefined : `Bearer ${token}`), ({ principal }) =>
        feed.subscribe(principal, query, lastEventId, auth.stillHolds(`Bearer ${token}`))).pipe(Effect.tapErrorCause(logDefect)),
    /** One write operation; the token admin and write paths are for the embedding app, not its callers. */
    write: <N extends WriteName>(name: N, args: WriteArgs<N>): Effect.Effect<WriteResult<N>, OperationError> =>
      Effect.tapErrorCause(byName[name](...args), logDefect),
    writes
  } as const
})

/** The operations of one market. */
export type Operations = Effect.Effect.Success<typeof makeOperations>
