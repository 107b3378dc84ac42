import { afterAll, assert, describe, it } from "@effect/vitest"
import type { RentalPrice } from "@gpu-market/core"
import type { PagePlan } from "@gpu-market/core/storage"
import { rentalRow } from "@gpu-market/storage-testkit"
import { Effect, Either, Exit, Fiber, Scope, TestClock } from "effect"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { make } from "../src/index"
import { compilePage, makeClient, makeRentalPriceStore, migrate, type SqliteClient } from "../src/internal"

/**
 * A bulk load of rental prices (`RentalPriceStore.bulkLoad`, what `gpu-market import` runs on
 * SQLite) holds the serving indexes back and builds them again when it ends: meanwhile every page
 * reads the same rows, after it the indexes serve every `/latest` sort again, and a load that
 * died part-way leaves them to the next one. On the TestClock, moved on while a test waits: the
 * pauses between two index builds pass at once, not in wall time.
 */

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gpu-market-bulk-"))
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))
let files = 0
const freshFile = () => path.join(dir, `db-${files++}.db`)

/**
 * Rows of the sorted-runs case: each index's keys outgrow one sorting run. A key holds a 32-digit
 * product_key beside its anchor (about 75 bytes in the sorter), and a run is at most 1 MiB (SQLite's
 * smallest, 250 pages, above the 512 KiB a build asks for): 60,000 keys make about four runs.
 */
const SORTED_ROWS = 60_000

const hex32 = (s: string) => createHash("md5").update(s).digest("hex")

/** Product `i` of a load, current from its day. */
const product = (i: number, tag = "p"): RentalPrice => rentalRow({
  vendor: `v${i % 7}`, gpu_canonical_name: `g${i % 11}`, vendor_sku: `${tag}${i}`, region: `r${i % 5}`, gpu_count: 1 + (i % 8),
  price_usd_per_gpu_hour: 1 + (i % 13) / 4, valid_from: "2026-01-05T06:00:00.000000Z", extracted_at: "2026-01-05T06:00:00.000000Z",
  base_product_key: hex32(`base-${tag}${i}`), product_key: hex32(`key-${tag}${i}`)
})

/** Opens new products through the store's own write, in one transaction. */
const store = (client: SqliteClient, rows: ReadonlyArray<RentalPrice>) =>
  makeRentalPriceStore(client, { bulk: true }).transact(rows.map((r) => ({ base: r.base_product_key, at: r.valid_from })), () =>
    Either.right({ changes: { close: [], open: [...rows] }, result: undefined }))

const indexes = (client: SqliteClient) =>
  (client.db.prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'rental_prices' ORDER BY name").pluck().all() as Array<string>)
const stats = (client: SqliteClient) =>
  client.db.prepare("SELECT idx, stat FROM sqlite_stat1 WHERE tbl = 'rental_prices' ORDER BY idx").all()

/** Pages a server reads: `/latest` by each anchor and several sorts, and a history window. */
const PLANS: ReadonlyArray<PagePlan> = [
  ...(["vendor", "gpu_canonical_name"] as const).flatMap((anchor) =>
    (["price_usd_per_gpu_hour", "region", "gpu_count"] as const).map((by): PagePlan => ({
      scope: { _tag: "latest" }, predicates: [{ op: "in", field: anchor, values: [anchor === "vendor" ? "v3" : "g4"] }],
      sort: { by, order: "asc" }, after: undefined, limit: 50
    }))),
  { scope: { _tag: "window", start: "2026-01-01T00:00:00.000000Z", end: "2026-02-01T00:00:00.000000Z" }, predicates: [], sort: { by: "valid_from", order: "desc" }, after: undefined, limit: 50 }
]
const pages = (client: SqliteClient) => Effect.forEach(PLANS, (plan) => makeRentalPriceStore(client).page(plan))

const withFile = <A, E>(filename: string, f: (client: SqliteClient) => Effect.Effect<A, E>) =>
  Effect.scoped(Effect.gen(function* () {
    const client = yield* makeClient({ filename })
    yield* migrate(client)
    return yield* f(client)
  }))

/**
 * A bulk load of 3,000 products into `file` whose scope never closes: its connection goes as a
 * killed process's does, its indexes held back and its record left.
 */
const killedLoad = (file: string) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const client = yield* Scope.extend(Effect.gen(function* () {
      const client = yield* makeClient({ filename: file })
      yield* migrate(client)
      yield* makeRentalPriceStore(client, { bulk: true }).bulkLoad!(10_000)
      yield* store(client, Array.from({ length: 3_000 }, (_, i) => product(i)))
      return client
    }), scope)
    client.db.close()
  })

/** A test of `body` on the TestClock, moved on a pause at a time until `body` ends. */
const itPaused = <A, E>(name: string, body: () => Effect.Effect<A, E>, timeout?: number) =>
  it.effect(name, () => Effect.gen(function* () {
    const fiber = yield* Effect.fork(body())
    while (fiber.unsafePoll() === null) yield* TestClock.adjust("120 millis")
    return yield* Fiber.join(fiber)
  }), timeout)

describe("SQLite bulk load of rental prices", () => {
  itPaused("a load large against the table holds the serving indexes back and builds them again, planner statistics included; pages read the same throughout", () =>
    withFile(freshFile(), (client) => Effect.gen(function* () {
      yield* store(client, Array.from({ length: 1_000 }, (_, i) => product(i, "old")))
      const before = { indexes: indexes(client), stats: stats(client) }
      const rows = Array.from({ length: 6_000 }, (_, i) => product(i))
      const during = yield* Effect.scoped(Effect.gen(function* () {
        const end = yield* makeRentalPriceStore(client, { bulk: true }).bulkLoad!(rows.length)
        const held = indexes(client)
        yield* store(client, rows)
        const read = yield* pages(client)
        yield* end
        return { held, read }
      }))
      // The write path's reads and the unique constraints keep their indexes.
      assert.deepStrictEqual(during.held, ["rental_prices_base_valid_from", "rental_prices_current_base", "sqlite_autoindex_rental_prices_1"])
      assert.deepStrictEqual(indexes(client), before.indexes)
      assert.deepStrictEqual(stats(client), before.stats)
      assert.deepStrictEqual(yield* pages(client), during.read)
      assert.isAbove(during.read[0]!.length, 0)
      // Served from the rebuilt indexes again: no sort of its own.
      for (const plan of PLANS.slice(0, -1)) {
        const { sql, params } = compilePage(plan)
        const detail = (client.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>).map((r) => r.detail).join("\n")
        assert.include(detail, "rental_prices_current_", detail)
        assert.notInclude(detail, "TEMP B-TREE", detail)
      }
    })))

  itPaused("a load small against the table keeps every index", () =>
    withFile(freshFile(), (client) => Effect.gen(function* () {
      yield* store(client, Array.from({ length: 12_000 }, (_, i) => product(i, "old")))
      const before = indexes(client)
      yield* Effect.scoped(Effect.gen(function* () {
        yield* makeRentalPriceStore(client, { bulk: true }).bulkLoad!(5_000)
        assert.deepStrictEqual(indexes(client), before)
      }))
    })))

  itPaused("a load that fails still builds the indexes again as its scope closes", () =>
    withFile(freshFile(), (client) => Effect.gen(function* () {
      const before = indexes(client)
      const exit = yield* Effect.exit(Effect.scoped(Effect.gen(function* () {
        yield* makeRentalPriceStore(client, { bulk: true }).bulkLoad!(10_000)
        assert.isBelow(indexes(client).length, before.length)
        return yield* Effect.fail("the import failed")
      })))
      assert.isTrue(Exit.isFailure(exit))
      assert.deepStrictEqual(indexes(client), before)
    })))

  itPaused("a load whose process died part-way leaves its indexes to the next server that opens the file, not to an import's connection", () =>
    Effect.gen(function* () {
      const file = freshFile()
      const expected = yield* withFile(freshFile(), (client) => Effect.sync(() => ({ indexes: indexes(client), stats: stats(client) })))
      yield* killedLoad(file)
      // An import's own connection leaves the record to its load.
      yield* Effect.scoped(make({ filename: file, bulk: true }))
      yield* withFile(file, (client) => Effect.sync(() => assert.isBelow(indexes(client).length, expected.indexes.length)))
      // Any other opening (a server, a worker, a CLI read) builds them.
      yield* Effect.scoped(make({ filename: file }))
      yield* withFile(file, (client) => Effect.sync(() => assert.deepStrictEqual({ indexes: indexes(client), stats: stats(client) }, expected)))
    }))

  itPaused("a load whose process died part-way leaves its indexes to the next load, which builds them when it ends", () =>
    Effect.gen(function* () {
      const file = freshFile()
      const expected = yield* withFile(freshFile(), (client) => Effect.sync(() => ({ indexes: indexes(client), stats: stats(client) })))
      yield* killedLoad(file)
      yield* withFile(file, (client) => Effect.gen(function* () {
        assert.isBelow(indexes(client).length, expected.indexes.length)
        // Readers meanwhile: right, if slower.
        const read = yield* pages(client)
        assert.strictEqual(read[0]!.length, 50)
        assert.isTrue(read[0]!.every((r, i, all) => i === 0 || all[i - 1]!.price_usd_per_gpu_hour <= r.price_usd_per_gpu_hour))
        // A load too small to hold anything back takes over the record all the same.
        yield* Effect.scoped(Effect.flatMap(makeRentalPriceStore(client, { bulk: true }).bulkLoad!(10), (end) => end))
        assert.deepStrictEqual({ indexes: indexes(client), stats: stats(client) }, expected)
        assert.deepStrictEqual(yield* pages(client), read)
      }))
    }))

  itPaused("copies the WAL into the file between two builds: when they end, the WAL holds the last index built and no more", () =>
    Effect.scoped(Effect.gen(function* () {
      // Checkpoints as rarely as an import's connection has them: none of its own during the load.
      const client = yield* makeClient({ filename: freshFile(), bulk: true, checkpointPages: 1_000_000 })
      yield* migrate(client)
      yield* Effect.scoped(Effect.gen(function* () {
        const end = yield* makeRentalPriceStore(client, { bulk: true }).bulkLoad!(20_000)
        yield* store(client, Array.from({ length: 20_000 }, (_, i) => product(i)))
        yield* end
      }))
      const built = client.db.prepare(
        "SELECT count(*) FROM dbstat WHERE name LIKE 'rental_prices_%' AND name NOT IN ('rental_prices_current_base', 'rental_prices_base_valid_from') GROUP BY name"
      ).pluck().all() as Array<number>
      assert.strictEqual(built.length, 17)
      const [{ log }] = client.db.pragma("wal_checkpoint(PASSIVE)") as [{ log: number }]
      // Frames: the last build's index pages, and the schema and record pages its transaction changed.
      assert.isAtMost(log, Math.max(...built) + 10)
      assert.isAbove(built.reduce((a, b) => a + b, 0), 10 * log)
    })))

  // Rows enough that each index's keys outgrow one sorting run, so the build merges runs from
  // disk; the connection gets its page cache and temporary store back afterwards.
  itPaused("builds every held-back index again from sorted runs, and restores the connection's settings", () =>
    Effect.scoped(Effect.gen(function* () {
      const client = yield* makeClient({ filename: freshFile(), bulk: true })
      yield* migrate(client)
      const { db } = client
      const indexes = () => db.prepare("SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'rental_prices' ORDER BY name").all()
      const before = { indexes: indexes(), cache: db.pragma("cache_size", { simple: true }), temp: db.pragma("temp_store", { simple: true }) }
      yield* Effect.scoped(Effect.gen(function* () {
        const end = yield* makeRentalPriceStore(client, { bulk: true }).bulkLoad!(SORTED_ROWS)
        assert.isBelow(indexes().length, before.indexes.length)
        // Rows as a load writes them: every product current, keys hashes, in no order of any index.
        db.exec(`
          WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${SORTED_ROWS})
          INSERT INTO rental_prices (vendor, vendor_gpu_name, region, gpu_canonical_name, gpu_manufacturer, gpu_model, gpu_count, gpu_memory_gb,
            contract_type, price_usd_per_gpu_hour, raw_price, raw_price_unit, valid_from, extracted_at, base_product_key, product_key)
          SELECT 'vendor-' || (i % 40), 'H100', 'region-' || (i % 9), 'gpu-' || (i % 30), 'nvidia', 'H100', 1 + i % 8, 80,
            'ondemand', 1 + (i % 997) / 100.0, 1, 'usd_per_gpu_hour', '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z',
            lower(hex(randomblob(16))), lower(hex(randomblob(16)))
          FROM n`)
        yield* end
      }))
      assert.deepStrictEqual(indexes(), before.indexes)
      assert.strictEqual(db.pragma("integrity_check", { simple: true }), "ok")
      // Each index holds every current row, in its order.
      for (const { name } of before.indexes as Array<{ name: string }>) {
        if (!name.startsWith("rental_prices_current_") || name === "rental_prices_current_base") continue
        assert.strictEqual(db.prepare(`SELECT count(*) FROM rental_prices INDEXED BY ${name} WHERE valid_to IS NULL`).pluck().get(), SORTED_ROWS, name)
      }
      assert.strictEqual(db.pragma("cache_size", { simple: true }), before.cache)
      assert.strictEqual(db.pragma("temp_store", { simple: true }), before.temp)
    })), 120_000)
})
