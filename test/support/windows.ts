import { assert } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { http, NOW_MS, type Reply } from "./market"

/**
 * Asserts that consecutive windows tile: for each `[a, b, c]`, `history` of `[a,b)` and of
 * `[b,c)` are both non-empty and together are exactly `[a,c)`, in order (as `keys` names rows).
 */
export const assertWindowsTile = <E, R>(
  history: (query: string) => Effect.Effect<Reply, E, R>,
  keys: (r: Reply) => ReadonlyArray<string>,
  triples: ReadonlyArray<readonly [string, string, string]>
) =>
  Effect.gen(function* () {
    for (const [a, b, c] of triples) {
      const ab = yield* history(`start=${encodeURIComponent(a)}&end=${encodeURIComponent(b)}`)
      const bc = yield* history(`start=${encodeURIComponent(b)}&end=${encodeURIComponent(c)}`)
      const ac = yield* history(`start=${encodeURIComponent(a)}&end=${encodeURIComponent(c)}`)
      assert.isAbove(keys(ab).length, 0)
      assert.isAbove(keys(bc).length, 0)
      assert.deepStrictEqual([...keys(ab), ...keys(bc)], keys(ac))
    }
  })

/**
 * Asserts that a page token cannot carry a caller below a floor that moved. With the fixtures'
 * clock, a rolling token's floor is 2026-06-05; `first` (a history query from that day, several
 * pages long) is not clamped, and three days on its next page is clamped to 2026-06-08 and holds
 * no row whose `field` is earlier. `path` is the type's history endpoint.
 */
export const assertTokenKeepsMovedFloor = (path: string, first: string, token: string, field: string) =>
  Effect.gen(function* () {
    const page = yield* http(`${path}?${first}`, { token })
    assert.isFalse(page.body.meta.window.clamped)
    yield* TestClock.setTime(NOW_MS + 3 * 86_400_000)
    const next = yield* http(`${path}?page_token=${page.body.meta.next.query_params.page_token}`, { token })
    assert.strictEqual(next.status, 200)
    assert.isTrue(next.body.meta.window.clamped)
    assert.strictEqual(next.body.meta.window.start, "2026-06-08T00:00:00.000000Z")
    assert.isTrue(next.body.data.every((row: any) => row[field] >= "2026-06-08"))
  })
