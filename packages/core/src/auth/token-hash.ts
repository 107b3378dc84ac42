import { createHash, randomBytes, timingSafeEqual } from "node:crypto"

/** SHA-256 of an API token, hex. Only this is ever stored. */
export const hashToken = (secret: string): string => createHash("sha256").update(secret, "utf8").digest("hex")

/** Compares two token hashes in constant time. */
export const sameHash = (a: string, b: string): boolean =>
  a.length === b.length && timingSafeEqual(Buffer.from(a, "hex"), Buffer.from(b, "hex"))

/** A new random API token secret (`gm_` + 32 bytes base64url). Shown once, never stored. */
export const newTokenSecret = (): string => `gm_${randomBytes(32).toString("base64url")}`
