import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { StorageUnavailable } from "../errors.js"
import type { StorageError } from "./contract.js"

/**
 * Whether the storage is still the store this process opened: succeeds while it is, fails with
 * a `StorageUnavailable` that says what happened when the store lost its data under the process
 * (a Redis restarted without persistence, flushed) or was set up again since. `/readyz` reads it
 * beside the tokens version, so an orchestrator stops routing to a server whose tokens and data
 * are gone instead of taking every 401 it then answers for a healthy store. Absent where the
 * backend keeps no such mark (memory, whose data lives and dies with the process).
 */
export class StoreIdentity extends Context.Reference<StoreIdentity>()("Market/StoreIdentity", {
  defaultValue: (): Effect.Effect<void, StorageError | StorageUnavailable> | undefined => undefined
}) {}
