import { matchesPredicates, orderAndSeek, type PagePlan, type Scope, sortValue } from "@gpu-market/core/storage"
import type { Batch } from "./batch.js"
import type { RedisClient } from "./client.js"
import { makeCodec } from "./codec.js"
import { InvalidPlan } from "./errors.js"
import { AFTER_VALUE, encodeMember, encodeValue, memberTie } from "./lex.js"

/**
 * The generic table engine: rows stored once, sorted-set indexes maintained on write, and keyset
 * pages answered from those indexes. A data type describes itself with a `TableSpec`; the engine
 * derives its keys, its index entries and its page walks from that alone.
 *
 * Storage, under the table's hash tag `{<tag>}`:
 * - `rows`: a hash, tie-breaker → the msgpack row.
 * - `ix:<subset>:<sort>:*` and `ix:<subset>:<sort>:<anchor>=<value>`: sorted sets, every score 0,
 *   member = `lex(sort value) ++ lex(tie)` (see lex.ts), so a BYLEX range is the rows in page
 *   order and a keyset position is a member to continue after.
 * - `grp:<field>:<value>`: a set of tie-breakers, for fields whose values pin a handful of rows.
 */

/** A part of a table's rows that is indexed on its own, e.g. the rows in force now. */
export interface Subset<Row> {
  readonly name: string
  /** Whether a row belongs to this subset; a row moves in and out as writes change it. */
  readonly holds: (row: Row) => boolean
  /** Fields with one index per value and sort field; a plan with `in`/`eq` on one walks those. */
  readonly anchors: ReadonlyArray<string>
  /** Whether the subset also keeps one index per sort field over all its rows, for plans with no anchor. */
  readonly global: boolean
}

/** A lower or upper bound on index members: an encoded prefix, inclusive or not. */
export interface Bound {
  readonly bytes: Buffer
  readonly exclusive: boolean
}

/** Bounds that narrow an index walk; the rows outside them could never match. */
export interface Bounds {
  readonly lower?: Bound
  readonly upper?: Bound
}

/** What a data type tells the engine about itself. */
export interface TableSpec<Row extends Readonly<Record<string, unknown>>> {
  /** The hash tag and key segment of the table, e.g. `rental`. */
  readonly tag: string
  /** The unique row key, the plan's tie-breaker, e.g. `product_key`. */
  readonly tie: keyof Row & string
  /** Fields a plan may sort by; each gets an index per subset and anchor value. */
  readonly sortFields: ReadonlyArray<string>
  readonly subsets: ReadonlyArray<Subset<Row>>
  /** Fields whose value pins few rows (every version of one product): a set per value, pages sorted in process. */
  readonly groups: ReadonlyArray<string>
  /** The subsets that can answer a scope, most specific first; the first with a usable index wins. */
  readonly subsetsFor: (scope: Scope) => ReadonlyArray<string>
  /** Whether a row is in a scope; applied to every row a walk reads. */
  readonly inScope: (row: Row, scope: Scope) => boolean
  /** Bounds a scope puts on a sort field's values (e.g. a history window on `valid_from`). */
  readonly scopeBounds?: (scope: Scope, sortField: string) => Bounds
  /**
   * The row shapes (field names in order) stored as msgpackr shared structures. Append-only:
   * never change or reorder an entry once values were written with it (see codec.ts). Without
   * it, rows are self-describing records (larger and slower to decode).
   */
  readonly structures?: ReadonlyArray<ReadonlyArray<string>>
}

/** A stored row with the exact bytes it was read as, for a batch to check it is unchanged. */
export interface StoredRow<Row> {
  readonly row: Row
  readonly bytes: Buffer
}

/**
 * Rows fetched per HMGET, and the most index members one walk step reads: above the largest
 * plan (1,000 rows and the one that tells whether another page follows), so such a page whose
 * rows all match is one step.
 */
const FETCH_CHUNK = 1024
const MIN_STEP = 16

/** The bounds a versioned table's scope puts on `valid_from`: a window's edges, an instant's upper end. */
export const versionScopeBounds = (scope: Scope, sortField: string): Bounds => {
  if (sortField !== "valid_from") return {}
  switch (scope._tag) {
    case "latest": return {}
    case "asOf": return { upper: { bytes: Buffer.concat([encodeValue(scope.at), AFTER_VALUE]), exclusive: false } }
    case "window": return { lower: { bytes: encodeValue(scope.start), exclusive: false }, upper: { bytes: encodeValue(scope.end), exclusive: true } }
  }
}

const tighter = (a: Bound | undefined, b: Bound | undefined, sign: 1 | -1): Bound | undefined => {
  if (a === undefined) return b
  if (b === undefined) return a
  const d = Buffer.compare(a.bytes, b.bytes) * sign
  return d > 0 ? a : d < 0 ? b : a.exclusive ? a : b
}
const lexArg = (bound: Bound | undefined, open: "-" | "+"): string | Buffer =>
  bound === undefined ? open : Buffer.concat([Buffer.from(bound.exclusive ? "(" : "["), bound.bytes])

/** The values an `in` / `eq` predicate on `field` allows, if the plan has one. */
const keyValues = (plan: PagePlan, field: string): ReadonlyArray<string> | undefined => {
  let best: ReadonlyArray<string> | undefined
  for (const p of plan.predicates) {
    if (p.field !== field || (p.op !== "in" && p.op !== "eq")) continue
    const values = p.op === "eq" ? [p.value] : p.values
    if (best === undefined || values.length < best.length) best = values
  }
  return best
}

/** The bounds the plan's own predicates put on the sort field. */
const predicateBounds = (plan: PagePlan): Bounds => {
  let lower: Bound | undefined
  let upper: Bound | undefined
  const pin = (v: string | number) => {
    lower = tighter(lower, { bytes: encodeValue(v), exclusive: false }, 1)
    upper = tighter(upper, { bytes: Buffer.concat([encodeValue(v), AFTER_VALUE]), exclusive: false }, -1)
  }
  for (const p of plan.predicates) {
    if (p.field !== plan.sort.by) continue
    if (p.op === "gte") lower = tighter(lower, { bytes: encodeValue(p.value), exclusive: false }, 1)
    else if (p.op === "lte") upper = tighter(upper, { bytes: Buffer.concat([encodeValue(p.value), AFTER_VALUE]), exclusive: false }, -1)
    else if (p.op === "eq") pin(p.value)
    else if (p.values.length === 1) pin(p.values[0]!)
  }
  return { ...(lower === undefined ? {} : { lower }), ...(upper === undefined ? {} : { upper }) }
}

interface Cursor {
  readonly key: string
  buffer: Array<Buffer>
  at: number
  done: boolean
  /** Where the next read starts: after the last member read. */
  lower: Bound | undefined
  upper: Bound | undefined
}

/** One table over one client: its keys, its reads, its page walk and its index maintenance. */
export interface Table<Row extends Readonly<Record<string, unknown>>> {
  readonly spec: TableSpec<Row>
  /** The key of the rows hash. */
  readonly rowsKey: string
  /** The key of any other structure of the table, under its hash tag: `<prefix>:{<tag>}:<parts>`. */
  readonly key: (...parts: ReadonlyArray<string>) => string
  /** The keys of the table's own named structures, by name: `keys("current", "version").current`. */
  readonly keys: <const Name extends string>(...names: ReadonlyArray<Name>) => Readonly<Record<Name, string>>
  /** The key of an index: a subset and sort field, over one anchor value or (`undefined`) all rows. */
  readonly indexKey: (subset: string, sortField: string, anchor?: { readonly field: string; readonly value: string }) => string
  /** The key of a group set. */
  readonly groupKey: (field: string, value: string) => string
  /** The rows of `ties` with their bytes, `undefined` where none is stored; in `ties` order. */
  readonly fetch: (ties: ReadonlyArray<string>) => Promise<Array<StoredRow<Row> | undefined>>
  /** Executes a page plan exactly as the reference store does. Use inside `RedisClient.run`. */
  readonly page: (plan: PagePlan) => Promise<Array<Row>>
  /**
   * Adds to `batch` the writes that turn the stored `before` (absent: a new row) into `after`
   * (absent: deleted): the row itself and every index and group entry that changes. Returns the
   * bytes written for `after`.
   */
  readonly write: (batch: Batch, before: StoredRow<Row> | undefined, after: Row | undefined) => Buffer | undefined
}

/**
 * Rows a table keeps in memory for its pages (see `makeTable`), dropped whole when its data
 * version (the string at the table's `version` key) moves.
 */
export interface RowCacheOptions {
  /** At most this many rows, oldest read first out; 0 keeps none. */
  readonly rows: number
}

/**
 * Thrown, and caught, inside a page through the row cache when a write of the type came between
 * its reads: one instance, as it never leaves the page.
 */
const moved = new Error("the type's version moved during the page")

/**
 * The data version one page through the row cache reads: the first reading, which every later
 * one must equal (else `moved`: a write came between).
 */
class PageVersion {
  /** Undefined until the first reading; null while the type was never written. */
  first: string | null | undefined = undefined
  note(version: string | null): void {
    if (this.first === undefined) this.first = version
    else if (version !== this.first) throw moved
  }
}

/** Rows of a walk: each tie's row, or undefined where none is stored. */
type FetchRows<Row> = (ties: ReadonlyArray<string>) => Promise<Array<Row | undefined>>

/** The key of a structure of `spec`'s table under its hash tag: `<prefix>:{<tag>}:<parts>`. */
const tableKey = (client: RedisClient, spec: { readonly tag: string }, ...parts: ReadonlyArray<string>): string =>
  client.keys.key(spec.tag, ...parts)

/**
 * Builds the engine for one table. With `rowCache`, pages keep the rows they read, frozen, under
 * the table's data version: a page's walk then reads the index members and only the rows not
 * held (see `cachedPage`).
 */
export const makeTable = <Row extends Readonly<Record<string, unknown>>>(
  client: RedisClient,
  spec: TableSpec<Row>,
  rowCache: RowCacheOptions = { rows: 0 }
): Table<Row> => {
  const key = (...parts: ReadonlyArray<string>) => tableKey(client, spec, ...parts)
  const rowsKey = key("rows")
  const indexKey = (subset: string, sortField: string, anchor?: { readonly field: string; readonly value: string }) =>
    anchor === undefined ? key("ix", subset, sortField, "*") : key("ix", subset, sortField, `${anchor.field}=${anchor.value}`)
  const groupKey = (field: string, value: string) => key("grp", field, value)
  const subsets = new Map(spec.subsets.map((s) => [s.name, s]))
  const tieOf = (row: Row) => row[spec.tie] as string
  const { encode, decode } = makeCodec(spec.structures ?? [])

  const fetch = async (ties: ReadonlyArray<string>): Promise<Array<StoredRow<Row> | undefined>> => {
    const out: Array<StoredRow<Row> | undefined> = []
    for (let i = 0; i < ties.length; i += FETCH_CHUNK) {
      const chunk = ties.slice(i, i + FETCH_CHUNK)
      const values = await client.redis.hmgetBuffer(rowsKey, ...chunk)
      for (const bytes of values) out.push(bytes === null ? undefined : { row: decode<Row>(bytes), bytes })
    }
    return out
  }

  /** Index and group entries of a row, as `kind key \0 member` strings with the member bytes. */
  const entries = (row: Row): Map<string, { readonly set: boolean; readonly key: string; readonly member: Buffer }> => {
    const out = new Map<string, { readonly set: boolean; readonly key: string; readonly member: Buffer }>()
    const tie = tieOf(row)
    for (const subset of spec.subsets) {
      if (!subset.holds(row)) continue
      for (const sort of spec.sortFields) {
        const member = encodeMember(sortValue(row, sort), tie)
        const add = (k: string) => out.set(`z${k}\u0000${member.toString("latin1")}`, { set: false, key: k, member })
        if (subset.global) add(indexKey(subset.name, sort))
        for (const field of subset.anchors) {
          const value = row[field]
          if (typeof value === "string") add(indexKey(subset.name, sort, { field, value }))
        }
      }
    }
    for (const field of spec.groups) {
      const value = row[field]
      if (typeof value === "string") {
        const k = groupKey(field, value)
        out.set(`s${k}`, { set: true, key: k, member: Buffer.from(tie) })
      }
    }
    return out
  }

  const write: Table<Row>["write"] = (batch, before, after) => {
    const old = before === undefined ? new Map() : entries(before.row)
    const next = after === undefined ? new Map() : entries(after)
    for (const [id, e] of old) if (!next.has(id)) batch.op(e.set ? "SREM" : "ZREM", e.key, e.member)
    for (const [id, e] of next) if (!old.has(id)) batch.op(e.set ? "SADD" : "ZADD", e.key, ...(e.set ? [e.member] : ["0", e.member]))
    if (after === undefined) {
      if (before !== undefined) batch.op("HDEL", rowsKey, tieOf(before.row))
      return undefined
    }
    const bytes = encode(after)
    batch.op("HSET", rowsKey, tieOf(after), bytes)
    return bytes
  }

  const fetchRows: FetchRows<Row> = async (ties) => (await fetch(ties)).map((stored) => stored?.row)

  /** Rows pinned by a key or group predicate, ordered and sought in process: there are few. */
  const pinnedPage = async (plan: PagePlan, keep: (row: Row) => boolean): Promise<Array<Row> | undefined> => {
    let ties: ReadonlyArray<string> | undefined = keyValues(plan, spec.tie)
    if (ties === undefined) {
      for (const field of spec.groups) {
        const values = keyValues(plan, field)
        if (values === undefined) continue
        const pipeline = client.redis.pipeline()
        for (const v of values) pipeline.smembers(groupKey(field, v))
        const replies = (await pipeline.exec()) ?? []
        const found = new Set<string>()
        for (const [error, members] of replies) {
          if (error !== null) throw error
          for (const m of members as Array<string>) found.add(m)
        }
        ties = [...found]
        break
      }
    }
    if (ties === undefined) return undefined
    const rows: Array<Row> = []
    for (const row of await fetchRows([...new Set(ties)])) if (row !== undefined && keep(row)) rows.push(row)
    return orderAndSeek(rows, plan, spec.tie)
  }

  /** The indexes a walk merges: one per anchor value, or the subset's global one. */
  const indexesFor = (plan: PagePlan): Array<string> => {
    for (const name of spec.subsetsFor(plan.scope)) {
      const subset = subsets.get(name)
      if (subset === undefined) throw new InvalidPlan(`unknown subset ${name} of ${spec.tag}`)
      let anchor: { field: string; values: ReadonlyArray<string> } | undefined
      for (const field of subset.anchors) {
        const values = keyValues(plan, field)
        if (values !== undefined && (anchor === undefined || values.length < anchor.values.length)) anchor = { field, values }
      }
      if (anchor !== undefined) {
        const { field, values } = anchor
        return [...new Set(values)].map((value) => indexKey(name, plan.sort.by, { field, value }))
      }
      if (subset.global) return [indexKey(name, plan.sort.by)]
    }
    throw new InvalidPlan(`no index of ${spec.tag} answers scope ${plan.scope._tag} without an anchor`)
  }

  /**
   * A page's walk over its indexes, reading rows with `rows`. With `version`, each read of index
   * members also reads the table's version before and after them, and notes both.
   */
  const walk = async (plan: PagePlan, rows: FetchRows<Row>, version?: PageVersion): Promise<Array<Row>> => {
    if (!spec.sortFields.includes(plan.sort.by)) throw new InvalidPlan(`cannot sort ${spec.tag} by ${JSON.stringify(plan.sort.by)}`)
    if (plan.limit <= 0) return []
    const keep = (row: Row) => spec.inScope(row, plan.scope) && matchesPredicates(row, plan.predicates)
    const pinned = await pinnedPage(plan, keep)
    if (pinned !== undefined) return pinned

    const desc = plan.sort.order === "desc"
    const fromPlan = predicateBounds(plan)
    const fromScope = spec.scopeBounds?.(plan.scope, plan.sort.by) ?? {}
    let lower = tighter(fromPlan.lower, fromScope.lower, 1)
    let upper = tighter(fromPlan.upper, fromScope.upper, -1)
    if (plan.after !== undefined) {
      const position: Bound = { bytes: encodeMember(plan.after.value, plan.after.tie), exclusive: true }
      if (desc) upper = tighter(upper, position, -1)
      else lower = tighter(lower, position, 1)
    }
    const cursors: Array<Cursor> = indexesFor(plan).map((key) => ({ key, buffer: [], at: 0, done: false, lower, upper }))

    const refill = async (stale: ReadonlyArray<Cursor>, count: number) => {
      const pipeline = client.redis.pipeline()
      if (version !== undefined) pipeline.get(versionKey)
      for (const c of stale) {
        const range = desc ? [lexArg(c.upper, "+"), lexArg(c.lower, "-"), "BYLEX", "REV"] : [lexArg(c.lower, "-"), lexArg(c.upper, "+"), "BYLEX"]
        pipeline.callBuffer("ZRANGE", c.key, ...range, "LIMIT", "0", String(count))
      }
      if (version !== undefined) pipeline.get(versionKey)
      const replies = (await pipeline.exec()) ?? []
      if (version !== undefined) {
        for (const [error, reading] of [replies.shift()!, replies.pop()!]) {
          if (error !== null) throw error
          version.note(reading as string | null)
        }
      }
      stale.forEach((c, i) => {
        const [error, members] = replies[i]!
        if (error !== null) throw error
        c.buffer = members as Array<Buffer>
        c.at = 0
        c.done = c.buffer.length < count
        const last = c.buffer[c.buffer.length - 1]
        if (last !== undefined) {
          if (desc) c.upper = { bytes: last, exclusive: true }
          else c.lower = { bytes: last, exclusive: true }
        }
      })
    }

    const out: Array<Row> = []
    // A walk step reads the members of the rows still wanted, times two for each step before it
    // (the predicates rejected some of its rows), up to FETCH_CHUNK.
    let growth = 1
    const sign = desc ? -1 : 1
    while (out.length < plan.limit) {
      const step = Math.min(FETCH_CHUNK, Math.max(MIN_STEP, (plan.limit - out.length) * growth))
      const stale = cursors.filter((c) => c.at === c.buffer.length && !c.done)
      if (stale.length > 0) await refill(stale, step)
      const picked: Array<Buffer> = []
      // Merges the cursors' members in index order; stops where a cursor must read on before
      // its next member can be compared.
      merge: while (picked.length < step) {
        let best: Cursor | undefined
        for (const c of cursors) {
          if (c.at < c.buffer.length) {
            if (best === undefined || sign * Buffer.compare(c.buffer[c.at]!, best.buffer[best.at]!) < 0) best = c
          } else if (!c.done) break merge
        }
        if (best === undefined) break
        picked.push(best.buffer[best.at++]!)
      }
      if (picked.length === 0) {
        if (cursors.every((c) => c.done && c.at === c.buffer.length)) break
        continue
      }
      for (const row of await rows(picked.map(memberTie))) {
        if (row === undefined || !keep(row)) continue
        out.push(row)
        if (out.length === plan.limit) break
      }
      growth = Math.min(FETCH_CHUNK, growth * 2)
    }
    return out
  }

  const versionKey = key("version")
  // Map order is the order rows were read in: eviction takes from the front.
  const held = new Map<string, Row>()
  let heldAt: string | null | undefined

  /**
   * Rows of `ties`: those held at the version the page read first, taken before anything is
   * awaited (another page may evict them meanwhile); the others read with one HMGET per chunk and
   * the table's version after them. Rows read are held only when that version is still the
   * page's first one, which no write came between; otherwise the page is abandoned (`moved`).
   */
  const heldRows = (version: PageVersion): FetchRows<Row> => async (ties) => {
    const at = version.first
    if (at !== heldAt) {
      held.clear()
      heldAt = at
    }
    const out = ties.map((tie) => held.get(tie))
    const missing: Array<number> = []
    out.forEach((row, i) => {
      if (row === undefined) missing.push(i)
    })
    if (missing.length > 0) {
      const pipeline = client.redis.pipeline()
      for (let i = 0; i < missing.length; i += FETCH_CHUNK) {
        pipeline.hmgetBuffer(rowsKey, ...missing.slice(i, i + FETCH_CHUNK).map((m) => ties[m]!))
      }
      pipeline.get(versionKey)
      const replies = (await pipeline.exec()) ?? []
      const [versionError, reading] = replies.pop()!
      if (versionError !== null) throw versionError
      version.note(reading as string | null)
      let next = 0
      for (const [error, values] of replies) {
        if (error !== null) throw error
        for (const bytes of values as Array<Buffer | null>) {
          const i = missing[next++]!
          if (bytes === null) continue
          const row = Object.freeze(decode<Row>(bytes))
          out[i] = row
          if (heldAt === at) held.set(ties[i]!, row)
        }
      }
    }
    for (const tie of held.keys()) {
      if (held.size <= rowCache.rows) break
      held.delete(tie)
    }
    return out
  }

  /**
   * A page through the row cache. Redis runs each command whole, and every write of the type is
   * one script that also sets a fresh version: while every version the page reads (before and
   * after each read of index members, after each read of rows) is its first one, no write came
   * between, and the page is what the type held at that version. As soon as one differs the walk
   * is abandoned and the page walked again, reading every row.
   */
  const cachedPage = async (plan: PagePlan): Promise<Array<Row>> => {
    const version = new PageVersion()
    try {
      return await walk(plan, heldRows(version), version)
    } catch (error) {
      if (error !== moved) throw error
      return walk(plan, fetchRows)
    }
  }

  const page = (plan: PagePlan): Promise<Array<Row>> => (rowCache.rows > 0 ? cachedPage(plan) : walk(plan, fetchRows))

  const keys = <const Name extends string>(...names: ReadonlyArray<Name>) =>
    Object.fromEntries(names.map((name) => [name, key(name)])) as Record<Name, string>
  return { spec, rowsKey, key, keys, indexKey, groupKey, fetch, page, write }
}
