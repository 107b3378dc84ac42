import { assert, describe, it } from "@effect/vitest"
import { StorageError } from "@gpu-market/core"
import { guardStorage, MemoryStorage, type StampedCounts, StoreStampedCounts } from "@gpu-market/core/storage"
import { Effect, Layer } from "effect"

/** Stamped counts whose next calls fail or succeed as the test says, counting the calls that reach them. */
const scripted = () => {
  const outcomes: Array<boolean> = []
  let reached = 0
  const counts: StampedCounts = {
    covers: () => true,
    stamp: () => Promise.resolve("s"),
    hit: () => {
      reached++
      return outcomes.shift() === false
        ? Promise.reject(new StorageError({ operation: "hit", cause: "down" }))
        : Promise.resolve({ count: 1, resetInMicros: 1, stamp: "s" })
    }
  }
  return { counts, outcomes, reached: () => reached }
}

describe("circuit breaker over stamped counts", () => {
  it.effect("a success between failures keeps it closed; three failures in a row open it, and it then refuses without reaching the storage", () =>
    Effect.gen(function* () {
      const inner = scripted()
      const counts = yield* Effect.provide(StoreStampedCounts, guardStorage(Layer.merge(MemoryStorage.layer, Layer.succeed(StoreStampedCounts, inner.counts)), { probeIntervalMs: 60_000 }))
      const hit = () => Effect.promise(() => counts!.hit("k", 60_000_000, 0, "gpu_rental_prices").then(() => "ok", (e: StorageError) => e.operation))
      inner.outcomes.push(false, false, true, false, false, false)
      const seen = []
      for (let i = 0; i < 7; i++) seen.push(yield* hit())
      assert.deepStrictEqual(seen.slice(0, 6), ["hit", "hit", "ok", "hit", "hit", "hit"])
      assert.match(seen[6]!, /^not tried/)
      assert.strictEqual(inner.reached(), 6)
    }).pipe(Effect.scoped))
})
