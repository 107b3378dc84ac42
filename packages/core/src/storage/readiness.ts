import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { StorageUnavailable } from "../errors.js"
import type { SettingsStore, StorageError } from "./contract.js"

/**
 * Whether the storage may take traffic beyond answering reads: succeeds while it may, fails with
 * a `StorageUnavailable` that names why not — the store lost its data under the process (a Redis
 * restarted without persistence, flushed) or was set up again since, its file was deleted or
 * replaced, or its file is corrupt. `/readyz` reads it after the tokens version, so an
 * orchestrator stops routing to such a process instead of taking the 401s or the damaged rows it
 * would answer with. Absent where the backend has nothing to watch (memory, whose data lives and
 * dies with the process).
 */
export class StoreReadiness extends Context.Reference<StoreReadiness>()("Market/StoreReadiness", {
  defaultValue: (): Effect.Effect<void, StorageError | StorageUnavailable> | undefined => undefined
}) {}

/** What `/readyz` says of a market's sync where the server syncs beside serving (`serve --sync`). */
export interface SyncFreshness {
  /** The sources whose data is stale: last success older than their stale age, or failed and never a success. */
  readonly stale: ReadonlyArray<string>
  /** The oldest last success among the sources that have one; null when none has. */
  readonly oldest_success_at: string | null
}

/**
 * How `/readyz` reads the sync's freshness from the settings at `nowMs`; absent where the server
 * does not sync. Stale data never makes a server unready (stale prices beat no prices): it is a
 * field of the ready body for whoever watches.
 */
export class SyncFreshnessReader extends Context.Reference<SyncFreshnessReader>()("Market/SyncFreshnessReader", {
  defaultValue: (): ((settings: SettingsStore["Type"], nowMs: number) => Effect.Effect<SyncFreshness, StorageError>) | undefined => undefined
}) {}
