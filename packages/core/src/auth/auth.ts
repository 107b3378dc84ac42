import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { type StorageUnavailable, Unauthenticated, validationFailed } from "../errors.js"
import { unavailable } from "../market/storage.js"
import { type StoredToken, TokenStore } from "../storage/contract.js"
import { NewPrincipal, type Principal, type PrincipalInput } from "./principal.js"
import { hashToken, newTokenSecret, sameHash } from "./token-hash.js"

const decodePrincipal = Schema.decodeUnknown(NewPrincipal, { errors: "all", onExcessProperty: "error" })

const BEARER = /^Bearer[ \t]+([A-Za-z0-9._~+/=-]{1,512})[ \t]*$/i

/**
 * Tokens whose lookups one process keeps at most; past it the oldest is dropped. A deployment with
 * more live tokens than this looks the rest up as before, and a flood of callers stays bounded.
 */
const CACHED_TOKENS = 10_000

/**
 * A bearer token as one request presents it, hashed once from its `Authorization` header: what
 * `guess` and `authenticateCredential` look up. The secret itself is kept nowhere in the process.
 */
export interface Credential {
  /** SHA-256 of the token, hex: the key its principal is stored and cached under. */
  readonly tokenHash: string
}

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

    const authenticateCredential = (credential: Credential): Effect.Effect<Principal, Unauthenticated | StorageUnavailable> =>
      lookup(credential.tokenHash).pipe(
        Effect.mapError(unavailable),
        Effect.flatMap((found) =>
          Option.isSome(found) && sameHash(found.value.tokenHash, credential.tokenHash) ? Effect.succeed(found.value.principal) : Effect.fail(invalid()))
      )

    const credential = (authorization: string | undefined): Either.Either<Credential, Unauthenticated> => {
      if (authorization === undefined || authorization.length === 0) {
        return Either.left(new Unauthenticated({ detail: "send Authorization: Bearer <token>" }))
      }
      const m = BEARER.exec(authorization)
      if (m === null) return Either.left(new Unauthenticated({ detail: "the Authorization header is not a bearer token" }))
      return Either.right({ tokenHash: hashToken(m[1]!) })
    }

    const authenticate = (authorization: string | undefined): Effect.Effect<Principal, Unauthenticated | StorageUnavailable> =>
      Either.match(credential(authorization), { onLeft: Effect.fail, onRight: authenticateCredential })

    return {
      /**
       * The principal this process's cache holds for a request's credential, without
       * reading the store's version: a guess that lets a request start work (counting its rate
       * limit) while `authenticate` checks the token. It grants nothing by itself.
       */
      guess: (credential: Credential): Principal | undefined => cache.get(credential.tokenHash)?.principal,
      /** An `Authorization` header's bearer token, hashed; 401 when it is missing or not a bearer token. */
      credential,
      /** The principal of an `Authorization` header value; 401 when missing, malformed or unknown. */
      authenticate,
      /** The principal of a request's `credential`; 401 when no token has its hash. */
      authenticateCredential,
      /** The principal of a bare token secret (direct calls). */
      authenticateToken: (secret: string): Effect.Effect<Principal, Unauthenticated | StorageUnavailable> =>
        authenticateCredential({ tokenHash: hashToken(secret) }),
      /**
       * Whether `authorization` still admits its bearer, for a subscription that outlives its
       * request (`Feed.subscribe`): false once the token is revoked; true while the storage
       * cannot tell (the subscription reports that outage itself). The header is hashed at once:
       * what the subscription keeps is the token's hash, never the token.
       */
      stillHolds: (authorization: string | undefined): Effect.Effect<boolean> =>
        Either.match(credential(authorization), {
          onLeft: () => Effect.succeed(false),
          onRight: (c) =>
            authenticateCredential(c).pipe(
              Effect.as(true),
              Effect.catchTags({ Unauthenticated: () => Effect.succeed(false), StorageUnavailable: () => Effect.succeed(true) })
            )
        }),
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
