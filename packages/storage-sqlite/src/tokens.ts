import type { Principal } from "@gpu-market/core"
import { type StoredToken, TokenStore } from "@gpu-market/core/storage"
import * as Option from "effect/Option"
import type { SqliteClient } from "./client.js"

interface TokenRow {
  readonly token_hash: string
  readonly principal_json: string
}

const toStored = (row: TokenRow): StoredToken => ({
  tokenHash: row.token_hash,
  principal: JSON.parse(row.principal_json) as Principal
})

/**
 * The token store. The principal is kept whole as JSON beside its id column: it is read on every
 * authenticated request and only ever looked up by hash or listed/revoked by id.
 */
export const makeTokenStore = (client: SqliteClient): TokenStore["Type"] => {
  const { prepare } = client
  return {
    put: (tokenHash, principal) =>
      client.run("tokens.put", () => {
        prepare(
          `INSERT INTO tokens (token_hash, principal_id, principal_json) VALUES (?, ?, ?)
           ON CONFLICT (token_hash) DO UPDATE SET principal_id = excluded.principal_id, principal_json = excluded.principal_json`
        ).run(tokenHash, principal.id, JSON.stringify(principal))
      }),
    find: (tokenHash) =>
      client.run("tokens.find", () => {
        const row = prepare("SELECT token_hash, principal_json FROM tokens WHERE token_hash = ?").get(tokenHash) as TokenRow | undefined
        return row === undefined ? Option.none() : Option.some(toStored(row))
      }),
    list: client.run("tokens.list", () =>
      (prepare("SELECT token_hash, principal_json FROM tokens ORDER BY principal_id, token_hash").all() as Array<TokenRow>).map(toStored)),
    revoke: (principalId) =>
      client.run("tokens.revoke", () => prepare("DELETE FROM tokens WHERE principal_id = ?").run(principalId).changes > 0)
  }
}
