import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { Packr } from "msgpackr"
import { type ValidationFailed, validationFailed } from "../errors.js"
import type { SortOrder } from "../schema/envelope.js"
import type { Position, Predicate, Scope } from "../storage/plan.js"
import { SettingsStore, type StorageError } from "../storage/contract.js"

/**
 * Page tokens: opaque, versioned, HMAC-signed, bound to the principal and the endpoint. A token
 * carries the normalised request (scope, predicates, sort) and the keyset position, so the next
 * page needs nothing else from the caller.
 */

const VERSION = 1
const MAC_BYTES = 16

/** What a page token carries. */
export interface PageTokenState {
  readonly scope: Scope
  readonly predicates: ReadonlyArray<Predicate>
  readonly sort: { readonly by: string; readonly order: SortOrder }
  /** Whether the window was clamped to the history floor when first asked. */
  readonly clamped: boolean
  readonly after: Position
}

type Wire = [
  version: number,
  principal: string,
  endpoint: string,
  scope: Scope,
  predicates: ReadonlyArray<Predicate>,
  sortBy: string,
  order: SortOrder,
  clamped: boolean,
  value: string | number,
  tie: string
]

const packr = new Packr({ useRecords: false, moreTypes: false })

const invalid = (message: string): ValidationFailed => validationFailed([{ parameter: "page_token", message }])

/** Signs and opens page tokens with the deployment's secret. */
export class PageTokens extends Context.Tag("Market/PageTokens")<
  PageTokens,
  {
    readonly sign: (principal: string, endpoint: string, state: PageTokenState) => string
    readonly open: (principal: string, endpoint: string, token: string) => Either.Either<PageTokenState, ValidationFailed>
  }
>() {
  /** Page tokens signed with `secret` (at least 32 bytes of entropy is advised). */
  static readonly make = (secret: Redacted.Redacted<string>): PageTokens["Type"] => {
    const key = Buffer.from(Redacted.value(secret), "utf8")
    const mac = (payload: Uint8Array) => createHmac("sha256", key).update(payload).digest().subarray(0, MAC_BYTES)
    return {
      sign: (principal, endpoint, state) => {
        const wire: Wire = [
          VERSION, principal, endpoint, state.scope, state.predicates, state.sort.by, state.sort.order,
          state.clamped, state.after.value, state.after.tie
        ]
        const payload = packr.pack(wire)
        return Buffer.concat([payload, mac(payload)]).toString("base64url")
      },
      open: (principal, endpoint, token) => {
        if (token.length === 0 || token.length > 4096 || !/^[A-Za-z0-9_-]+$/.test(token)) {
          return Either.left(invalid("not a page token from this service"))
        }
        const bytes = Buffer.from(token, "base64url")
        if (bytes.length <= MAC_BYTES) return Either.left(invalid("not a page token from this service"))
        const payload = bytes.subarray(0, bytes.length - MAC_BYTES)
        if (!timingSafeEqual(mac(payload), bytes.subarray(bytes.length - MAC_BYTES))) {
          return Either.left(invalid("not a page token from this service, or it was altered"))
        }
        let wire: Wire
        try {
          wire = packr.unpack(payload) as Wire
        } catch {
          return Either.left(invalid("not a page token from this service"))
        }
        if (!Array.isArray(wire) || wire[0] !== VERSION) return Either.left(invalid("a page token of an older version; start again from page 1"))
        if (wire[1] !== principal) return Either.left(invalid("this page token was issued to another caller"))
        if (wire[2] !== endpoint) return Either.left(invalid("this page token belongs to another endpoint"))
        return Either.right({
          scope: wire[3],
          predicates: wire[4],
          sort: { by: wire[5], order: wire[6] },
          clamped: wire[7],
          after: { value: wire[8], tie: wire[9] }
        })
      }
    }
  }

  /** Page tokens with a fixed secret. */
  static readonly layer = (secret: Redacted.Redacted<string>): Layer.Layer<PageTokens> =>
    Layer.succeed(PageTokens, PageTokens.make(secret))

  /**
   * Page tokens whose secret is kept in storage: made once at random and shared by every
   * process on that storage, so tokens survive restarts and work across instances.
   */
  static readonly layerFromStorage: Layer.Layer<PageTokens, StorageError, SettingsStore> = Layer.effect(
    PageTokens,
    Effect.gen(function* () {
      const settings = yield* SettingsStore
      const existing = yield* settings.get("page_token_secret")
      const secret = Option.isSome(existing)
        ? existing.value
        : yield* settings.getOrSet("page_token_secret", randomBytes(32).toString("base64url"))
      return PageTokens.make(Redacted.make(secret))
    })
  )
}
