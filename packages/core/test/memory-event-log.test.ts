import { assert, describe, it } from "@effect/vitest"
import { EventLogTrimmed, makeMemoryEventLog } from "@gpu-market/core/storage"
import { rentalRow } from "@gpu-market/storage-testkit"
import { Effect, Either } from "effect"
import fc from "fast-check"

describe("memory event log", () => {
  it("keeps exactly the newest `retention` events, whatever the batches they came in", () => {
    const row = rentalRow({ vendor: "v", gpu_canonical_name: "g" })
    fc.assert(fc.property(fc.integer({ min: 1, max: 6 }), fc.array(fc.integer({ min: 0, max: 9 }), { maxLength: 30 }), (retention, batches) => {
      const { sink, store } = makeMemoryEventLog(retention)
      let last = 0
      for (const size of batches) {
        sink(Array.from({ length: size }, () => ({ type: "rental_price" as const, row })))
        last += size
        const oldest = Math.max(1, last - retention + 1)
        for (let position = 0; position <= last; position++) {
          const read = Effect.runSync(Effect.either(store.read(String(position), 100)))
          if (position < oldest - 1) {
            assert.isTrue(Either.isLeft(read) && read.left instanceof EventLogTrimmed, `position ${position} of ${last}, retention ${retention}`)
          } else {
            assert.isTrue(Either.isRight(read))
            if (Either.isRight(read)) assert.deepStrictEqual(read.right.map((e) => Number(e.id)), Array.from({ length: last - position }, (_, i) => position + 1 + i))
          }
        }
        assert.strictEqual(Effect.runSync(store.head), String(last))
      }
    }))
  })
})
