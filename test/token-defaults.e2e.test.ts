import { assert, describe, it } from "@effect/vitest"
import { Auth, createMarket, DEFAULT_RATE_LIMIT_PER_MINUTE, marketLayer, memory, type Principal, type PrincipalInput } from "@gpu-market/core"
import { hashToken, TokenStore } from "@gpu-market/core/storage"
import { sqlite } from "@gpu-market/storage-sqlite"
import { createWorkerMarket } from "@gpu-market/worker"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { execFileSync } from "node:child_process"
import { join } from "node:path"
import { expectTypeOf } from "vitest"
import { tempDb } from "./support/adapters"

/**
 * `tokens.create({ name, grants })`: what a principal leaves out takes least-privilege defaults
 * (no indices, no legacy endpoint, no procurement, the default rate limit, a random `tok-` id),
 * the same at the Promise API, the Effect API, the worker and the CLI, and the stored token is
 * the one the defaults spelled out would make.
 */

const RENTAL = { gpu_rental_prices: { history: { _tag: "rolling", days: 90 } } } as const

/** The defaults, spelled out. */
const SPELLED_OUT = { indices: [], legacy_custom_index: false, procurement: false, rate_limit_per_minute: DEFAULT_RATE_LIMIT_PER_MINUTE } as const

describe("a principal's defaults", () => {
  it("compiles with name and grants alone, and still needs both", () => {
    expectTypeOf({ name: "Rental desk", grants: RENTAL }).toMatchTypeOf<PrincipalInput>()
    // @ts-expect-error a principal needs a name
    const nameless: PrincipalInput = { grants: RENTAL }
    // @ts-expect-error and grants
    const grantless: PrincipalInput = { name: "Nothing" }
    assert.isDefined([nameless, grantless])
  })

  it("Promise API: the stored principal is the one with the defaults spelled out, under a random tok- id", async () => {
    const market = await createMarket({ storage: memory() })
    try {
      await market.tokens.create({ name: "Rental desk", grants: RENTAL })
      await market.tokens.create({ id: "spelled-out", name: "Rental desk", grants: RENTAL, ...SPELLED_OUT })
      const [defaulted, spelled] = await market.tokens.list()
        .then((all) => [all.find((p) => p.id !== "spelled-out")!, all.find((p) => p.id === "spelled-out")!] as const)
      assert.match(defaulted.id, /^tok-[0-9a-f]{12}$/)
      assert.deepStrictEqual({ ...defaulted, id: spelled.id }, spelled)
      assert.deepStrictEqual<unknown>(spelled, { id: "spelled-out", name: "Rental desk", grants: RENTAL, ...SPELLED_OUT })
    } finally {
      await market.close()
    }
  })

  it.effect("Effect API: Auth.issue fills the same defaults", () =>
    Effect.gen(function* () {
      const auth = yield* Auth
      const secret = yield* auth.issue({ id: "effect-desk", name: "Rental desk", grants: RENTAL })
      const stored = yield* Effect.flatMap(TokenStore, (tokens) => tokens.find(hashToken(secret)))
      assert.deepStrictEqual(Option.map(stored, (t) => t.principal), Option.some<Principal>({
        id: "effect-desk" as Principal["id"], name: "Rental desk", grants: RENTAL, ...SPELLED_OUT
      }))
      // A default never overrides what is given.
      const given = yield* auth.issue({ id: "given", name: "Buyer", grants: {}, procurement: true, rate_limit_per_minute: 5 })
      const buyer = yield* Effect.flatMap(TokenStore, (tokens) => tokens.find(hashToken(given)))
      assert.deepStrictEqual(Option.map(buyer, (t) => [t.principal.procurement, t.principal.rate_limit_per_minute]), Option.some([true, 5]))
    }).pipe(Effect.provide(marketLayer.pipe(Layer.provideMerge(memory())))))

  it("the worker and the CLI store the same principal", { timeout: 120_000 }, async () => {
    const db = tempDb("token-defaults")
    const worker = await createWorkerMarket({ storage: sqlite(db), poolSize: 1 })
    try {
      await worker.tokens.create({ id: "worker-desk", name: "Rental desk", grants: RENTAL })
    } finally {
      await worker.close()
    }
    execFileSync("node", [join(import.meta.dirname, "../packages/cli/bin/gpu-market.js"), "tokens", "create", "--db", db, "--id", "cli-desk", "--name", "Rental desk", "--grant", "rental:90d"], {
      stdio: "ignore", env: { ...process.env, GPU_MARKET_REDIS_URL: "" }
    })
    const market = await createMarket({ storage: sqlite(db) })
    try {
      const listed = await market.tokens.list()
      for (const id of ["worker-desk", "cli-desk"]) {
        assert.deepStrictEqual<unknown>(listed.find((p) => p.id === id), { id, name: "Rental desk", grants: RENTAL, ...SPELLED_OUT }, id)
      }
    } finally {
      await market.close()
    }
  })
})
