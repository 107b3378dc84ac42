import * as Effect from "effect/Effect"
import type { Principal } from "../auth/principal.js"
import { RateLimits, type RateLimitStatus } from "../auth/rate-limits.js"
import { type ParameterIssue, ProviderUnavailable, type SearchTooBroad, searchTooBroad, type ValidationFailed, validationFailed } from "../errors.js"
import { gpusMatching, MAX_SEARCH_GPUS } from "../market/rental-prices.js"
import { nowMicros, unavailable } from "../market/storage.js"
import { normaliseName } from "../query/params.js"
import { formatInstant, MICROS_PER_MS } from "../query/time.js"
import { type Offer, OfferId, type OfferList, type OfferRequest } from "../schema/procurement.js"
import { RentalPriceStore } from "../storage/contract.js"
import { ProcurementStore } from "../storage/procurement.js"
import { newId, ownRecord, requireProcurement } from "./access.js"
import { type ProviderError, roundUsd, type SupplyCatalog, SupplyProvider } from "./provider.js"
import { type OfferRequestFormat, parseOfferRequest } from "./request.js"

/** `POST /get_offers` requests each caller may make per minute. */
export const OFFER_REQUESTS_PER_MINUTE = 5

/** How long an offer can be procured: exactly 30 minutes from when it was returned. */
export const OFFER_LIFETIME_MILLIS = 30 * 60_000

/** Offers one request returns when it names no `limit`. */
export const DEFAULT_OFFER_LIMIT = 10

/** Whether an offer can no longer be procured at `now`: from `expires_at` on, inclusive. */
export const isExpired = (offer: Pick<Offer, "expires_at">, now: number): boolean => formatInstant(now) >= offer.expires_at

/** The provider being down, as the caller sees it: worth retrying. */
export const providerUnavailable = (e: ProviderError) => new ProviderUnavailable({ detail: `the supply provider is unavailable: ${e.detail}` })

/** The request's fields checked against the provider's terms; every mismatch is named. */
const checkTerms = (request: OfferRequest, catalog: SupplyCatalog): ReadonlyArray<ParameterIssue> => {
  const issues: Array<ParameterIssue> = []
  const contract = request.contract_type === undefined ? undefined : catalog.contracts.find((c) => c.contract_type === request.contract_type)
  if (request.contract_type !== undefined && contract === undefined) {
    issues.push({ parameter: "contract_type", message: `expected one of ${catalog.contracts.map((c) => c.contract_type).join(", ")}` })
  }
  if (contract !== undefined && request.term_hours !== undefined &&
    (request.term_hours < contract.min_term_hours || request.term_hours > contract.max_term_hours)) {
    issues.push({
      parameter: "term_hours",
      message: `a ${contract.contract_type} term is ${contract.min_term_hours} to ${contract.max_term_hours} hours`
    })
  }
  if (request.storage !== undefined) {
    const option = catalog.storage.find((s) => s.storage_type === request.storage!.type)
    if (option === undefined) {
      issues.push({ parameter: "storage.type", message: `expected one of ${catalog.storage.map((s) => s.storage_type).join(", ")}` })
    } else if (request.storage.size_gb < option.min_size_gb || request.storage.size_gb > option.max_size_gb) {
      issues.push({ parameter: "storage.size_gb", message: `${option.storage_type} is ${option.min_size_gb} to ${option.max_size_gb} GB` })
    }
  }
  return issues
}

const before = <A extends string | number>(x: A, y: A): number => x < y ? -1 : x > y ? 1 : 0

const compareBy = (by: NonNullable<OfferRequest["sort_by"]>) => (a: Offer, b: Offer): number => before(a[by], b[by])

/** Offers: quotes held for 30 minutes, asked for in YAML or JSON, at most 5 requests a minute per caller. */
export class Offers extends Effect.Service<Offers>()("Procurement/Offers", {
  effect: Effect.gen(function* () {
    const store = yield* ProcurementStore
    const rental = yield* RentalPriceStore
    const provider = yield* SupplyProvider
    const limits = yield* RateLimits

    /** The catalog GPUs `gpu` names: itself when it is a canonical name, else those it matches as a search. */
    const resolveGpu = (gpu: string) =>
      Effect.flatMap(Effect.mapError(rental.spellings, unavailable), (spellings): Effect.Effect<ReadonlyArray<string>, ValidationFailed | SearchTooBroad> => {
        if (spellings.some((s) => s.gpu_canonical_name === gpu)) return Effect.succeed([gpu])
        const term = normaliseName(gpu)
        if (term.length === 0) return Effect.fail(validationFailed([{ parameter: "gpu", message: "needs a letter or digit" }]))
        const gpus = gpusMatching(spellings, [term])
        return gpus.size > MAX_SEARCH_GPUS
          ? Effect.fail(searchTooBroad({ parameter: "gpu", matched: gpus.size, what: "GPUs", limit: MAX_SEARCH_GPUS, narrow: "it" }))
          : Effect.succeed([...gpus].sort())
      })

    /** Grant, then one hit on the caller's 5 per minute; the budget's state is for the response headers. */
    const admit = Effect.fn("Offers.admit")(function* (principal: Principal) {
      yield* requireProcurement(principal)
      return yield* limits.consume(`get_offers:${principal.id}`, OFFER_REQUESTS_PER_MINUTE)
    })

    /** Offers for a YAML (or JSON) body, without counting the call (`admit` does). */
    const offersFor = Effect.fn("Offers.offersFor")(function* (principal: Principal, body: string | Uint8Array, format: OfferRequestFormat = "yaml") {
      const request = yield* parseOfferRequest(body, format)
      const catalog = yield* Effect.mapError(provider.catalog, providerUnavailable)
      const issues = checkTerms(request, catalog)
      if (issues.length > 0) return yield* Effect.fail(validationFailed(issues))
      const gpus = yield* resolveGpu(request.gpu)
      const term_hours = request.term_hours ?? 1
      const quotes = gpus.length === 0 ? [] : yield* Effect.mapError(provider.quote({
        gpus,
        gpu_count: request.gpu_count,
        regions: request.regions,
        contract_type: request.contract_type,
        term_hours,
        max_price_usd_per_gpu_hour: request.max_price_usd_per_gpu_hour,
        storage: request.storage
      }), providerUnavailable)
      const now = yield* nowMicros
      const created_at = formatInstant(now)
      const expires_at = formatInstant(now + OFFER_LIFETIME_MILLIS * MICROS_PER_MS)
      const sort = { by: request.sort_by ?? "price_usd_per_gpu_hour", order: request.sort_order ?? "asc" } as const
      const byField = compareBy(sort.by)
      const records = quotes
        .map(({ quote_ref, instance_count, gpus_per_instance, storage, ...q }) => {
          const price_usd_per_hour = roundUsd(q.price_usd_per_gpu_hour * request.gpu_count + (storage?.price_usd_per_hour ?? 0))
          const offer: Offer = {
            offer_id: newId<OfferId>("off"),
            vendor: q.vendor,
            gpu_canonical_name: q.gpu_canonical_name,
            gpu_model: q.gpu_model,
            gpu_memory_gb: q.gpu_memory_gb,
            gpu_count: request.gpu_count,
            instance_count,
            gpus_per_instance,
            region: q.region,
            contract_type: q.contract_type,
            contract_term: q.contract_term,
            term_hours,
            price_usd_per_gpu_hour: q.price_usd_per_gpu_hour,
            storage,
            price_usd_per_hour,
            total_usd: roundUsd(price_usd_per_hour * term_hours),
            created_at,
            expires_at
          }
          return { owner: principal.id, offer, quote_ref }
        })
        // The cheaper offer first among equals, then the quoted product, then the id, so the order is
        // total and the same request cuts its list at the same offers (new ids are random).
        .sort((a, b) => (sort.order === "asc" ? 1 : -1) * byField(a.offer, b.offer) ||
          a.offer.price_usd_per_gpu_hour - b.offer.price_usd_per_gpu_hour || before(a.quote_ref, b.quote_ref) ||
          before(a.offer.offer_id, b.offer.offer_id))
        .slice(0, request.limit ?? DEFAULT_OFFER_LIMIT)
      if (records.length > 0) yield* Effect.mapError(store.putOffers(records), unavailable)
      const list: OfferList = { data: records.map((r) => r.offer), meta: { returned: records.length, sort } }
      return list
    })

    return {
      admit,
      offersFor,
      /**
       * Offers for a YAML request. The call is counted against the caller's 5 per minute before
       * the body is read, so a refused body counts too; the budget's state comes back for headers.
       */
      getOffers: Effect.fn("Offers.getOffers")(function* (input: { readonly principal: Principal; readonly body: string | Uint8Array }) {
        const rateLimit: RateLimitStatus = yield* admit(input.principal)
        return { body: yield* offersFor(input.principal, input.body), rateLimit }
      }),

      /** One of the caller's offers, expired or not (`expires_at` tells); anyone else's is a 404. */
      offer: Effect.fn("Offers.offer")(function* (input: { readonly principal: Principal; readonly offerId: string }) {
        yield* requireProcurement(input.principal)
        const found = yield* ownRecord(OfferId, "offer", input.offerId, (id) => store.offer(input.principal.id, id))
        return found.offer
      })
    } as const
  })
}) {}
