import { assert, it } from "@effect/vitest"
import { Auth, marketLayer, RateLimits } from "@gpu-market/core"
import { admit } from "@gpu-market/core/adapters"
import { MemoryStorage } from "@gpu-market/core/storage"
import { Effect, Layer } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { getHeapSnapshot } from "node:v8"
import { atNow, TOKENS } from "./support/market"

/**
 * API tokens are stored and cached as SHA-256 hashes; a request's token is hashed once from its
 * header and the secret is not kept anywhere in the process once the request is admitted (the
 * token cache, the guess that counts a request early and a feed subscription's later checks all
 * hold the hash). Held to it by a heap snapshot, which V8 takes after a full garbage collection:
 * no live string of the process holds the secret.
 */

/** The process's heap snapshot (taken after a full collection), as bytes. */
const heapBytes = () =>
  Effect.promise(async () => {
    const chunks: Array<Buffer> = []
    for await (const chunk of getHeapSnapshot()) chunks.push(chunk as Buffer)
    return Buffer.concat(chunks)
  })

it.effect("a request's token secret is not kept in the process once it is admitted; only its hash is", () =>
  Effect.gen(function* () {
    yield* atNow
    const auth = yield* Auth
    const limits = yield* RateLimits
    // The secret's bytes, never held as a string by the test while the snapshot is taken.
    const bytes = randomBytes(24)
    const secret = () => `gm_${bytes.toString("base64url")}`
    yield* auth.issue(TOKENS.all, secret())
    for (let i = 0; i < 3; i++) {
      const admission = yield* admit(auth, limits, `Bearer ${secret()}`)
      assert.strictEqual(admission.principal.id, TOKENS.all.id)
    }
    const holds = auth.stillHolds(`Bearer ${secret()}`)
    assert.isTrue(yield* holds)
    // The last regular-expression match of the process held the header; another replaces it.
    assert.isNotNull(/held/.exec("held"))
    const heap = yield* heapBytes()
    assert.isAbove(heap.length, 1_000_000)
    assert.strictEqual(heap.indexOf(Buffer.from(secret())), -1, "the token's secret is in the heap")
    // The search finds what the process does keep: the token's hash, in the cache.
    assert.notStrictEqual(heap.indexOf(Buffer.from(createHash("sha256").update(secret()).digest("hex"))), -1)
  }).pipe(Effect.provide(marketLayer.pipe(Layer.provideMerge(MemoryStorage.layer)))))
