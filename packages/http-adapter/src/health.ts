import type * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { StorageUnavailable } from "@gpu-market/core"
import { SettingsStore, StoreReadiness, SyncFreshnessReader, TokenStore } from "@gpu-market/core/storage"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { randomUUID } from "node:crypto"
import { problemResponse } from "./problem.js"

/**
 * What an orchestrator and a scraper ask, without a token: `/healthz` (the process answers),
 * `/readyz` (storage answers within `READINESS_TIMEOUT_MS` and gives no reason to take no
 * traffic, `StoreReadiness`; a 503 problem otherwise, at once while the storage breaker is open)
 * and, when asked for, `/metrics`. None is cached by anyone.
 */

/** How long `/readyz` waits for storage before it answers 503. */
export const READINESS_TIMEOUT_MS = 500

/** The body of `/healthz`. */
export const Health = Schema.Struct({ status: Schema.Literal("ok") }).annotations({
  identifier: "Health",
  description: "The process is up and answering."
})

/** The freshness of a syncing server's sources, in a ready `/readyz`. */
export const SyncFreshness = Schema.Struct({
  stale: Schema.Array(Schema.String).annotations({
    description: "Names of the sources whose data is stale: last success more than 3 of their intervals ago, or attempted and never a success. Empty when all are fresh."
  }),
  oldest_success_at: Schema.NullOr(Schema.String).annotations({ description: "The oldest last success among the sources (ISO 8601), null when none has succeeded yet." })
}).annotations({
  identifier: "SyncFreshness",
  description: "Present where the server syncs sources beside serving (serve --sync, $GPU_MARKET_SYNC): a server stays ready while it serves stale data, and says so here."
})

/** The body of a ready `/readyz`. */
export const Readiness = Schema.Struct({ status: Schema.Literal("ready"), sync: Schema.optional(SyncFreshness) }).annotations({
  identifier: "Readiness",
  description: "Storage answered a read within the deadline, is still the store the server opened, and no corruption was found in it; where the server syncs, how fresh its sources are."
})

const NO_STORE = { "cache-control": "no-store" }

const json = (body: typeof Health.Type | typeof Readiness.Type) =>
  HttpServerResponse.text(JSON.stringify(body), { contentType: "application/json", headers: NO_STORE })

/**
 * The probe routes, and `/metrics` when `metrics`. An app built where the storage's stores are
 * not in context (its market's services are, already built) has nothing to read for `/readyz`:
 * there it answers as `/healthz` does.
 */
export const makeHealthRoutes = (options: { readonly metrics: boolean }) =>
  Effect.map(Effect.all([Effect.serviceOption(TokenStore), StoreReadiness, Effect.serviceOption(SettingsStore), SyncFreshnessReader]), ([tokens, readiness, settings, syncReader]) => {
    // Where the server syncs, the sources' states, read under the same deadline.
    const sync = Option.isSome(settings) && syncReader !== undefined
      ? Effect.map(Effect.flatMap(Clock.currentTimeMillis, (now) => syncReader(settings.value, now)), (fresh) => ({ sync: fresh }))
      : Effect.succeed({})
    // One read every request makes anyway, the tokens version; then, where the storage watches
    // for a reason to take no traffic (a store lost or replaced, a corrupt file), that there is none.
    const ready = Option.match(tokens, { onNone: () => Effect.succeed({}), onSome: (store) => Effect.zipRight(Effect.zipRight(store.version, readiness ?? Effect.void), sync) }).pipe(
      Effect.timeoutFail({
        duration: `${READINESS_TIMEOUT_MS} millis`,
        onTimeout: () => new StorageUnavailable({ detail: `storage did not answer within ${READINESS_TIMEOUT_MS} ms; not ready` })
      }),
      Effect.mapError((e) => e._tag === "StorageUnavailable" ? e : new StorageUnavailable({ detail: `storage is unavailable (${e.failed}); not ready` })),
      Effect.match({
        onFailure: (e) => problemResponse(e, randomUUID(), NO_STORE),
        onSuccess: (extra) => json({ status: "ready", ...extra })
      })
    )
    // prom-client is loaded by the first scrape only.
    const scrape = Effect.map(
      Effect.promise(() => import("./metrics.js").then(async (m) => ({ text: await m.exposition(), contentType: m.METRICS_CONTENT_TYPE }))),
      ({ contentType, text }) => HttpServerResponse.text(text, { contentType, headers: NO_STORE })
    )
    const routes: Array<readonly [HttpRouter.PathInput, Effect.Effect<HttpServerResponse.HttpServerResponse>]> = [
      ["/healthz", Effect.succeed(json({ status: "ok" }))],
      ["/readyz", ready]
    ]
    if (options.metrics) routes.push(["/metrics", scrape])
    return routes
  })
