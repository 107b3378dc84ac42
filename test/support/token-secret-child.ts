import { Auth, marketLayer, PrincipalId, RateLimits } from "@gpu-market/core"
import { admit } from "@gpu-market/core/adapters"
import { MemoryStorage } from "@gpu-market/core/storage"
import { Effect, Layer } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { getHeapSnapshot } from "node:v8"

/**
 * `tsx test/support/token-secret-child.ts`: in a process of its own (a small heap, so the
 * snapshot is quick however long a test worker has run), a market on the memory store issues a
 * token, admits three requests with it and starts a feed subscription's check, then takes a heap
 * snapshot (V8 collects garbage first) and prints one line `result <json>`: whether the token's
 * secret is in it, and whether its hash is (the search finds what the process does keep).
 */

/** The process's heap snapshot, as bytes. */
const heapBytes = () =>
  Effect.promise(async () => {
    const chunks: Array<Buffer> = []
    for await (const chunk of getHeapSnapshot()) chunks.push(chunk as Buffer)
    return Buffer.concat(chunks)
  })

const principal = {
  id: PrincipalId.make("t-secret"), name: "secret", grants: { gpu_rental_prices: { history: { _tag: "unrestricted" as const } } },
  indices: "all" as const, legacy_custom_index: false, procurement: false, rate_limit_per_minute: 1_000
}

const main = Effect.gen(function* () {
  const auth = yield* Auth
  const limits = yield* RateLimits
  // The secret's bytes: the process holds it as a string only while it uses it.
  const bytes = randomBytes(24)
  const secret = () => `gm_${bytes.toString("base64url")}`
  yield* auth.issue(principal, secret())
  let admitted = 0
  for (let i = 0; i < 3; i++) if ((yield* admit(auth, limits, `Bearer ${secret()}`)).principal.id === principal.id) admitted++
  const holds = yield* auth.stillHolds(`Bearer ${secret()}`)
  // The last regular-expression match of the process held the header; another replaces it.
  void /held/.exec("held")
  const heap = yield* heapBytes()
  return {
    admitted,
    holds,
    heapBytes: heap.length,
    secretFound: heap.indexOf(Buffer.from(secret())) >= 0,
    hashFound: heap.indexOf(Buffer.from(createHash("sha256").update(secret()).digest("hex"))) >= 0
  }
}).pipe(Effect.provide(marketLayer.pipe(Layer.provideMerge(MemoryStorage.layer))))

Effect.runPromise(main).then((result) => console.log(`result ${JSON.stringify(result)}`), (e: unknown) => {
  console.error(e)
  process.exitCode = 1
})
