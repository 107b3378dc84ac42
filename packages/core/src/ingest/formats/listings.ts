import { hash16 } from "../key-hash.js"
import type { Converted } from "./conversion.js"
import type { Rejection } from "./report.js"
import type { SkypilotObservation } from "./skypilot.js"

/**
 * The products a streamed SkyPilot import has written, each with its first listing: what tells a
 * listing in a later batch apart as a repeat or a conflicting price, as the write path tells them
 * apart within one batch. It holds one entry per product, never the file's rows, and holds them
 * outside the JavaScript heap: an open-addressing table of 16-byte keys with a line and a price
 * each in typed arrays, 28 bytes a slot (a `Map` of string keys took about 130 bytes a product,
 * and the collector lets the heap grow in proportion to what stays live).
 */

/** What the import knows of a product's first listing, in an earlier batch. */
export interface EarlierListing {
  readonly line: number
  /** The later listing has the first one's price: a repeat. */
  readonly samePrice: boolean
  /** The first listing was stored (it was not refused as a conflicting price). */
  readonly stored: boolean
}

/** The products of the batches written so far, keyed by what identifies a product in a SkyPilot file. */
export interface ProductListings {
  /** The product's key, the same for every listing of one product. */
  readonly key: (c: Converted<SkypilotObservation>) => string
  /** The product's first listing, when an earlier batch had one. */
  readonly earlier: (key: string, c: Converted<SkypilotObservation>) => EarlierListing | undefined
  /**
   * Records a written batch (the products of `keys`): each product's first listing in it, unless
   * it was refused for another reason than a conflicting price, in which case a later listing is
   * written as if it were the first.
   */
  readonly written: (batch: ReadonlyArray<Converted<SkypilotObservation>>, keys: ReadonlyArray<string>, refused: ReadonlyArray<Rejection>) => void
}

/** Bytes of a product key (`hash16`: 128 bits of SHA-256, one byte a character). */
const KEY_BYTES = 16

/** The share of slots in use at which the table doubles: linear probing stays a probe or two. */
const MAX_LOAD = 0.7

const MIN_SLOTS = 1024

/**
 * A new record of product listings, sized for about `expected` products (it grows past them). A
 * product is keyed by the fields the write path's product identity is made of (its base key), as
 * the converter fills them: two listings with one key are one product, whose GPU the catalog
 * resolves alike from one name and one memory.
 */
export const productListings = (expected = 0): ProductListings => {
  let slots = Math.max(MIN_SLOTS, Math.ceil(expected / MAX_LOAD))
  let keys = new Uint8Array(slots * KEY_BYTES)
  // A listing's line (lines count from 1); 0 is an empty slot.
  let lines = new Uint32Array(slots)
  // NaN for a first listing refused as a conflicting price: every later listing conflicts too.
  let prices = new Float64Array(slots)
  let used = 0

  const sameKey = (slot: number, key: string) => {
    const at = slot * KEY_BYTES
    for (let i = 0; i < KEY_BYTES; i++) if (keys[at + i] !== key.charCodeAt(i)) return false
    return true
  }
  /** The slot of `key`: its own, or the empty one where it belongs. The key is a hash already: its first four bytes place it. */
  const slotOf = (key: string) => {
    let slot = ((key.charCodeAt(0) << 24) | (key.charCodeAt(1) << 16) | (key.charCodeAt(2) << 8) | key.charCodeAt(3)) >>> 0
    slot %= slots
    while (lines[slot] !== 0 && !sameKey(slot, key)) slot = slot + 1 === slots ? 0 : slot + 1
    return slot
  }
  const put = (slot: number, key: string, line: number, price: number) => {
    for (let i = 0; i < KEY_BYTES; i++) keys[slot * KEY_BYTES + i] = key.charCodeAt(i)
    lines[slot] = line
    prices[slot] = price
  }
  const grow = () => {
    const old = { keys, lines, prices, slots }
    slots *= 2
    keys = new Uint8Array(slots * KEY_BYTES)
    lines = new Uint32Array(slots)
    prices = new Float64Array(slots)
    for (let s = 0; s < old.slots; s++) {
      if (old.lines[s] === 0) continue
      const key = String.fromCharCode(...old.keys.subarray(s * KEY_BYTES, (s + 1) * KEY_BYTES))
      put(slotOf(key), key, old.lines[s]!, old.prices[s]!)
    }
  }

  return {
    key: ({ observation: o }) =>
      hash16([o.vendor, o.vendor_sku, o.vendor_gpu_name, o.gpu_memory_gb, o.vendor_region, o.region, o.gpu_count, o.instance_type, o.instance_variant, o.contract_type]),
    earlier: (key, c) => {
      const slot = slotOf(key)
      if (lines[slot] === 0) return undefined
      const price = prices[slot]!
      return { line: lines[slot]!, samePrice: price === c.observation.raw_price, stored: !Number.isNaN(price) }
    },
    written: (batch, batchKeys, refused) => {
      const reasons = new Map(refused.map((r) => [r.line, r.reason]))
      batch.forEach((c, i) => {
        const key = batchKeys[i]!
        const reason = reasons.get(c.line)
        if (reason !== undefined && reason !== "conflicting_price") return
        if (used + 1 > slots * MAX_LOAD) grow()
        const slot = slotOf(key)
        if (lines[slot] !== 0) return
        put(slot, key, c.line, reason === undefined ? c.observation.raw_price : Number.NaN)
        used++
      })
    }
  }
}
