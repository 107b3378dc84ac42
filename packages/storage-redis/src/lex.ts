/**
 * Order-preserving byte encodings for sorted-set members. Every index member has score 0, so
 * Redis orders members by their bytes (memcmp); these encodings make that byte order the order
 * the reference store uses, JS `<`:
 *
 * - text: each UTF-16 code unit as CESU-8 (1 to 3 bytes; surrogates encoded one by one), which
 *   orders as UTF-16 code units do (plain UTF-8 does not, beyond the BMP). Bytes 0x00 and 0x01
 *   are escaped as 0x01 0x01 and 0x01 0x02, and the text ends with 0x00, so a text sorts before
 *   every longer text it starts, and the end of a text is unambiguous.
 * - number: the IEEE-754 double, big-endian, with the sign bit flipped for non-negative numbers
 *   and every bit flipped for negative ones (-0 is written as 0).
 *
 * A value starts with a type byte, 0x01 text (null is the empty text, as `sortValue` has it) or
 * 0x02 number, so a member can be split back into its value and tie-breaker. A member is
 * `value ++ text(tie)`: the tie-breaker orders rows with equal values.
 */

const TEXT = 0x01
const NUMBER = 0x02

const pushText = (out: Array<number>, s: string): void => {
  for (let i = 0; i < s.length; i++) {
    const u = s.charCodeAt(i)
    if (u <= 0x01) out.push(0x01, u + 1)
    else if (u < 0x80) out.push(u)
    else if (u < 0x800) out.push(0xc0 | (u >> 6), 0x80 | (u & 0x3f))
    else out.push(0xe0 | (u >> 12), 0x80 | ((u >> 6) & 0x3f), 0x80 | (u & 0x3f))
  }
  out.push(0)
}

const float = new DataView(new ArrayBuffer(8))

const pushValue = (out: Array<number>, value: string | number | null): void => {
  if (typeof value === "number") {
    float.setFloat64(0, value === 0 ? 0 : value)
    const negative = (float.getUint8(0) & 0x80) !== 0
    out.push(NUMBER)
    for (let i = 0; i < 8; i++) {
      const b = float.getUint8(i)
      out.push(negative ? b ^ 0xff : i === 0 ? b ^ 0x80 : b)
    }
  } else {
    out.push(TEXT)
    pushText(out, value ?? "")
  }
}

/** The encoding of a sort value alone: every member holding that value starts with it. */
export const encodeValue = (value: string | number | null): Buffer => {
  const out: Array<number> = []
  pushValue(out, value)
  return Buffer.from(out)
}

/** The member of a row with sort value `value` and tie-breaker `tie`. */
export const encodeMember = (value: string | number | null, tie: string): Buffer => {
  const out: Array<number> = []
  pushValue(out, value)
  pushText(out, tie)
  return Buffer.from(out)
}

/** The member of a key alone (an index ordered by the tie-breaker only). */
export const encodeText = (s: string): Buffer => {
  const out: Array<number> = []
  pushText(out, s)
  return Buffer.from(out)
}

/** Decodes the text starting at `at`; returns it and the offset past its terminator. */
const readText = (b: Buffer, at: number): [string, number] => {
  const units: Array<number> = []
  let i = at
  for (;;) {
    const c = b[i]!
    if (c === 0) return [String.fromCharCode(...units), i + 1]
    if (c === 0x01) {
      units.push(b[i + 1]! - 1)
      i += 2
    } else if (c < 0x80) {
      units.push(c)
      i += 1
    } else if (c < 0xe0) {
      units.push(((c & 0x1f) << 6) | (b[i + 1]! & 0x3f))
      i += 2
    } else {
      units.push(((c & 0x0f) << 12) | ((b[i + 1]! & 0x3f) << 6) | (b[i + 2]! & 0x3f))
      i += 3
    }
  }
}

/** The tie-breaker of a member made by `encodeMember`. */
export const memberTie = (member: Buffer): string => {
  const at = member[0] === NUMBER ? 9 : readText(member, 1)[1]
  return readText(member, at)[0]
}

/** The sort value of a member made by `encodeMember` from a text (or null) value. */
export const memberText = (member: Buffer): string => readText(member, 1)[0]

/** The text of a member made by `encodeText`. */
export const decodeText = (member: Buffer): string => readText(member, 0)[0]

/**
 * A byte greater than any that starts an encoded text's next unit, so `value ++ [0xff]` is
 * above every member holding `value`: CESU-8 never produces 0xff.
 */
export const AFTER_VALUE = Buffer.from([0xff])
