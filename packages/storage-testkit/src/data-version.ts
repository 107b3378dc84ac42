import { assert } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type { StorageError } from "@gpu-market/core/storage"

/**
 * Follows a store's data version (`…Store.version`) through a conformance test: `moved` asserts
 * it changed to a value never seen before (a write of rows), `still` that it did not (a read, a
 * refused write, a write of no rows). The suite's tests run one at a time, so nothing else
 * writes the type in between.
 */
export const followVersion = (version: Effect.Effect<string, StorageError>) =>
  Effect.map(version, (first) => {
    const seen = [first]
    return {
      moved: Effect.map(version, (v) => {
        assert.notInclude(seen, v, "a write of rows gives a version never seen before")
        seen.push(v)
      }),
      still: Effect.map(version, (v) => assert.strictEqual(v, seen.at(-1), "only a write of rows moves the version"))
    }
  })
