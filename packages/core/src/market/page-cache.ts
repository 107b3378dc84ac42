import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { createHash } from "node:crypto"
import { sha256Hex } from "../ingest/key-hash.js"
import { countNow, pageCacheLookups } from "../metrics.js"
import type { Page } from "../schema/envelope.js"
import type { Position } from "../storage/plan.js"

/**
 * The response cache: the one cache of answers on the read path (the other is each backend's row
 * cache). Its key, written down:
 *
 * - the endpoint (`/v2/gpu/rental/prices/latest`);
 * - the canonical query: the page plan the request resolved to (filters, scope, sort, position
 *   and size), which the caller's entitlements have already shaped (grants, history floor);
 * - the rest of the caller's entitlement scope the type's `page` reads (an index's holdings);
 * - the data version of the type, which every write of that type changes in the same atomic step
 *   as its rows, read before the rows were: an entry answers only while it is still the version.
 *
 * An entry holds the page's rows serialised once (`RowsBytes`) with the SHA-256 its entity tag is
 * made from. The per-caller parts of a page (`meta`, with the next-page token signed for the
 * caller) are rebuilt on every request around the cached bytes. What a type reads to resolve a
 * query (the GPU spellings a search matches) is kept in the same cache, under the same version
 * (`memo`). Bounded by `PageCacheBytes`, least recently used out first.
 */

/** Default budget of the page cache: 64 MiB of serialised rows and keys. */
export const DEFAULT_PAGE_CACHE_BYTES = 64 * 1024 * 1024

/**
 * Bytes the page cache may hold, counted as the characters of each entry's serialised rows and
 * key plus a fixed overhead; 0 turns it off. A market's default is `DEFAULT_PAGE_CACHE_BYTES`;
 * `createMarket({ pageCacheMb })`, the handlers' same option, `gpu-market serve --page-cache-mb`
 * and `PageCacheBytes.layer(bytes)` set another.
 */
export class PageCacheBytes extends Context.Reference<PageCacheBytes>()("Market/PageCacheBytes", {
  defaultValue: () => DEFAULT_PAGE_CACHE_BYTES
}) {
  /** A budget of `bytes`; one that is not a whole number ≥ 0 throws a `RangeError` here, before any market opens. */
  static readonly layer = (bytes: number): Layer.Layer<never> => {
    if (!Number.isSafeInteger(bytes) || bytes < 0) throw new RangeError(`the page cache budget must be a whole number of bytes ≥ 0, got ${bytes}`)
    return Layer.succeed(PageCacheBytes, bytes)
  }
}

/**
 * The page cache budget of an adapter's `pageCacheMb` option (MiB); none leaves the default. One
 * that is not a number ≥ 0 throws a `RangeError` here, before any market opens.
 */
export const pageCacheLayer = (mb: number | undefined): Layer.Layer<never> => {
  if (mb === undefined) return Layer.empty
  if (!(mb >= 0) || !Number.isFinite(mb)) throw new RangeError(`the page cache size must be a number of MB ≥ 0 (0 turns it off), got ${mb}`)
  return PageCacheBytes.layer(Math.round(mb * 1024 * 1024))
}

/** One page's rows as cached: their JSON and what the page's `meta` is built from. */
export interface CachedRows {
  /** The data version of the type these rows were read at (read before them). */
  readonly version: string
  /** `JSON.stringify` of the page's rows in UTF-8 (`rowsBytes`), the `data` of the envelope. */
  readonly data: RowsBytes
  readonly returned: number
  /** Keyset position of the page's last row, where the next page starts; absent on the last page. */
  readonly last: Position | undefined
}

/** What an entry costs besides its text: the Map slot, the entry object and its fields. */
const ENTRY_OVERHEAD = 200

/** Entries under a version: one read at another version is stale. */
export interface Versioned {
  readonly version: string
}

/** Keys a cache remembers having been offered once, without keeping their values. */
const OFFERED_ONCE = 4096

/** What a cache remembers of a key offered once: 128 bits of its SHA-256. */
const digestOf = (key: string): string => sha256Hex(key).slice(0, 32)

/**
 * Values kept under string keys within a budget of `budget` counted units (`cost` of each key and
 * value, plus a fixed overhead per entry), least recently used first out. A value is kept the
 * second time its key is offered among the last 4,096 keys offered once, or at once when its key
 * was held before at another version: queries that never come back (a crawler, a scan of
 * history, every request different) pass through without evicting the pages asked again and
 * again, and without the garbage of keeping what is never read. A value of another version than
 * the one asked is dropped when found. The page cache keeps its rows in one.
 */
export const boundedCache = <V extends Versioned>(budget: number, cost: (key: string, value: V) => number) => {
  // Map order is recency order: a hit moves its entry to the end, eviction takes from the front.
  const entries = new Map<string, V>()
  // Digests of the keys offered once (a key may hold a bearer token and be kilobytes long; a
  // digest is neither), in the order they were first offered: the oldest is forgotten first.
  const offered = new Set<string>()
  const remember = (digest: string) => {
    offered.add(digest)
    if (offered.size > OFFERED_ONCE) offered.delete(offered.values().next().value!)
  }
  let bytes = 0
  const costOf = (key: string, value: V) => cost(key, value) + ENTRY_OVERHEAD
  const drop = (key: string, value: V) => {
    entries.delete(key)
    bytes -= costOf(key, value)
  }
  /** Notes `key` as offered once; whether it had been offered already (and so is kept now). */
  const offeredBefore = (key: string): boolean => {
    const digest = digestOf(key)
    if (offered.delete(digest)) return true
    remember(digest)
    return false
  }
  return {
    /** The entry under `key` if it was kept at `version`; an entry of another version is dropped. */
    get: (key: string, version: string): V | undefined => {
      const hit = entries.get(key)
      if (hit === undefined) return undefined
      entries.delete(key)
      if (hit.version !== version) {
        bytes -= costOf(key, hit)
        remember(digestOf(key))
        return undefined
      }
      entries.set(key, hit)
      return hit
    },
    /** The entry under `key` whatever its version, without touching its recency. */
    peek: (key: string): V | undefined => entries.get(key),
    /** Forgets the entry under `key` (its version is stale), so its next value is kept at once. */
    delete: (key: string): void => {
      const old = entries.get(key)
      if (old === undefined) return
      drop(key, old)
      remember(digestOf(key))
    },
    /**
     * Offers `value` under `key`: kept if the key was offered before (see above), or `atOnce`,
     * evicting the least recently used entries past the budget.
     */
    set: (key: string, value: V, atOnce = false): void => {
      const size = costOf(key, value)
      if (size > budget) return
      const old = entries.get(key)
      if (old !== undefined) drop(key, old)
      else if (!atOnce && !offeredBefore(key)) return
      entries.set(key, value)
      bytes += size
      for (const [k, v] of entries) {
        if (bytes <= budget) break
        drop(k, v)
      }
    },
    /** Entries held and their counted bytes, and keys remembered as offered once, for tests and operators. */
    stats: (): { readonly entries: number; readonly bytes: number; readonly offered: number } => ({ entries: entries.size, bytes, offered: offered.size })
  } as const
}

/** What a type read to resolve queries at a version (`PageCache.memo`), with what it counts for in the budget. */
interface CachedValue {
  readonly version: string
  readonly value: unknown
  readonly size: number
}

/**
 * A whole page as one caller was answered (`PageCache.answer`): its rows' bytes with the `meta`
 * made for that caller, and what it counts for in the budget.
 */
interface CachedPage {
  readonly version: string
  readonly rows: RowsBytes
  readonly meta: Page<unknown>["meta"]
  /** The page's body, made once (`responseBody`). */
  readonly body: Serialised
  readonly size: number
}

type CachedEntry = CachedRows | CachedValue | CachedPage

const costOf = (key: string, entry: CachedEntry) => key.length + ("data" in entry ? entry.data.length : entry.size)

/** `value` frozen all the way down (a page's `meta`: plain objects and arrays). */
const frozen = <A>(value: A): A => {
  if (typeof value === "object" && value !== null) {
    for (const inner of Object.values(value)) frozen(inner)
    Object.freeze(value)
  }
  return value
}

/** What a cached page's `meta` counts for in the budget beside its rows: a next-page link with its token. */
const META_SIZE = 512

const HIT = { result: "hit" } as const
const MISS = { result: "miss" } as const

/**
 * The pages one market keeps in memory, least recently used first out when over its budget
 * (`PageCacheBytes`). Shared by every data type's service of the market, so one budget bounds it.
 */
export class PageCache extends Effect.Service<PageCache>()("Market/PageCache", {
  effect: Effect.gen(function* () {
    const budget = yield* PageCacheBytes
    const cache = boundedCache<CachedEntry>(budget, costOf)
    return {
      /** Whether the cache holds anything at all (a budget of 0 turns it off). */
      enabled: budget > 0,
      /** The page under `key` if it was read at `version`; an entry of another version is dropped. */
      get: (key: string, version: string): CachedRows | undefined => {
        const hit = cache.get(key, version)
        const rows = hit !== undefined && "data" in hit ? hit : undefined
        countNow(pageCacheLookups, rows === undefined ? MISS : HIT)
        return rows
      },
      /** Offers `rows` under `key`: kept from the key's second offer on (see `boundedCache`). */
      set: (key: string, rows: CachedRows): void => cache.set(key, rows),
      /**
       * The whole page a request under `key` was answered with at `version` (`runPage`: the
       * endpoint, the caller's entitlement scope, the origin of its links and its query as
       * sent), so the same request again skips its decoding and plan; undefined if none.
       */
      answer: <Row>(key: string, version: string): Page<Row> | undefined => {
        const hit = cache.get(key, version)
        // A miss is counted where the request goes on to look its rows up (`get`): once a request.
        if (hit === undefined || !("rows" in hit)) return undefined
        countNow(pageCacheLookups, HIT)
        // A page of its own for each caller, sharing the bytes, the frozen `meta` and the body made
        // once: what one caller does to the page it got reaches no other.
        const page = pageFromBytes<Row>(hit.rows, hit.meta)
        serialised.set(page, hit.body)
        return page
      },
      /** Offers `page` as the answer under `key` at `version`: kept from the key's second offer on. */
      keepAnswer: (key: string, version: string, page: Page<unknown>): void => {
        const held = serialised.get(page)
        if (held?.data === undefined) return
        cache.set(key, { version, rows: held.data, meta: frozen(structuredClone(page.meta)), body: held, size: held.data.length + META_SIZE })
      },
      /**
       * `read` kept under `key` and the data version a request read before it: requests at that
       * version share one answer (a search's spellings, say), and a request at another reads
       * again. Without a version (the cache is off) every request reads. What is read after the
       * version is no older than it, so a value is never kept under a version it predates.
       * It counts in the budget as its JSON's characters.
       */
      memo: <A, E>(key: string, read: Effect.Effect<A, E>) => (version: string | undefined): Effect.Effect<A, E> => {
        const hit = version === undefined ? undefined : cache.get(key, version)
        // Only this `memo`, under this key, puts a value there: an `A`.
        if (hit !== undefined && "value" in hit) return Effect.succeed(hit.value as A)
        return Effect.tap(read, (value) => {
          // Kept at once: every query of the type that resolves reads it, so it is asked again.
          if (version !== undefined) cache.set(key, { version, value, size: JSON.stringify(value).length }, true)
        })
      },
      /** Entries held and their counted bytes, for tests and operators. */
      stats: cache.stats
    } as const
  })
}) {}

/** What a page carries besides its rows: their JSON, and its whole body once made. */
interface Serialised {
  /** Absent: the page's own rows, serialised only if its bytes are asked for (`bodyBytes`). */
  readonly data: RowsBytes | undefined
  /** The page's body as `responseBody` made it: a page answered again from the cache is spliced once. */
  body?: ResponseBody
}

const serialised = new WeakMap<object, Serialised>()

// A frozen row never changes, so its JSON is kept, encoded, as long as the row is, with the
// SHA-256 of those bytes.
const frozenRowBytes = new WeakMap<object, { readonly bytes: Uint8Array; readonly digest: Uint8Array }>()

/**
 * `JSON.stringify` of a page's rows in UTF-8, kept in the parts it is made of (each held row's own
 * bytes, the brackets and commas between them): spliced where it is sent, into the response body,
 * so an 80 KB page is copied once, not once into `data` and again into the body.
 */
export interface RowsBytes {
  readonly parts: ReadonlyArray<Uint8Array>
  /** Bytes in all. */
  readonly length: number
  /**
   * SHA-256 over each row's SHA-256, in order: as good a fingerprint of the bytes as a hash of
   * them (every row's bytes are hashed, and the digests have one length), and, for rows held
   * frozen, made from 32 bytes a row instead of the whole page.
   */
  readonly digest: Uint8Array
}

const OPEN_ARRAY = Buffer.from("[")
const COMMA = Buffer.from(",")
const CLOSE_ARRAY = Buffer.from("]")

/** `text` in UTF-8, in a buffer of its own: one from Node's shared pool would keep 8 KiB alive. */
const ownBytes = (text: string): Uint8Array => {
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text))
  bytes.write(text)
  return bytes
}

/** A row's JSON in UTF-8 and its SHA-256; a frozen row's are made once and kept. */
const rowBytes = (row: object): { readonly bytes: Uint8Array; readonly digest: Uint8Array } => {
  if (!Object.isFrozen(row)) {
    const bytes = Buffer.from(JSON.stringify(row))
    return { bytes, digest: createHash("sha256").update(bytes).digest() }
  }
  let kept = frozenRowBytes.get(row)
  if (kept === undefined) {
    const bytes = ownBytes(JSON.stringify(row))
    frozenRowBytes.set(row, kept = { bytes, digest: createHash("sha256").update(bytes).digest() })
  }
  return kept
}

/**
 * `JSON.stringify(rows)` in UTF-8, with the digest of its rows. A frozen row (a store that serves
 * the same rows to many pages: the SQLite and Redis row caches) is serialised, encoded and hashed
 * once, and a page is made of their bytes: encoding a whole 80 KB page again cost as much as the
 * page's query.
 */
export const rowsBytes = (rows: ReadonlyArray<object>): RowsBytes => {
  const parts: Array<Uint8Array> = [OPEN_ARRAY]
  const digest = createHash("sha256")
  let length = OPEN_ARRAY.length + CLOSE_ARRAY.length
  for (let i = 0; i < rows.length; i++) {
    const row = rowBytes(rows[i]!)
    if (i > 0) {
      parts.push(COMMA)
      length += COMMA.length
    }
    parts.push(row.bytes)
    length += row.bytes.length
    digest.update(row.digest)
  }
  parts.push(CLOSE_ARRAY)
  return { parts, length, digest: digest.digest() }
}

const utf8 = new TextDecoder()

/**
 * A page whose `data` is `data` already serialised (`rowsBytes`): the adapters splice the bytes
 * (`bodyBytes`), and a caller that reads `data` gets the rows parsed from them, once.
 */
export const pageFromBytes = <Row>(data: RowsBytes, meta: Page<Row>["meta"]): Page<Row> => {
  let rows: ReadonlyArray<Row> | undefined
  const page: Page<Row> = {
    get data() {
      return rows ??= JSON.parse(utf8.decode(Buffer.concat(data.parts, data.length))) as ReadonlyArray<Row>
    },
    meta
  }
  serialised.set(page, { data })
  return page
}

/**
 * `page`, recorded as having `data` for its rows (which it must be `rowsBytes` of), or, without
 * `data`, as a page whose body is spliced from its rows like any other (serialised then).
 */
export const withSerialisedData = <Row>(page: Page<Row>, data?: RowsBytes): Page<Row> => {
  serialised.set(page, { data })
  return page
}

const OPEN_PAGE = Buffer.from(`{"data":`)
const META = Buffer.from(`,"meta":`)
const CLOSE_PAGE = Buffer.from("}")

/** A response body's bytes, and what its entity tag may be made from instead of them. */
export interface ResponseBody {
  /** Its JSON in UTF-8, as `JSON.stringify` gives it. */
  readonly bytes: Uint8Array
  /**
   * For a page spliced from its rows' bytes (`rowsBytes`): SHA-256 over the rows' digest and the
   * page's `meta` bytes, as strong a fingerprint as a hash of the whole body, at 32 bytes a row
   * (the response cache keeps the rows' digest with their bytes). Undefined for any other body.
   */
  readonly digest: Uint8Array | undefined
  /**
   * The entity tag last made of `digest`, and the audience it was made for (the HTTP adapter's
   * validator): a page the response cache answers again and again, mostly to one caller, is
   * tagged once, not hashed again per request. Undefined until a tag is made.
   */
  tag?: { readonly audience: string; readonly opaque: string }
}

/** A page's body spliced from its rows' bytes and its `meta`, or undefined for a body that is not a page. */
const spliced = (body: unknown) => {
  const page = typeof body === "object" && body !== null ? serialised.get(body) : undefined
  if (page === undefined) return undefined
  const data = page.data ?? rowsBytes((body as Page<object>).data)
  const meta = Buffer.from(JSON.stringify((body as Page<unknown>).meta))
  const bytes = Buffer.concat([OPEN_PAGE, ...data.parts, META, meta, CLOSE_PAGE], OPEN_PAGE.length + data.length + META.length + meta.length + CLOSE_PAGE.length)
  return { bytes, data, meta }
}

/**
 * A response body's JSON in UTF-8, as `JSON.stringify` gives it: a page whose rows were serialised
 * when read has their bytes spliced in, so rows are serialised once however often served.
 */
export const bodyBytes = (body: unknown): Uint8Array => spliced(body)?.bytes ?? Buffer.from(JSON.stringify(body))

/** `bodyBytes` with the digest its entity tag is made from (`ResponseBody`). */
export const responseBody = (body: unknown): ResponseBody => {
  const held = typeof body === "object" && body !== null ? serialised.get(body) : undefined
  if (held?.body !== undefined) return held.body
  const page = spliced(body)
  if (page === undefined) return { bytes: Buffer.from(JSON.stringify(body)), digest: undefined }
  const made = { bytes: page.bytes, digest: createHash("sha256").update(page.data.digest).update(page.meta).digest() }
  if (held !== undefined) held.body = made
  return made
}

/** `bodyBytes` as text, for an adapter that sends strings (the worker). */
export const bodyJson = (body: unknown): string => utf8.decode(bodyBytes(body))
