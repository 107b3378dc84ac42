import * as Rpc from "@effect/rpc/Rpc"
import * as RpcGroup from "@effect/rpc/RpcGroup"
import * as Schema from "effect/Schema"
import { catalogue, OperationError, writeNames } from "@gpu-market/core/adapters"

/**
 * The contract between a main thread and the market's worker threads: one Rpc for reads, one for
 * writes. Results travel as the JSON text the direct call serialises to, so a worker's envelope
 * is the direct call's, byte for byte; errors travel as the tagged errors, so they arrive typed.
 */

/**
 * Where a worker's market keeps its data: a module exporting `layer(options)` and those options
 * (a backend's `PortableStorage`), since each worker opens its own storage.
 */
export const WorkerStorage = Schema.Struct({ module: Schema.String, options: Schema.Unknown })
export type WorkerStorage = typeof WorkerStorage.Type

/** What every worker is started with. */
export const WorkerConfig = Schema.Struct({ storage: WorkerStorage, baseUrl: Schema.String })
export type WorkerConfig = typeof WorkerConfig.Type

/** A read endpoint by its dotted name, with the query as the HTTP layer gets it. */
export class Read extends Rpc.make("Read", {
  payload: {
    endpoint: Schema.Literal(...catalogue.map((e) => e.name)),
    query: Schema.Record({ key: Schema.String, value: Schema.String }),
    token: Schema.optional(Schema.String)
  },
  success: Schema.String,
  error: OperationError
}) {}

/** A token-admin or write operation, with its arguments. */
export class Write extends Rpc.make("Write", {
  payload: { name: Schema.Literal(...writeNames), args: Schema.Array(Schema.Unknown) },
  success: Schema.String,
  error: OperationError
}) {}

/** The worker's Rpcs. */
export class MarketRpcs extends RpcGroup.make(Read, Write) {}
