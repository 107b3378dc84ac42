import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { StorageUnavailable } from "../errors.js"
import type { StorageError } from "./contract.js"

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
