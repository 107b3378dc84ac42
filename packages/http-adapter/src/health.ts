import type * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { StorageUnavailable } from "@gpu-market/core"
import { StoreReadiness, TokenStore } from "@gpu-market/core/storage"
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

/** The body of a ready `/readyz`. */
export const Readiness = Schema.Struct({ status: Schema.Literal("ready") }).annotations({
  identifier: "Readiness",
  description: "Storage answered a read within the deadline, is still the store the server opened, and no corruption was found in it."
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
  Effect.map(Effect.zip(Effect.serviceOption(TokenStore), StoreReadiness), ([tokens, readiness]) => {
    // One read every request makes anyway, the tokens version; then, where the storage watches
    // for a reason to take no traffic (a store lost or replaced, a corrupt file), that there is none.
    const ready = Option.match(tokens, { onNone: () => Effect.void, onSome: (store) => Effect.zipRight(store.version, readiness ?? Effect.void) }).pipe(
      Effect.timeoutFail({
        duration: `${READINESS_TIMEOUT_MS} millis`,
        onTimeout: () => new StorageUnavailable({ detail: `storage did not answer within ${READINESS_TIMEOUT_MS} ms; not ready` })
      }),
      Effect.mapError((e) => e._tag === "StorageUnavailable" ? e : new StorageUnavailable({ detail: `storage is unavailable (${e.failed}); not ready` })),
      Effect.match({
        onFailure: (e) => problemResponse(e, randomUUID(), NO_STORE),
        onSuccess: () => json({ status: "ready" })
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
