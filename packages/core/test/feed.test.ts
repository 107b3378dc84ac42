import { assert, describe, it } from "@effect/vitest"
import { Feed, type Principal, PrincipalId } from "@gpu-market/core"
import { EventLogStore, makeMemoryEventLog } from "@gpu-market/core/storage"
import { Effect, Either, Layer } from "effect"

describe("change feed", () => {
  it.effect("a subscription refused for a malformed event id starts no follower: a market nobody follows reads no log", () =>
    Effect.gen(function* () {
      const { store } = makeMemoryEventLog()
      let heads = 0
      const counted = Layer.succeed(EventLogStore, { ...store, head: Effect.suspend(() => (heads++, store.head)) })
      const principal: Principal = {
        id: PrincipalId.make("p"), name: "p", grants: { gpu_rental_prices: { history: { _tag: "unrestricted" } } }, indices: "all",
        legacy_custom_index: false, procurement: false, rate_limit_per_minute: 100
      }
      yield* Effect.scoped(Effect.gen(function* () {
        const feed = yield* Feed
        const refused = yield* Effect.either(feed.subscribe(principal, { data_type: "gpu_rental_prices" }, "not-an-id"))
        assert.isTrue(Either.isLeft(refused) && refused.left._tag === "ValidationFailed")
        if (Either.isLeft(refused) && refused.left._tag === "ValidationFailed") assert.strictEqual(refused.left.errors[0]?.parameter, "Last-Event-ID")
        assert.strictEqual(heads, 0)
      }).pipe(Effect.provide(Feed.Default.pipe(Layer.provide(counted)))))
    }))
})
