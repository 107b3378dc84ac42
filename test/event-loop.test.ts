import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"

/**
 * The test workers' event loop turns during a long Effect computation (test/support/yielding-scheduler.ts),
 * so a worker reads vitest's RPC replies in time however long a test computes in-process.
 */
describe("test workers", () => {
  it("a long Effect computation lets timers run while it computes", async () => {
    let ticks = 0
    const timer = setInterval(() => ticks++, 1)
    let sum = 0
    // About a hundred fiber yields: as microtasks alone, no timer would run until it ends.
    await Effect.runPromise(Effect.forEach(Array.from({ length: 200_000 }, (_, i) => i), (i) => Effect.sync(() => (sum += i)), { discard: true }))
    const during = ticks
    clearInterval(timer)
    assert.strictEqual(sum, 199_999 * 100_000)
    assert.isAbove(during, 0)
  })
})
