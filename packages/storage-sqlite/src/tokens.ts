import type { Principal } from "@gpu-market/core"
import { type StoredToken, TokenStore } from "@gpu-market/core/storage"
import * as Option from "effect/Option"
import { randomBytes } from "node:crypto"
import type { SqliteClient } from "./client.js"

interface TokenRow {
  readonly token_hash: string
  readonly principal_json: string
}

const toStored = (row: TokenRow): StoredToken => ({
  tokenHash: row.token_hash,
  principal: JSON.parse(row.principal_json) as Principal
})

/** The settings row holding the tokens' version. */
const VERSION = "tokens.version"

/**
 * The token store. The principal is kept whole as JSON beside its id column: it is only ever
 * looked up by hash or listed/revoked by id. Every change also writes a fresh random version to
 * the `settings` row `tokens.version` in its transaction, which `version` reads by primary key.
 */
export const makeTokenStore = (client: SqliteClient): TokenStore["Type"] => {
  const { prepare } = client
  const bump = () =>
    prepare("INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value")
      .run(VERSION, randomBytes(8).toString("hex"))
  return {
    put: (tokenHash, principal) =>
      client.transaction("tokens.put", () => {
        prepare(
          `INSERT INTO tokens (token_hash, principal_id, principal_json) VALUES (?, ?, ?)
           ON CONFLICT (token_hash) DO UPDATE SET principal_id = excluded.principal_id, principal_json = excluded.principal_json`
        ).run(tokenHash, principal.id, JSON.stringify(principal))
        bump()
      }),
    find: (tokenHash) =>
      client.read("tokens.find", () => {
        const row = prepare("SELECT token_hash, principal_json FROM tokens WHERE token_hash = ?").get(tokenHash) as TokenRow | undefined
        return row === undefined ? Option.none() : Option.some(toStored(row))
      }),
    list: client.read("tokens.list", () =>
      (prepare("SELECT token_hash, principal_json FROM tokens ORDER BY principal_id, token_hash").all() as Array<TokenRow>).map(toStored)),
    revoke: (principalId) =>
      client.transaction("tokens.revoke", () => {
        const revoked = prepare("DELETE FROM tokens WHERE principal_id = ?").run(principalId).changes > 0
        if (revoked) bump()
        return revoked
      }),
    // Never written until the first token is: the empty string stands for that state.
    version: client.readStamped("tokens.version", () => (prepare("SELECT value FROM settings WHERE name = ?").pluck().get(VERSION) as string | undefined) ?? "")
  }
}
