import * as crypto from "node:crypto"

/**
 * The keys write paths derive from a row's fields: SHA-256 (first 128 bits, hex) of the fields as
 * a JSON array. Node's one-shot `crypto.hash` (20.12 on) hashes a short string in about half the
 * time of a `Hash` object, which an import pays twice a row; older Node gets the same digest the
 * long way.
 */
/** SHA-256 of `text`, in hex. */
export const sha256Hex: (text: string) => string = typeof crypto.hash === "function"
  ? (text) => crypto.hash("sha256", text, "hex")
  : (text) => crypto.createHash("sha256").update(text).digest("hex")

/** SHA-256 of `JSON.stringify(parts)`, its first 128 bits in hex. */
export const hash32 = (parts: ReadonlyArray<unknown>): string => sha256Hex(JSON.stringify(parts)).slice(0, 32)

/** SHA-256 of `text`, its bytes. */
const sha256Bytes: (text: string) => Buffer = typeof crypto.hash === "function"
  ? (text) => crypto.hash("sha256", text, "buffer")
  : (text) => crypto.createHash("sha256").update(text).digest()

/**
 * SHA-256 of `JSON.stringify(parts)`, its first 128 bits as 16 one-byte characters: the same
 * strength as `hash32` in less memory (a slice of a hex digest keeps the whole digest alive),
 * for keys an import holds by the million.
 */
export const hash16 = (parts: ReadonlyArray<unknown>): string => sha256Bytes(JSON.stringify(parts)).toString("latin1", 0, 16)
