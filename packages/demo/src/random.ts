/** A deterministic number in [0, 1) from any list of parts (FNV-1a, then an avalanche mix). */
export const unit = (...parts: ReadonlyArray<string | number>): number => {
  let h = 0x811c9dc5
  const text = parts.join("|")
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return (h >>> 0) / 4294967296
}
