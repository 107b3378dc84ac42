import { assert, describe, it } from "@effect/vitest"
import { PrincipalId, StorageError } from "@gpu-market/core"
import { guardStorage, MemoryStorage, TokenStore } from "@gpu-market/core/storage"
import { Context, Effect, Layer, Logger, TestClock } from "effect"

describe("circuit breaker and a named fault", () => {
  it.effect("writes failing on a full disk never open it (reads go on), and the fault is logged once a minute while it lasts", () =>
    Effect.gen(function* () {
      const full = new StorageError({ operation: "tokens.put", cause: new Error("database or disk is full"), fault: "disk_full" })
      const storage = Layer.map(MemoryStorage.layer, (context) =>
        Context.add(context, TokenStore, { ...Context.get(context, TokenStore), put: () => Effect.fail(full) }))
      const tokens = yield* Effect.provide(TokenStore, guardStorage(storage, { probeIntervalMs: 60_000 }))
      const logs: Array<string> = []
      const logger = Logger.replace(Logger.defaultLogger, Logger.make(({ logLevel, message }) => {
        logs.push(`${logLevel.label} ${Array.isArray(message) ? message.join(" ") : String(message)}`)
      }))
      const principal = { id: PrincipalId.make("p"), name: "p", grants: {}, indices: "all", legacy_custom_index: false, procurement: false, rate_limit_per_minute: 60 } as const
      const put = Effect.flip(tokens.put("h", principal)).pipe(Effect.provide(logger))
      for (let i = 0; i < 5; i++) assert.strictEqual((yield* put).message, "tokens.put failed: the disk is full")
      assert.isString(yield* tokens.version, "a read is still let through after five failed writes")
      assert.deepStrictEqual(logs, ["WARN storage failed: the disk is full"])
      yield* TestClock.adjust("61 seconds")
      yield* put
      assert.deepStrictEqual(logs, ["WARN storage failed: the disk is full", "WARN storage failed: the disk is full"])
    }).pipe(Effect.scoped))
})
