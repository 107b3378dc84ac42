import { MarketSettings, Problem } from "@gpu-market/core"
import { OperationError, type WriteArgs, type WriteName, writeNames } from "@gpu-market/core/adapters"
import * as Schema from "effect/Schema"

/**
 * The messages between a main thread and the market's worker threads, as Schemas: each side
 * encodes what it sends and decodes what it receives. Two calls cross, each a `TaggedRequest`: a
 * read by endpoint name and a write by operation name. A call's outcome comes back as its exit,
 * encoded by the call's own success and failure schemas: a read's result as the JSON text the
 * direct call serialises to (so a worker's envelope is the direct call's, byte for byte), a
 * write's encoded by its write's own schema (`writeResults`), a failure as its problem with the
 * `OperationError` it stands for (or a defect's text), so it arrives as the same
 * `MarketProblemError`. With `process` rate limits core's counting messages (`CountHit`,
 * `HitCounted`) cross the same channel: the main thread counts every worker's hits.
 */

/**
 * Where a worker's market keeps its data: a module exporting `layer(options)` and those options
 * (a backend's `PortableStorage`), since each worker opens its own storage.
 */
export const WorkerStorage = Schema.Struct({ module: Schema.String, options: Schema.Unknown })
export type WorkerStorage = typeof WorkerStorage.Type

/** What every worker is started with, as its `workerData`: encoded by the pool, decoded by the worker. */
export const WorkerConfig = Schema.Struct({
  storage: WorkerStorage,
  /**
   * The market's settings, decoded in the main thread first. With `rateLimits: "process"` the
   * main thread counts every worker's rate-limit hits; with `shared` each worker's storage does.
   */
  settings: MarketSettings
})
export type WorkerConfig = typeof WorkerConfig.Type

/** A defect (a bug, a record that does not decode) as it crosses: its text, logged in the worker. */
export class Defect extends Schema.TaggedClass<Defect>()("Defect", { pretty: Schema.String }) {}

/** How a call failed: its problem, and the `OperationError` it stands for or the defect it was. */
export const CallFailure = Schema.Struct({ problem: Problem, cause: Schema.Union(OperationError, Defect) })

/** A result as the direct call serialises it to JSON. */
const Json = Schema.String.annotations({ description: "JSON text" })

/** One read: the catalogue entry named `endpoint`, with the query and token of an HTTP request. */
export class Read extends Schema.TaggedRequest<Read>()("Read", {
  failure: CallFailure,
  success: Json,
  payload: {
    id: Schema.Number,
    endpoint: Schema.String,
    query: Schema.Record({ key: Schema.String, value: Schema.String }),
    token: Schema.optional(Schema.String)
  }
}) {}

/**
 * An argument list of a write. The writes decode what they are given, as they do for a JavaScript
 * caller of `createMarket`; here it need only be a list.
 */
const WriteArguments = Schema.declare((input: unknown): input is WriteArgs<WriteName> => Array.isArray(input), {
  identifier: "WriteArguments"
})

/**
 * A write's result as it crosses: encoded by its write's schema in `writeResults`, which the
 * worker encodes with and the pool decodes with, by the write's name.
 */
const WriteResultEncoded = Schema.Unknown.annotations({ description: "a write's result, encoded by its schema in writeResults" })

/** One write operation by name (`tokens.create`, `ingest.rental`, …) with its arguments. */
export class Write extends Schema.TaggedRequest<Write>()("Write", {
  failure: CallFailure,
  success: WriteResultEncoded,
  payload: { id: Schema.Number, name: Schema.Literal(...writeNames), args: WriteArguments }
}) {}

/** Asks the worker to release its storage and exit. */
export class Close extends Schema.TaggedRequest<Close>()("Close", { failure: Schema.Never, success: Schema.Void, payload: {} }) {}

/** A call from the main thread. */
export const WorkerRequest = Schema.Union(Read, Write, Close)
export type WorkerRequest = typeof WorkerRequest.Type

/** The worker is up: it answers calls from now on. */
export class Ready extends Schema.TaggedClass<Ready>()("Ready", {}) {}

/** The worker could not open its storage, and why. */
export class StartFailed extends Schema.TaggedClass<StartFailed>()("StartFailed", { message: Schema.String }) {}

/** The outcome of the call numbered `id`: its exit, encoded by the call's schemas (`Schema.exitSchema`). */
export class Answer extends Schema.TaggedClass<Answer>()("Answer", { id: Schema.Number, exit: Schema.Unknown }) {}

/** A worker's message: it is up (or could not start), or a call's outcome. */
export const WorkerReply = Schema.Union(Ready, StartFailed, Answer)
export type WorkerReply = typeof WorkerReply.Type
