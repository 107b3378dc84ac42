import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { type StorageUnavailable, Unauthenticated, validationFailed } from "../errors.js"
import { unavailable } from "../market/storage.js"
import { type StoredToken, TokenStore } from "../storage/contract.js"
import { Principal, type PrincipalInput } from "./principal.js"
import { hashToken, newTokenSecret, sameHash } from "./token-hash.js"

const decodePrincipal = Schema.decodeUnknown(Principal, { errors: "all", onExcessProperty: "error" })

const BEARER = /^Bearer[ \t]+([A-Za-z0-9._~+/=-]{1,512})[ \t]*$/i

/**
 * Tokens whose lookups one process keeps at most; past it the oldest is dropped. A deployment with
 * more live tokens than this looks the rest up as before, and a flood of callers stays bounded.
 */
const CACHED_TOKENS = 10_000

const invalid = () => new Unauthenticated({ detail: "the bearer token is not valid" })

/**
 * Resolves bearer tokens to principals and issues new tokens. Lookups are cached in the process,
 * keyed by the token's hash (never its secret), under the token store's `version`: every
 * authentication reads the version, and one that moved (a token put or revoked by any process on
 * the store) empties the cache first, so a revocation holds from the next request on.
 */
export class Auth extends Effect.Service<Auth>()("Market/Auth", {
  effect: Effect.gen(function* () {
    const tokens = yield* TokenStore
    const cache = new Map<string, StoredToken>()
    let cachedAt: string | undefined

    // Every request authenticates, so these are not spans: a span costs more than a cached lookup.
    const lookup = (hash: string) => Effect.flatMap(tokens.version, (version) => {
      if (version !== cachedAt) {
        cache.clear()
        cachedAt = version
      }
      const cached = cache.get(hash)
      if (cached !== undefined) return Effect.succeed(Option.some(cached))
      return Effect.map(tokens.find(hash), (found) => {
        // Kept only if no request has seen another version since this one read it: what `find`
        // read is then no older than the version the cache is kept under.
        if (Option.isSome(found) && cachedAt === version) {
          if (cache.size >= CACHED_TOKENS) cache.delete(cache.keys().next().value!)
          cache.set(hash, found.value)
        }
        return found
      })
    })

    // A request hashes its token twice, for `guess` and `authenticate`, one after the other: the
    // second takes the first's hash.
    let lastSecret: string | undefined
    let lastHash = ""
    const hashOf = (secret: string): string => {
      if (secret !== lastSecret) {
        lastHash = hashToken(secret)
        lastSecret = secret
      }
      return lastHash
    }

    const authenticateToken = (secret: string): Effect.Effect<Principal, Unauthenticated | StorageUnavailable> => {
      const hash = hashOf(secret)
      return lookup(hash).pipe(
        Effect.mapError(unavailable),
        Effect.flatMap((found) =>
          Option.isSome(found) && sameHash(found.value.tokenHash, hash) ? Effect.succeed(found.value.principal) : Effect.fail(invalid()))
      )
    }

    const authenticate = (authorization: string | undefined): Effect.Effect<Principal, Unauthenticated | StorageUnavailable> => {
      if (authorization === undefined || authorization.length === 0) {
        return Effect.fail(new Unauthenticated({ detail: "send Authorization: Bearer <token>" }))
      }
      const m = BEARER.exec(authorization)
      if (m === null) return Effect.fail(new Unauthenticated({ detail: "the Authorization header is not a bearer token" }))
      return authenticateToken(m[1]!)
    }

    return {
      /**
       * The principal this process's cache holds for an `Authorization` header's token, without
       * reading the store's version: a guess that lets a request start work (counting its rate
       * limit) while `authenticate` checks the token. It grants nothing by itself.
       */
      guess: (authorization: string | undefined): Principal | undefined => {
        const m = authorization === undefined ? null : BEARER.exec(authorization)
        return m === null ? undefined : cache.get(hashOf(m[1]!))?.principal
      },
      /** The principal of an `Authorization` header value; 401 when missing, malformed or unknown. */
      authenticate,
      /** The principal of a bare token secret (direct calls). */
      authenticateToken,
      /**
       * Whether `authorization` still admits its bearer, for a subscription that outlives its
       * request (`Feed.subscribe`): false once the token is revoked; true while the storage
       * cannot tell (the subscription reports that outage itself).
       */
      stillHolds: (authorization: string | undefined): Effect.Effect<boolean> =>
        authenticate(authorization).pipe(
          Effect.as(true),
          Effect.catchTags({ Unauthenticated: () => Effect.succeed(false), StorageUnavailable: () => Effect.succeed(true) })
        ),
      /** Stores a principal under a new random token and returns the secret, which is not kept. */
      issue: Effect.fn("Auth.issue")(function* (principal: PrincipalInput, secret: string = newTokenSecret()) {
        // Grants are validated here, where they enter: a principal read back is trusted.
        const valid = yield* decodePrincipal(principal).pipe(Effect.mapError((e) =>
          validationFailed(ParseResult.ArrayFormatter.formatErrorSync(e).map((i) => ({
            parameter: i.path.join(".") || "principal",
            message: i.message
          })))
        ))
        yield* Effect.mapError(tokens.put(hashToken(secret), valid), unavailable)
        return secret
      })
    } as const
  })
}) {}
