import * as Context from "effect/Context"

/**
 * The corruption a backend found in its stored file, if any: read at once, with no round trip,
 * by `/readyz`, which answers 503 while it holds one, so an orchestrator takes the process out of
 * service. `undefined`: none found (yet). Absent where the backend does not check (Redis, memory).
 */
export class StoreIntegrity extends Context.Reference<StoreIntegrity>()("Market/StoreIntegrity", {
  defaultValue: (): (() => string | undefined) | undefined => undefined
}) {}
