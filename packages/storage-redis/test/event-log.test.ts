import { assert, describe, layer } from "@effect/vitest"
import { hardwareDay, hardwareRow, testListingKey } from "@gpu-market/storage-testkit"
import { EventLogStore, HardwarePriceStore } from "@gpu-market/core/storage"
import { Effect, Either, Layer } from "effect"
import { redisStorageLayer, testRedisLayer } from "../../../test/support/redis"

/**
 * The change feed's streams past their retention: `MAXLEN ~` trims whole stream nodes (100
 * entries each by default), so a stream kept to 10 entries loses its first nodes once it holds a
 * few hundred; a position before what was trimmed fails with `EventLogTrimmed` (the feed's 410)
 * rather than resuming with a gap, and one after it reads on.
 */
const storage = redisStorageLayer("event-log", { eventRetention: 10 }).pipe(Layer.provide(testRedisLayer()))

describe("redis event log retention", () => {
  layer(storage, { timeout: "60 seconds" })((it) => {
    it.effect("a position the streams trimmed past fails with EventLogTrimmed; a later one resumes exactly", () =>
      Effect.gen(function* () {
        const log = yield* EventLogStore
        const hardware = yield* HardwarePriceStore
        const start = yield* log.head
        for (let batch = 0; batch < 12; batch++) {
          yield* hardware.put(Array.from({ length: 25 }, (_, i) =>
            hardwareRow({ listing_key: testListingKey(`trim-${batch}-${i}`), gpu_canonical_name: "h100-sxm", observed_date: hardwareDay(1) })))
        }
        const trimmed = yield* Effect.either(log.read(start, 10))
        assert.isTrue(Either.isLeft(trimmed) && trimmed.left._tag === "EventLogTrimmed")
        // A follower so far behind is told too, rather than carrying on from what was kept.
        const followed = yield* Effect.either(log.follow(start, 10))
        assert.isTrue(Either.isLeft(followed) && followed.left._tag === "EventLogTrimmed")
        // The newest entries are kept: resuming after the last but one reads the last.
        const head = yield* log.head
        const [, hw, ...rest] = head.split("_")
        const [ms, seq] = hw!.split("-").map(Number) as [number, number]
        // The id just before it: the same millisecond's sequence less one, or, at sequence 0, the
        // millisecond before's last (Redis sequences are unsigned 64-bit).
        const just = seq > 0 ? `${ms}-${seq - 1}` : `${ms - 1}-18446744073709551615`
        const before = ["0-0", just, ...rest].join("_")
        const last = yield* log.read(before, 10)
        assert.strictEqual(last.length, 1)
        assert.strictEqual(last[0]!.id, hw)
        assert.strictEqual(last[0]!.event.type, "hardware_observation")
      }))
  })
})
