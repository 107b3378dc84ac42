import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { randomBytes } from "node:crypto"
import type { Principal } from "../auth/principal.js"
import { InsufficientEntitlement, NotFound, type StorageUnavailable } from "../errors.js"
import { unavailable } from "../market/storage.js"
import type { StorageError } from "../storage/errors.js"

/** The procurement grant, checked first on every procurement call. */
export const requireProcurement = (principal: Principal): Effect.Effect<void, InsufficientEntitlement> =>
  principal.procurement
    ? Effect.void
    : Effect.fail(new InsufficientEntitlement({ detail: "this token is not granted the procurement service" }))

/** A new opaque id: the kind's prefix and 128 random bits. */
export const newId = <A>(prefix: "off" | "prc" | "res"): A => `${prefix}_${randomBytes(16).toString("base64url")}` as A

/**
 * The id in a path as the schema's branded id, or the same 404 as an unknown id: a malformed id,
 * an unknown one and another caller's are indistinguishable.
 */
const pathId = <A, I>(schema: Schema.Schema<A, I>, what: string, id: string): Effect.Effect<A, NotFound> =>
  Schema.is(schema)(id) ? Effect.succeed(id) : Effect.fail(notFound(what, id))

/** The 404 of a missing (or foreign) record. */
const notFound = (what: string, id: string): NotFound =>
  new NotFound({ detail: `no ${what} ${JSON.stringify(id.slice(0, 64))}` })

/**
 * One of the caller's records by the id in a path, looked up by `lookup` once the id is well
 * formed: a malformed id, an unknown one and another caller's are the same 404, and a storage
 * failure is `StorageUnavailable`.
 */
export const ownRecord = <A extends string, I, R>(
  schema: Schema.Schema<A, I>,
  what: string,
  id: string,
  lookup: (id: A) => Effect.Effect<Option.Option<R>, StorageError>
): Effect.Effect<R, NotFound | StorageUnavailable> =>
  Effect.flatMap(pathId(schema, what, id), (valid) =>
    Effect.flatMap(Effect.mapError(lookup(valid), unavailable), Option.match({
      onNone: () => Effect.fail(notFound(what, valid)),
      onSome: Effect.succeed
    })))
