import { assert } from "@effect/vitest"
import {
  Auth, type Principal, Problem, procurementLayer, type SimulatedProviderOptions, simulatedProviderLayer
} from "@gpu-market/core"
import { Effect, Layer, Schema, TestClock } from "effect"
import { fixtureLayer, http, NOW_MS, type Reply } from "./market"

/**
 * The procurement service over the fixture market (a real SQLite file), with the simulated
 * provider, and callers that speak to it through the HTTP app in-process under TestClock.
 */

/** Provisioning takes 10 minutes in these fixtures; termination 1 minute. */
export const PROVISION_MS = 10 * 60_000
export const TERMINATE_MS = 60_000

const buyer = (id: string, procurement = true): Principal => ({
  id: id as Principal["id"], name: id, grants: {}, indices: [], legacy_custom_index: false, procurement, rate_limit_per_minute: 100_000
})

/** Buyers (the secret is the key); `nosupply` lacks the procurement grant. */
export const BUYERS = { buyer: buyer("p-buyer"), rival: buyer("p-rival"), nosupply: buyer("p-nosupply", false) } as const

/** The fixture market with the procurement service; the simulated provider fails orders for `v-gamma`. */
export const procurementFixture = (label: string, provider: SimulatedProviderOptions = {
  provisionMillis: PROVISION_MS,
  terminateMillis: TERMINATE_MS,
  failWhen: (order) => (order.offer.vendor === "v-gamma" ? "v-gamma is out of capacity" : false)
}) =>
  Layer.effectDiscard(Effect.flatMap(Auth, (auth) => Effect.forEach(Object.entries(BUYERS), ([secret, p]) => auth.issue(p, secret)))).pipe(
    Layer.provideMerge(procurementLayer.pipe(Layer.provide(simulatedProviderLayer(provider)))),
    Layer.provideMerge(fixtureLayer(label))
  )

/** Sets the clock to the fixture's "now" plus `minutes`; each test takes its own minutes, as rate windows are per minute. */
export const atMinute = (minutes: number) => TestClock.setTime(NOW_MS + minutes * 60_000)

/** `POST /supply/get_offers` with a YAML body. */
export const getOffers = (yaml: string | Uint8Array, token = "buyer", contentType = "application/yaml") =>
  http("/api/supply/get_offers", { token, method: "POST", body: yaml, headers: { "content-type": contentType } })

/** `POST /supply/procurements` for an offer with an idempotency key. */
export const procure = (offerId: string, key: string | undefined, token = "buyer") =>
  http("/api/supply/procurements", {
    token, method: "POST", body: JSON.stringify({ offer_id: offerId }),
    headers: { "content-type": "application/json", ...(key === undefined ? {} : { "idempotency-key": key }) }
  })

/** `GET` under the supply prefix. */
export const supply = (path: string, token = "buyer", method = "GET") => http(`/api/supply${path}`, { token, method })

const validProblem = Schema.decodeUnknownSync(Problem, { onExcessProperty: "error" })

/** Asserts a problem+json answer of `status` and `code`, and returns its body. */
export const expectProblem = (r: Reply, status: number, code: string) => {
  assert.strictEqual(r.status, status, r.text)
  assert.strictEqual(r.headers.get("content-type"), "application/problem+json")
  const p = validProblem(r.body)
  assert.strictEqual(p.code, code)
  assert.strictEqual(p.type, `/problems/${code}`)
  return p
}

/** An instant as the service writes it (microseconds, UTC). */
export const iso = (ms: number) => new Date(ms).toISOString().replace("Z", "000Z")

/** An offer request for 8 H100s in us-east on demand, cheapest first. */
export const H100_REQUEST = "gpu: h100-sxm\ngpu_count: 8\nregions: [us-east]\ncontract_type: ondemand\n"
