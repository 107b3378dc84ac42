import { type Principal, StorageError } from "@gpu-market/core"
import { type StoredToken, TokenStore } from "@gpu-market/core/storage"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { randomBytes } from "node:crypto"
import { Batch, untilApplied } from "./batch.js"
import type { RedisClient } from "./client.js"
import { decode, encode } from "./codec.js"
import { AFTER_VALUE, encodeMember, encodeValue, memberTie } from "./lex.js"

/** The key of the tokens' version. */
const tokensVersionKey = (client: RedisClient): string => client.keys.key("tokens", "version")

/**
 * Tokens under the hash tag `{tokens}`: `by-hash` (hash token hash → msgpack principal) and
 * `by-principal` (sorted set, member `lex(principal id) ++ lex(token hash)`), which lists tokens
 * in the reference's order and finds a principal's tokens with one range. Both change together
 * in one checked batch, which also sets `version` (a string) to a fresh random value: `version`
 * is one GET.
 */
export const makeTokenStore = (client: RedisClient): TokenStore["Type"] => {
  const { redis } = client
  const byHash = client.keys.key("tokens", "by-hash")
  const byPrincipal = client.keys.key("tokens", "by-principal")
  const version = tokensVersionKey(client)
  const bump = (batch: Batch) => batch.op("SET", version, randomBytes(8).toString("hex"))

  /** Runs `attempt` until its batch applies; a batch whose checks failed is decided again. */
  const retrying = (operation: string, attempt: () => Promise<boolean | "retry">) =>
    untilApplied(client, operation, attempt, () => new StorageError({ operation, cause: "the tokens kept changing under this write" }))

  return {
    put: (tokenHash, principal) =>
      Effect.asVoid(retrying("tokens.put", async () => {
        const old = await redis.hgetBuffer(byHash, tokenHash)
        const batch = new Batch().expect(byHash, tokenHash, old)
        if (old !== null) batch.op("ZREM", byPrincipal, encodeMember(decode<Principal>(old).id, tokenHash))
        batch.op("HSET", byHash, tokenHash, encode(principal)).op("ZADD", byPrincipal, "0", encodeMember(principal.id, tokenHash))
        bump(batch)
        return (await batch.execute(client)) === 0 || "retry"
      })),

    find: (tokenHash) =>
      client.run("tokens.find", async () => {
        const bytes = await redis.hgetBuffer(byHash, tokenHash)
        return bytes === null ? Option.none() : Option.some<StoredToken>({ tokenHash, principal: decode<Principal>(bytes) })
      }),

    list: client.run("tokens.list", async () => {
      const hashes = (await redis.zrangeBuffer(byPrincipal, 0, -1)).map(memberTie)
      if (hashes.length === 0) return []
      const values = await redis.hmgetBuffer(byHash, ...hashes)
      const out: Array<StoredToken> = []
      hashes.forEach((tokenHash, i) => {
        const bytes = values[i]
        if (bytes != null) out.push({ tokenHash, principal: decode<Principal>(bytes) })
      })
      return out
    }),

    revoke: (principalId) =>
      retrying("tokens.revoke", async () => {
        const prefix = encodeValue(principalId)
        const members = await redis.zrangebylexBuffer(
          byPrincipal, Buffer.concat([Buffer.from("["), prefix]), Buffer.concat([Buffer.from("["), prefix, AFTER_VALUE])
        )
        if (members.length === 0) return false
        const batch = new Batch()
        const hashes = members.map(memberTie)
        const values = await redis.hmgetBuffer(byHash, ...hashes)
        hashes.forEach((hash, i) => {
          batch.expect(byHash, hash, values[i] ?? null).op("ZREM", byPrincipal, members[i]!)
          batch.op("HDEL", byHash, hash)
        })
        bump(batch)
        return (await batch.execute(client)) === 0 || "retry"
      }),

    // Never set until the first token is: the empty string stands for that state.
    version: client.run("tokens.version", async () => (await redis.get(version)) ?? "")
  }
}
