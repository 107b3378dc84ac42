import { assert, describe, layer } from "@effect/vitest"
import { Problem, TokenBody } from "@gpu-market/core"
import { Effect, Schema, TestClock } from "effect"
import { atNow, fixtureLayer, http, NOW_MS } from "./support/market"

/**
 * `GET /v2/token`: the caller's own token as the server sees it, so a client (the dashboard)
 * asks only for what it will be given: each granted type with its history floor as `/metadata`
 * reports it, the indices and permissions, never any part of the secret.
 */

const decodeBody = Schema.decodeUnknownSync(TokenBody, { onExcessProperty: "error" })
const decodeProblem = Schema.decodeUnknownSync(Problem, { onExcessProperty: "error" })
const TOKEN = "/api/v2/token"

describe("GET /v2/token", () => {
  layer(fixtureLayer("token-view"), { timeout: "120 seconds" })((it) => {
    it.effect("says what each token may read, as the data endpoints then treat it", () =>
      Effect.gen(function* () {
        yield* atNow
        const view = (token: string) => Effect.map(http(TOKEN, { token }), (r) => {
          assert.strictEqual(r.status, 200, r.text)
          assert.isNotNull(r.headers.get("x-ratelimit-remaining"), "counted like any request")
          return decodeBody(r.body).data
        })
        const all = yield* view("all")
        assert.deepStrictEqual(all, {
          id: "t-all", name: "t-all", grants: { gpu_rental_prices: { history: true, history_starts_at: null } },
          indices: "all", legacy_custom_index: false, procurement: false, rate_limit_per_minute: 100_000
        })
        assert.deepStrictEqual((yield* view("current")).grants, { gpu_rental_prices: { history: false, history_starts_at: null } })
        assert.deepStrictEqual((yield* view("since")).grants, { gpu_rental_prices: { history: true, history_starts_at: "2026-05-20" } })
        assert.deepStrictEqual((yield* view("hardwareOnly")).grants, { gpu_hardware_prices: { history: true, history_starts_at: null } })

        // A rolling floor is the one /metadata reports, and it moves with the clock.
        const rolling = (yield* view("rolling")).grants.gpu_rental_prices
        const metadata = yield* http("/api/v2/gpu/rental/prices/metadata", { token: "rolling" })
        assert.strictEqual(rolling?.history_starts_at, metadata.body.history_starts_at)
        assert.strictEqual(rolling?.history_starts_at, new Date(NOW_MS - 10 * 86_400_000).toISOString().slice(0, 10))
        yield* TestClock.adjust("1 day")
        assert.strictEqual((yield* view("rolling")).grants.gpu_rental_prices?.history_starts_at, new Date(NOW_MS - 9 * 86_400_000).toISOString().slice(0, 10))

        // What it says is not granted is refused, and what it says is current only has no history.
        assert.strictEqual((yield* http("/api/v2/gpu/hardware/prices/metadata", { token: "all" })).status, 403)
        assert.strictEqual((yield* http("/api/v2/gpu/rental/prices/history?gpu_canonical_name=h100-sxm", { token: "current" })).status, 403)
      }))

    it.effect("401 without a token it knows, 422 for any parameter", () =>
      Effect.gen(function* () {
        yield* atNow
        for (const r of [yield* http(TOKEN), yield* http(TOKEN, { token: "no-such-token" })]) {
          assert.strictEqual(r.status, 401, r.text)
          assert.strictEqual(decodeProblem(r.body).code, "unauthenticated")
        }
        const r = yield* http(`${TOKEN}?name=x`, { token: "all" })
        assert.strictEqual(r.status, 422, r.text)
        assert.deepStrictEqual(decodeProblem(r.body).errors, [{ parameter: "name", message: "unknown parameter; this endpoint takes none" }])
      }))
  })
})
