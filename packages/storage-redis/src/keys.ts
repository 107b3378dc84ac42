/**
 * The key layout. Every key starts with the prefix and carries a Redis Cluster hash tag in
 * braces right after it: `<prefix>:{<tag>}:<rest>`. A tag names one unit of atomic writes (a
 * data type's table, the tokens, the settings), so every key one script touches hashes to one
 * slot. The package README lists every key pattern.
 */

/** Key builders under one prefix. */
export interface Keys {
  readonly prefix: string
  /** `<prefix>:{<tag>}:<parts joined by ":">`. */
  readonly key: (tag: string, ...parts: ReadonlyArray<string>) => string
}

/** The key layout under `prefix`, which may not hold braces (they would move the hash tag). */
export const makeKeys = (prefix: string): Keys => {
  if (/[{}]/.test(prefix)) throw new Error(`Redis key prefix may not contain braces: ${JSON.stringify(prefix)}`)
  return { prefix, key: (tag, ...parts) => `${prefix}:{${tag}}:${parts.join(":")}` }
}
