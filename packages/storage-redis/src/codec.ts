import { Packr } from "msgpackr"
import { CorruptValue } from "./errors.js"

/**
 * Stored values are msgpack with msgpackr records. A table declares its row shapes in code as
 * shared structures (`TableSpec.structures`), so a row holds only its values, and every process
 * and every restart decodes it with no state in Redis. A value of another shape carries its own
 * record definition inline, so it still decodes anywhere.
 *
 * Declared structures make a row less than half the bytes of JSON or of self-describing records,
 * and decode it several times faster than either (BENCHMARKS.md, "Measurements behind code choices").
 *
 * The structure list of a table is append-only: a stored value names its structure by position,
 * so changing or reordering an entry would misread every value written with it. A new row shape
 * is a new entry at the end.
 */
export interface Codec {
  readonly encode: (value: unknown) => Buffer
  readonly decode: <A>(bytes: Buffer) => A
}

/** A codec whose records use `structures` (field names in order) as shared structures. */
export const makeCodec = (structures: ReadonlyArray<ReadonlyArray<string>> = []): Codec => {
  // Capped at the declared list, so a new shape never becomes a shared structure that only
  // this process knows.
  const packr = new Packr({ useRecords: true, moreTypes: false, structures: structures.map((s) => [...s]), maxSharedStructures: structures.length })
  return {
    encode: (value) => packr.pack(value),
    decode: <A>(bytes: Buffer) => {
      try {
        return packr.unpack(bytes) as A
      } catch (cause) {
        // msgpackr throws plain `Error`s, which look like the connection's: named, they are a defect.
        throw new CorruptValue("a stored value does not decode", { cause })
      }
    }
  }
}

const plain = makeCodec()

/** Encodes a value with no declared structure (self-describing records). */
export const encode = plain.encode

/** Decodes a value written by `encode`. */
export const decode = plain.decode
