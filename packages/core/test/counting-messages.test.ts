import { assert, describe, it } from "@effect/vitest"
import { counterHost, remoteCounters } from "@gpu-market/core/adapters"
import * as Effect from "effect/Effect"

/** A channel as the cluster's IPC is: each message JSON text, delivered later. */
const channel = (deliver: (message: unknown) => void) => (message: unknown) => {
  const text = JSON.stringify(message)
  queueMicrotask(() => deliver(JSON.parse(text)))
}

describe("rate limits counted in another process", () => {
  it.effect("count two senders' hits into one window per key, each hit answered with its own count", () =>
    Effect.gen(function* () {
      const host = counterHost()
      const connect = () => {
        // The host answers through the sender's own channel, as a primary answers the worker that asked.
        const remote: ReturnType<typeof remoteCounters> = remoteCounters(channel((message) => {
          assert.isTrue(host(message, channel((answer) => assert.isTrue(remote.hear(answer)))))
        }))
        return remote.counters
      }
      const [a, b] = [connect(), connect()]
      const minute = 60_000_000
      const now = 90_000_000
      const counts = yield* Effect.all([a.hit("data:p", minute, now), b.hit("data:p", minute, now), a.hit("data:q", minute, now)], { concurrency: "unbounded" })
      assert.deepStrictEqual(counts.map((c) => c.count).sort(), [1, 1, 2])
      assert.deepStrictEqual(counts.map((c) => c.resetInMicros), [30_000_000, 30_000_000, 30_000_000])
      assert.deepStrictEqual((yield* b.hit("data:p", minute, now)).count, 3)
    }))

  it("leave every other message on the channel alone", () => {
    const host = counterHost()
    const { hear } = remoteCounters(() => {})
    for (const message of [{ _tag: "Read", id: 1 }, null, "gpu-market/CountHit", { _tag: "gpu-market/CountHit", hit: "1" }]) {
      assert.isFalse(host(message, () => assert.fail("answered a message that is not a hit")))
      assert.isFalse(hear(message))
    }
  })
})
