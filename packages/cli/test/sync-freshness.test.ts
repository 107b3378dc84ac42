import { assert, describe, it } from "@effect/vitest"
import { MemoryStorage, SettingsStore } from "@gpu-market/core/storage"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { syncFreshness } from "../src/sync"
import { FETCH_DEFAULTS, type SyncSource } from "../src/sync-sources"

/**
 * What `/readyz` says of a syncing server's sources, read from their states in a real (memory)
 * store: stale once the last success is older than 3 intervals plus the lease time, or attempted
 * and never a success; a source never attempted is not stale yet.
 */

const source = (name: string): SyncSource => ({
  name, url: `https://example.invalid/${name}`, format: "litellm", type: undefined, vendor: undefined, snapshot: false,
  interval: Duration.hours(1), policy: {}, maxWithdrawal: 0.25, fetch: FETCH_DEFAULTS
})
const LEASE_MS = 30_000
const T = Date.parse("2026-11-27T12:00:00.000Z")
const state = (lastSuccess: string | null) => JSON.stringify({
  validators: {}, last_attempt: "2026-11-27T12:00:00.000Z", last_success: lastSuccess, outcome: lastSuccess === null ? "refused" : "imported",
  detail: "", counts: null, withdrawn: null, last_import: null, next_run: "2026-11-27T13:00:00.000Z"
})

describe("sync freshness on /readyz", () => {
  it.effect("stale past 3 intervals plus the lease time, or never a success once attempted; the oldest success named", () =>
    Effect.gen(function* () {
      const settings = yield* SettingsStore
      yield* settings.set("sync/fresh", state("2026-11-27T12:00:00.000Z"))
      yield* settings.set("sync/older", state("2026-11-27T11:00:00.000Z"))
      yield* settings.set("sync/failing", state(null))
      const read = syncFreshness([source("fresh"), source("older"), source("failing"), source("new")], LEASE_MS)
      // At 3 hours and the lease time after "fresh" succeeded it is fresh still; "older" went stale an hour before.
      const edge = T + 3 * 3_600_000 + LEASE_MS
      assert.deepStrictEqual(yield* read(settings, edge), { stale: ["older", "failing"], oldest_success_at: "2026-11-27T11:00:00.000Z" })
      assert.deepStrictEqual(yield* read(settings, edge + 1), { stale: ["fresh", "older", "failing"], oldest_success_at: "2026-11-27T11:00:00.000Z" })
      assert.deepStrictEqual(yield* syncFreshness([source("new")], LEASE_MS)(settings, edge), { stale: [], oldest_success_at: null })
      // A state that is no JSON is read as none, not as a failed probe.
      yield* settings.set("sync/garbled", "{not json")
      assert.deepStrictEqual(yield* syncFreshness([source("garbled")], LEASE_MS)(settings, edge), { stale: [], oldest_success_at: null })
    }).pipe(Effect.provide(MemoryStorage.layer)))
})
