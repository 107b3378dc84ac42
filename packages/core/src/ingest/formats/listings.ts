import { hash16 } from "../key-hash.js"
import type { Converted } from "./conversion.js"
import type { Rejection } from "./report.js"
import type { SkypilotObservation } from "./skypilot.js"

/**
 * The products a streamed SkyPilot import has written, each with its first listing: what tells a
 * listing in a later batch apart as a repeat or a conflicting price, as the write path tells them
 * apart within one batch. It holds one entry per product, never the file's rows.
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

/**
 * A new record of product listings. A product is keyed by the fields the write path's product
 * identity is made of (its base key), as the converter fills them: two listings with one key are
 * one product, whose GPU the catalog resolves alike from one name and one memory.
 */
export const productListings = (): ProductListings => {
  const index = new Map<string, number>()
  const lines: Array<number> = []
  // NaN for a first listing refused as a conflicting price: every later listing conflicts too.
  const prices: Array<number> = []
  return {
    key: ({ observation: o }) =>
      hash16([o.vendor, o.vendor_sku, o.vendor_gpu_name, o.gpu_memory_gb, o.vendor_region, o.region, o.gpu_count, o.instance_type, o.instance_variant, o.contract_type]),
    earlier: (key, c) => {
      const i = index.get(key)
      if (i === undefined) return undefined
      const price = prices[i]!
      return { line: lines[i]!, samePrice: price === c.observation.raw_price, stored: !Number.isNaN(price) }
    },
    written: (batch, keys, refused) => {
      const reasons = new Map(refused.map((r) => [r.line, r.reason]))
      batch.forEach((c, i) => {
        const key = keys[i]!
        if (index.has(key)) return
        const reason = reasons.get(c.line)
        if (reason !== undefined && reason !== "conflicting_price") return
        index.set(key, lines.length)
        lines.push(c.line)
        prices.push(reason === undefined ? c.observation.raw_price : Number.NaN)
      })
    }
  }
}
