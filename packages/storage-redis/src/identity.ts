import { type StorageError, StorageUnavailable } from "@gpu-market/core"
import type { SettingsStore } from "@gpu-market/core/storage"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { randomUUID } from "node:crypto"

/** The setting that marks a store: a random id, written by the first process that opens it. */
export const STORE_MARK = "store_id"

/**
 * Marks the store as this process opens it, unless an earlier opening did (every process on the
 * store then reads the same mark), and returns its `StoreReadiness`: the mark still there and
 * unchanged. Redis keeps nothing through a restart without persistence, nor a FLUSHALL: the
 * mark goes with the tokens and the data, and nothing running writes it again, so a store
 * emptied under the server is never taken for a new one. A process opening the store afterwards
 * (a server started again, `gpu-market tokens create`) cannot tell it from a new store, and
 * marks it anew.
 */
export const markStore = (
  settings: SettingsStore["Type"]
): Effect.Effect<Effect.Effect<void, StorageError | StorageUnavailable>, StorageError> =>
  Effect.gen(function* () {
    // Read first, as the page-token secret is: a store already marked is opened without a write.
    const marked = yield* settings.get(STORE_MARK)
    const opened = Option.isSome(marked) ? marked.value : yield* settings.getOrSet(STORE_MARK, randomUUID())
    return Effect.flatMap(settings.get(STORE_MARK), Option.match({
      onNone: () => new StorageUnavailable({
        detail: `the Redis store has lost its data (its ${STORE_MARK} mark is gone: a restart without persistence, a FLUSHALL); not ready`
      }),
      onSome: (mark) => mark === opened ? Effect.void : new StorageUnavailable({
        detail: `the Redis store was emptied and set up again since this server opened it (its ${STORE_MARK} mark changed); not ready`
      })
    }))
  })
