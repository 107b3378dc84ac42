import * as Context from "effect/Context"

/**
 * Whether the storage's calls travel over connections that pipeline them (Redis): calls started
 * together then share a round trip, which is worth a fiber each. Off, the default, for stores
 * that answer at once (SQLite, memory): there calls run one after the other in the caller's
 * fiber, since a fiber costs more than the call.
 */
export class StorePipelines extends Context.Reference<StorePipelines>()("Market/StorePipelines", {
  defaultValue: () => false
}) {}
