import { afterAll, assert, describe, it } from "@effect/vitest"
import { Auth, type Principal, type RentalPrice, rentalPriceFields, RentalPriceRow, type Storage } from "@gpu-market/core"
import {
  currentVersions, type Decision, MemoryStorage, type PagePlan, type Predicate, putVersions, RateLimitStore, rentalPriceKeys, RentalPriceStore, rentalPriceTable,
  type Scope as PlanScope, SettingsStore, StorageDefect, storageContext, TokenStore, type VersionChanges, type VersionPoint, type VersionView
} from "@gpu-market/core/storage"
import { rentalRow } from "@gpu-market/storage-testkit"
import Database from "better-sqlite3"
import { Cause, ConfigProvider, Context, Effect, Either, Exit, Layer, Option } from "effect"
import fc from "fast-check"
import { spawn } from "node:child_process"
import { createHash } from "node:crypto"
import { createRequire } from "node:module"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import {
  columnsOf, compilePage, fromDatabase, LATEST_VERSION, layer, layerConfig, make, makeClient, makeStores, migrate, rowFromColumns, type SqliteClient
} from "../src/internal"

const require = createRequire(import.meta.url)
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gpu-market-sqlite-"))
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))
let files = 0
const freshFile = () => path.join(dir, `db-${files++}`, "market.db")

/** Every sort the definition allows: each must have an index that serves it, under every anchor. */
const SORTS = rentalPriceTable.sortable
const T0 = Date.UTC(2026, 0, 1)
/** The stored instant `day` days and `hour` hours after 2026-01-01. */
const at = (day: number, hour = 0) => new Date(T0 + day * 86_400_000 + hour * 3_600_000).toISOString().replace("Z", "000Z")
const hex32 = (s: string) => createHash("md5").update(s).digest("hex")

/** A decision that writes `changes` whatever it reads. */
const writes = (changes: VersionChanges<RentalPrice>) => () => Either.right({ changes, result: undefined })

/** The defect an exit died with, if it died. */
const defectOf = (exit: Exit.Exit<unknown, unknown>): unknown =>
  Exit.isFailure(exit) ? Option.getOrUndefined(Cause.dieOption(exit.cause)) : undefined

/** Builds the stores of `filename` and hands them to `f` inside one scope, which closes the file after. */
const withStores = <A, E>(filename: string, f: (ctx: Context.Context<Storage>) => Effect.Effect<A, E>) =>
  Effect.scoped(Effect.flatMap(Layer.build(layer({ filename })), f))

const withClient = <A, E>(f: (client: SqliteClient) => Effect.Effect<A, E>) =>
  Effect.scoped(Effect.gen(function* () {
    const client = yield* makeClient({ filename: freshFile() })
    yield* migrate(client)
    return yield* f(client)
  }))

describe("schema", () => {
  it.effect("columns match the row's fields, in order, with REAL for non-integer numbers", () =>
    withClient((client) => Effect.sync(() => {
      const cols = client.db.prepare("PRAGMA table_info(rental_prices)").all() as Array<{ name: string; type: string }>
      assert.deepStrictEqual(cols.map((c) => c.name), [...rentalPriceFields])
      const types = Object.fromEntries(cols.map((c) => [c.name, c.type]))
      for (const f of ["gpu_memory_gb", "ram_gb", "price_usd_per_gpu_hour", "raw_price"]) assert.strictEqual(types[f], "REAL")
      for (const f of ["gpu_count", "vcpu"]) assert.strictEqual(types[f], "INTEGER")
      assert.strictEqual(client.db.pragma("user_version", { simple: true }), LATEST_VERSION)
      assert.strictEqual(String(client.db.pragma("journal_mode", { simple: true })).toLowerCase(), "wal")
      assert.strictEqual(client.db.pragma("foreign_keys", { simple: true }), 1)
      assert.strictEqual(client.db.pragma("synchronous", { simple: true }), 1)
    })))

  it("rows are built with column i under field i, in spec order", () => {
    const row = rowFromColumns(rentalPriceFields.map((_, i) => i))
    assert.deepStrictEqual(Object.keys(row), [...rentalPriceFields])
    assert.deepStrictEqual(Object.values(row), rentalPriceFields.map((_, i) => i))
    assert.deepStrictEqual(columnsOf(row), rentalPriceFields.map((_, i) => i))
    assert.include(compilePage({ scope: { _tag: "latest" }, predicates: [], sort: { by: "vendor", order: "asc" }, after: undefined, limit: 1 }).sql,
      `SELECT ${rentalPriceFields.join(", ")} FROM`)
  })

  it.effect("a database from a newer schema is refused", () =>
    Effect.gen(function* () {
      const file = freshFile()
      yield* withStores(file, () => Effect.void)
      yield* Effect.scoped(Effect.flatMap(makeClient({ filename: file }), (c) => Effect.sync(() => c.db.pragma(`user_version = ${LATEST_VERSION + 1}`))))
      const exit = yield* Effect.exit(withStores(file, () => Effect.void))
      assert.isTrue(Exit.isFailure(exit))
      assert.include(JSON.stringify(exit), "StorageError")
    }))

  it("an open waits past the usual busy timeout for another process migrating the file, and a file already migrated takes no lock", async () => {
    const file = freshFile()
    fs.mkdirSync(path.dirname(file), { recursive: true })
    const setup = new Database(file)
    setup.pragma("journal_mode = WAL")
    setup.close()
    // Another process holds the write lock for 6 s, past the 5 s busy timeout, as a migration of a large file would.
    const holder = spawn(process.execPath, ["-e", `
      const db = new (require(${JSON.stringify(require.resolve("better-sqlite3"))}))(${JSON.stringify(file)})
      db.exec("BEGIN IMMEDIATE")
      console.log("locked")
      setTimeout(() => { db.exec("ROLLBACK"); db.close() }, 6000)
    `], { stdio: ["ignore", "pipe", "inherit"] })
    try {
      await new Promise<void>((resolve, reject) => {
        holder.stdout.on("data", (d: Buffer) => d.toString().includes("locked") && resolve())
        holder.once("exit", (code) => reject(new Error(`the lock holder exited (${code}) before locking`)))
      })
      const migrated = await Effect.runPromiseExit(Effect.scoped(Effect.flatMap(makeClient({ filename: file }), (client) =>
        Effect.map(migrate(client), () => client.db.pragma("user_version", { simple: true })))))
      assert.deepStrictEqual(migrated, Exit.succeed(LATEST_VERSION))
    } finally {
      holder.kill("SIGKILL")
    }
    // Migrated: an open while another connection holds the write lock needs none.
    const writer = new Database(file)
    try {
      writer.exec("BEGIN IMMEDIATE")
      const opened = await Effect.runPromiseExit(Effect.scoped(Effect.flatMap(makeClient({ filename: file }), migrate)))
      assert.deepStrictEqual(opened, Exit.succeed(LATEST_VERSION))
    } finally {
      writer.close()
    }
  }, 30_000)

  it.effect("statements are prepared once per SQL text", () =>
    withClient((client) => Effect.sync(() => {
      const plan: PagePlan = {
        scope: { _tag: "latest" }, predicates: [{ op: "in", field: "vendor", values: ["a"] }],
        sort: { by: "price_usd_per_gpu_hour", order: "asc" }, after: undefined, limit: 10
      }
      const a = compilePage(plan)
      const b = compilePage({ ...plan, predicates: [{ op: "in", field: "vendor", values: ["b"] }] })
      assert.strictEqual(a.sql, b.sql)
      assert.strictEqual(client.prepare(a.sql), client.prepare(b.sql))
      // A statement one caller read raw rows from gives the next caller objects again.
      const sql = "SELECT name FROM sqlite_schema WHERE name = 'rental_prices'"
      assert.deepStrictEqual(client.prepare(sql).raw(true).all(), [["rental_prices"]])
      assert.deepStrictEqual(client.prepare(sql).all(), [{ name: "rental_prices" }])
      assert.deepStrictEqual(client.prepare(sql).pluck(true).all(), ["rental_prices"])
      assert.deepStrictEqual(client.prepare(sql).all(), [{ name: "rental_prices" }])
    })))
})

describe("page SQL", () => {
  const position = (by: string) => ({ value: ["gpu_count", "gpu_memory_gb", "price_usd_per_gpu_hour"].includes(by) ? 2 : "x", tie: "8".repeat(32) })
  const plans = (extra: ReadonlyArray<Predicate>): Array<PagePlan> =>
    (["vendor", "gpu_canonical_name"] as const).flatMap((anchor) =>
      SORTS.flatMap((by) =>
        (["asc", "desc"] as const).flatMap((order) =>
          [undefined, position(by)].map((after): PagePlan => ({
            scope: { _tag: "latest" },
            predicates: [{ op: "in", field: anchor, values: ["x"] }, ...extra],
            sort: { by, order },
            after,
            limit: 101
          })))))

  const explain = (client: SqliteClient, plan: PagePlan) => {
    const { sql, params } = compilePage(plan)
    return (client.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>).map((r) => r.detail).join("\n")
  }

  const loadSome = (client: SqliteClient) => {
    const insert = client.db.prepare(`INSERT INTO rental_prices (${rentalPriceFields.join(", ")}) VALUES (${rentalPriceFields.map((f) => `@${f}`).join(", ")})`)
    client.db.transaction(() => {
      for (let i = 0; i < 3000; i++) {
        insert.run(rentalRow({
          vendor: `v${i % 7}`, gpu_canonical_name: `g${i % 11}`, vendor_sku: `s${i}`, region: `r${i % 5}`,
          gpu_count: 1 + (i % 8), price_usd_per_gpu_hour: 1 + (i % 13) / 4, valid_from: at(i % 40),
          valid_to: i % 3 === 0 ? null : at(40 + (i % 9))
        }))
      }
    })()
  }

  it.effect("/latest with one vendor or GPU anchor never sorts, for every sort, order and position", () =>
    withClient((client) => Effect.sync(() => {
      const check = (label: string) => {
        // A filter no index holds keeps the plan. (One on an indexed field, say region or a
        // price range, may rightly narrow by that index and sort the few rows left.)
        for (const extra of [[], [{ op: "eq", field: "contract_type", value: "spot" }]] as const) {
          for (const plan of plans(extra)) {
            const detail = explain(client, plan)
            const what = `${label}: ${JSON.stringify(plan.predicates)} ${plan.sort.by} ${plan.sort.order} after=${plan.after !== undefined}\n${detail}`
            assert.notInclude(detail, "TEMP B-TREE", what)
            assert.include(detail, "rental_prices_current_", what)
            // The position is part of the index seek, so a deep page costs what the first does.
            if (plan.after !== undefined) assert.match(detail, /AND (\(\w+,)?product_key\)?[<>]/, what)
          }
        }
      }
      check("empty")
      loadSome(client)
      check("loaded")
      client.db.exec("ANALYZE")
      check("analyzed")
    })))

  it.effect("a bound on the sort field does not hide the position from the index seek", () =>
    withClient((client) => Effect.sync(() => {
      for (const [op, order, value] of [["gte", "asc", 3], ["lte", "desc", 1]] as const) {
        const plan: PagePlan = {
          scope: { _tag: "latest" },
          predicates: [{ op: "in", field: "vendor", values: ["x"] }, { op, field: "price_usd_per_gpu_hour", value: 2 }],
          sort: { by: "price_usd_per_gpu_hour", order }, after: { value, tie: "0".repeat(32) }, limit: 10
        }
        const detail = explain(client, plan)
        assert.include(detail, "(price_usd_per_gpu_hour,product_key)", detail)
        assert.notInclude(detail, "TEMP B-TREE", detail)
      }
    })))

  it.effect("history reads by valid_from come from an index in order", () =>
    withClient((client) => Effect.sync(() => {
      for (const anchor of [[], [{ op: "in", field: "vendor", values: ["x"] }], [{ op: "in", field: "gpu_canonical_name", values: ["x"] }]] as const) {
        for (const order of ["asc", "desc"] as const) {
          const detail = explain(client, {
            scope: { _tag: "window", start: at(0), end: at(30) }, predicates: anchor,
            sort: { by: "valid_from", order }, after: { value: at(3), tie: "0".repeat(32) }, limit: 50
          })
          assert.notInclude(detail, "TEMP B-TREE", detail)
          // Later pages seek to the position, not to the window edge they walk away from.
          assert.include(detail, `(valid_from,product_key)${order === "asc" ? ">" : "<"}(?,?)`, detail)
        }
      }
    })))

  it.effect("plans naming unknown fields or sorting by a nullable field die with a StorageDefect: a bug, not storage trouble", () =>
    withStores(freshFile(), (ctx) => Effect.gen(function* () {
      const s = Context.get(ctx, RentalPriceStore)
      const base: PagePlan = { scope: { _tag: "latest" }, predicates: [], sort: { by: "vendor", order: "asc" }, after: undefined, limit: 5 }
      const bad: Array<PagePlan> = [
        { ...base, predicates: [{ op: "eq", field: "vendor; DROP TABLE rental_prices", value: "x" }] },
        { ...base, sort: { by: "rowid", order: "asc" } },
        { ...base, sort: { by: "vcpu", order: "asc" } }
      ]
      for (const plan of bad) {
        const exit = yield* Effect.exit(s.page(plan))
        const defect = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.dieOption(exit.cause)) : undefined
        assert.instanceOf(defect, StorageDefect, JSON.stringify(plan))
      }
      assert.deepStrictEqual(yield* s.page(base), [])
    })))
})

describe("files", () => {
  it.effect("data survives closing and reopening the file", () =>
    Effect.gen(function* () {
      const file = freshFile()
      const v1 = rentalRow({ vendor: "lambda", gpu_canonical_name: "h100-sxm", gpu_memory_gb: 80, price_usd_per_gpu_hour: 2.49, ram_gb: 1.5 })
      const v2 = rentalRow({ vendor: "lambda", gpu_canonical_name: "h100-sxm", gpu_memory_gb: 80, price_usd_per_gpu_hour: 3, valid_from: at(2), extracted_at: at(2) })
      yield* withStores(file, (ctx) => Effect.gen(function* () {
        const s = Context.get(ctx, RentalPriceStore)
        yield* putVersions(s.transact, rentalPriceKeys, [v1])
        yield* s.transact([{ base: v1.base_product_key, at: at(2) }], writes({ close: [{ key: v1.product_key, valid_to: at(2) }], open: [v2] }))
        yield* Context.get(ctx, SettingsStore).set("secret", "s3cr3t")
        yield* Context.get(ctx, TokenStore).put("h".repeat(64), {
          id: "p1" as never, name: "P One", grants: { gpu_rental_prices: { history: { _tag: "rolling", days: 30 } } },
          indices: ["idx-1"], legacy_custom_index: true, procurement: false, rate_limit_per_minute: 120
        })
        yield* Context.get(ctx, RateLimitStore).hit("k", 60_000_000, 1_000 * 60_000_000 + 5)
      }))
      yield* withStores(file, (ctx) => Effect.gen(function* () {
        const s = Context.get(ctx, RentalPriceStore)
        const rows = yield* s.page({
          scope: { _tag: "window", start: at(0), end: at(10) }, predicates: [{ op: "in", field: "vendor", values: ["lambda"] }],
          sort: { by: "valid_from", order: "asc" }, after: undefined, limit: 10
        })
        assert.deepStrictEqual(rows, [{ ...v1, valid_to: at(2) }, v2])
        // Keys in spec order, numbers as stored (80 stays 80, 2.49 stays 2.49).
        assert.deepStrictEqual(Object.keys(rows[0]!), [...rentalPriceFields])
        assert.strictEqual(rows[0]!.gpu_memory_gb, 80)
        assert.strictEqual(rows[0]!.price_usd_per_gpu_hour, 2.49)
        assert.deepStrictEqual(yield* currentVersions(s.transact, [v1.base_product_key]), [v2])
        assert.deepStrictEqual((yield* s.gpus).map((g) => g.gpu_canonical_name), ["h100-sxm"])
        assert.deepStrictEqual(yield* Context.get(ctx, SettingsStore).get("secret"), Option.some("s3cr3t"))
        const token = yield* Context.get(ctx, TokenStore).find("h".repeat(64))
        assert.isTrue(Option.isSome(token))
        assert.strictEqual(Option.getOrThrow(token).principal.name, "P One")
        assert.deepStrictEqual(Option.getOrThrow(token).principal.grants, { gpu_rental_prices: { history: { _tag: "rolling", days: 30 } } })
        assert.strictEqual((yield* Context.get(ctx, RateLimitStore).hit("k", 60_000_000, 1_000 * 60_000_000 + 6)).count, 2)
      }))
    }))

  it.effect("layerConfig opens the file named by GPU_MARKET_DB, creating its directory", () =>
    Effect.gen(function* () {
      const file = path.join(dir, "configured", "nested", "market.db")
      yield* Effect.scoped(Effect.flatMap(Layer.build(layerConfig), (ctx) => Context.get(ctx, SettingsStore).set("k", "v"))).pipe(
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["GPU_MARKET_DB", file]])))
      )
      assert.isTrue(fs.existsSync(file))
      yield* withStores(file, (ctx) => Effect.gen(function* () {
        assert.deepStrictEqual(yield* Context.get(ctx, SettingsStore).get("k"), Option.some("v"))
      }))
    }))

  it.effect("checkpointPages sets how much WAL a connection's writes add before a checkpoint; SQLite's 1,000 otherwise", () =>
    Effect.gen(function* () {
      const pages = (options: { readonly checkpointPages?: number }) =>
        Effect.scoped(Effect.map(makeClient({ filename: freshFile(), ...options }), (c) => c.db.pragma("wal_autocheckpoint", { simple: true })))
      assert.strictEqual(yield* pages({}), 1_000)
      assert.strictEqual(yield* pages({ checkpointPages: 20_000 }), 20_000)
    }))

  it.effect("two connections to one file see each other's writes, summaries included; steps of both on one product build one chain", () =>
    Effect.gen(function* () {
      const file = freshFile()
      yield* withStores(file, (a) => withStores(file, (b) => Effect.gen(function* () {
        const sa = Context.get(a, RentalPriceStore), sb = Context.get(b, RentalPriceStore)
        assert.deepStrictEqual(yield* sb.spellings, [])
        const r1 = rentalRow({ vendor: "va", gpu_canonical_name: "g1" })
        const base = r1.base_product_key
        yield* putVersions(sa.transact, rentalPriceKeys, [r1])
        assert.deepStrictEqual((yield* sb.spellings).map((s) => s.spelling), ["g1", "G1", "G1 80GB"])
        assert.isTrue((yield* sb.gpus)[0]!.currently_listed)
        // Each step moves the price one hour past the current row it reads and answers the key it
        // closed. The steps alternate between the connections; each reads inside its own write
        // transaction, so none closes a row the other already closed: no update is lost.
        const step = (s: RentalPriceStore["Type"]) =>
          s.transact([{ base, at: r1.valid_from }], (view) => {
            const now = view.current[0]!
            const hours = (Date.parse(now.valid_from) - T0) / 3_600_000 + 1
            const next = rentalRow({ vendor: "va", gpu_canonical_name: "g1", price_usd_per_gpu_hour: 2 + hours, valid_from: at(0, hours), extracted_at: at(0, hours) })
            return Either.right({ changes: { close: [{ key: now.product_key, valid_to: next.valid_from }], open: [next] }, result: now.product_key })
          })
        const closed = yield* Effect.all(Array.from({ length: 8 }, (_, i) => step(i % 2 === 0 ? sa : sb)), { concurrency: "unbounded" })
        assert.strictEqual(new Set(closed).size, 8, "every step closed a different row")
        const history = () => sb.page({ scope: { _tag: "window", start: at(0), end: at(5) }, predicates: [], sort: { by: "valid_from", order: "asc" }, after: undefined, limit: 50 })
        const chain = Array.from({ length: 9 }, (_, h) => [at(0, h), h < 8 ? at(0, h + 1) : null])
        assert.deepStrictEqual((yield* history()).map((r) => [r.valid_from, r.valid_to]), chain)
        // What a writer deciding on a read from before these steps would do, closing r1 again,
        // cannot be written: it is a defect, and it writes nothing.
        const stale = yield* Effect.exit(sb.transact([{ base, at: at(0, 1) }], writes({
          close: [{ key: r1.product_key, valid_to: at(0, 1) }],
          open: [rentalRow({ vendor: "va", gpu_canonical_name: "g1", price_usd_per_gpu_hour: 5, valid_from: at(0, 1) })]
        })))
        assert.instanceOf(defectOf(stale), StorageDefect)
        assert.deepStrictEqual((yield* history()).map((r) => [r.valid_from, r.valid_to]), chain)
        yield* sa.transact([{ base, at: at(1) }], ({ current }) =>
          Either.right({ changes: { close: current.map((r) => ({ key: r.product_key, valid_to: at(1) })), open: [] }, result: undefined }))
        assert.isFalse((yield* sb.gpus)[0]!.currently_listed)
        // Counters and settings are shared.
        const ra = Context.get(a, RateLimitStore), rb = Context.get(b, RateLimitStore)
        yield* ra.hit("k", 1_000, 5_000)
        assert.strictEqual((yield* rb.hit("k", 1_000, 5_001)).count, 2)
        assert.strictEqual(yield* Context.get(a, SettingsStore).getOrSet("x", "from-a"), "from-a")
        assert.strictEqual(yield* Context.get(b, SettingsStore).getOrSet("x", "from-b"), "from-a")
      })))
    }))
})

describe("row cache", () => {
  const products = Array.from({ length: 12 }, (_, i) => rentalRow({
    vendor: `v${i % 3}`, gpu_canonical_name: "g1", vendor_sku: `s${i}`, price_usd_per_gpu_hour: 1 + i / 4, valid_from: at(0), extracted_at: at(0)
  }))
  const PLANS: ReadonlyArray<PagePlan> = [
    { scope: { _tag: "latest" }, predicates: [{ op: "eq", field: "gpu_canonical_name", value: "g1" }], sort: { by: "price_usd_per_gpu_hour", order: "asc" }, after: undefined, limit: 5 },
    { scope: { _tag: "latest" }, predicates: [{ op: "lte", field: "price_usd_per_gpu_hour", value: 2.5 }], sort: { by: "price_usd_per_gpu_hour", order: "desc" }, after: undefined, limit: 50 },
    { scope: { _tag: "asOf", at: at(3) }, predicates: [], sort: { by: "product_key", order: "asc" }, after: undefined, limit: 50 },
    { scope: { _tag: "window", start: at(0), end: at(9) }, predicates: [{ op: "in", field: "vendor", values: ["v1"] }], sort: { by: "valid_from", order: "asc" }, after: undefined, limit: 50 }
  ]
  const withCache = <A, E>(filename: string, rowCacheRows: number, f: (store: RentalPriceStore["Type"]) => Effect.Effect<A, E>) =>
    Effect.scoped(Effect.flatMap(Layer.build(layer({ filename, rowCacheRows })), (ctx) => f(Context.get(ctx, RentalPriceStore))))
  const pagesOf = (store: RentalPriceStore["Type"]) => Effect.forEach(PLANS, (plan) => store.page(plan))
  /** Every price of `vendor` one hour later and 1 higher: rows closed and opened. */
  const reprice = (store: RentalPriceStore["Type"], vendor: string) => {
    const bases = products.filter((r) => r.vendor === vendor).map((r) => r.base_product_key)
    return store.transact(bases.map((base) => ({ base, at: at(1) })), ({ current }) => Either.right({
      changes: {
        close: current.map((r) => ({ key: r.product_key, valid_to: at(1) })),
        open: current.map(({ product_key: _, ...r }) => rentalRow({ ...r, price_usd_per_gpu_hour: r.price_usd_per_gpu_hour + 1, valid_from: at(1), extracted_at: at(1) }))
      },
      result: undefined
    }))
  }

  it.effect("pages after another connection's write, or a VACUUM, hold what a connection without the cache reads", () =>
    Effect.gen(function* () {
      const file = freshFile()
      yield* withCache(file, 1_000, (cached) => withCache(file, 0, (writer) => Effect.gen(function* () {
        yield* putVersions(writer.transact, rentalPriceKeys, products)
        const before = yield* pagesOf(cached)
        assert.deepStrictEqual(before, yield* pagesOf(writer))
        yield* reprice(writer, "v1")
        const after = yield* pagesOf(cached)
        assert.deepStrictEqual(after, yield* pagesOf(writer))
        // Each plan's page changed: a row closed, a price moved, or a new row came in.
        for (let i = 0; i < PLANS.length; i++) assert.notDeepEqual(after[i], before[i], `plan ${i}`)
        // VACUUM may number the table's rows anew; rows are held by their own key, not by rowid.
        const raw = new Database(file)
        raw.exec("DELETE FROM rental_prices WHERE vendor = 'v0' AND valid_to IS NULL")
        raw.exec("VACUUM")
        raw.close()
        yield* reprice(writer, "v2")
        assert.deepStrictEqual(yield* pagesOf(cached), yield* pagesOf(writer))
      })))
    }))

  it.effect("a row-cache size that is not a whole number ≥ 0 dies with a RangeError before the stores serve anything", () =>
    Effect.gen(function* () {
      for (const rowCacheRows of [-1, 2.5]) {
        const exit = yield* Effect.exit(withCache(freshFile(), rowCacheRows, () => Effect.void))
        assert.instanceOf(defectOf(exit), RangeError, String(rowCacheRows))
      }
    }))

  it.effect("a cache smaller than a page serves every row of it; rows are frozen and shared by the pages of one version", () =>
    Effect.gen(function* () {
      const file = freshFile()
      yield* withCache(file, 0, (writer) => putVersions(writer.transact, rentalPriceKeys, products))
      const expected = yield* withCache(file, 0, pagesOf)
      assert.deepStrictEqual(yield* withCache(file, 3, pagesOf), expected)
      yield* withCache(file, 1_000, (store) => Effect.gen(function* () {
        const [byGpu, underBound] = yield* pagesOf(store)
        const cheapest = byGpu![0]!
        assert.isTrue(Object.isFrozen(cheapest))
        assert.strictEqual(underBound!.find((r) => r.product_key === cheapest.product_key), cheapest)
      }))
    }))
})

describe("transact", () => {
  it.effect("rows given as RentalPriceRow instances are stored like plain rows", () =>
    withStores(freshFile(), (ctx) => Effect.gen(function* () {
      const s = Context.get(ctx, RentalPriceStore)
      const plain = rentalRow({ vendor: "v", gpu_canonical_name: "g" })
      yield* putVersions(s.transact, rentalPriceKeys, [RentalPriceRow.make(plain as never)])
      assert.deepStrictEqual(yield* currentVersions(s.transact, [plain.base_product_key]), [plain])
    })))

  it.effect("a decision that breaks the rules dies with a StorageDefect and leaves nothing half-written, summaries included", () =>
    withStores(freshFile(), (ctx) => Effect.gen(function* () {
      const s = Context.get(ctx, RentalPriceStore)
      const old = [0, 1, 2].map((i) => rentalRow({ vendor: "v", gpu_canonical_name: "g", vendor_sku: `s${i}` }))
      const gone = rentalRow({ vendor: "v", gpu_canonical_name: "g", vendor_sku: "gone", valid_to: at(1) })
      yield* putVersions(s.transact, rentalPriceKeys, [...old, gone])
      const all = () => s.page({ scope: { _tag: "window", start: at(0), end: at(100) }, predicates: [], sort: { by: "valid_from", order: "asc" }, after: undefined, limit: 100 })
      const before = { rows: yield* all(), spellings: yield* s.spellings, gpus: yield* s.gpus }
      const next = old.map((r, i) => rentalRow({ ...r, base_product_key: r.base_product_key, product_key: hex32(`next-${i}`), price_usd_per_gpu_hour: 9, valid_from: at(5), vendor_gpu_name: "NEW SPELLING" }))
      const newGpu = rentalRow({ vendor: "other-vendor", gpu_canonical_name: "brand-new-gpu", valid_from: at(5) })
      const points = [...old, newGpu].map((r) => ({ base: r.base_product_key, at: at(5) }))
      const closeOld = old.map((r) => ({ key: r.product_key, valid_to: at(5) }))
      const cases: Array<VersionChanges<RentalPrice>> = [
        // The last open reuses the key of a stored closed row: only the insert finds that, after
        // the closes and every other open were written, and all of them roll back.
        { close: closeOld, open: [...next, newGpu, { ...newGpu, product_key: gone.product_key, valid_to: at(6) }] },
        // The last open makes a second current row of a product.
        { close: closeOld.slice(0, 2), open: [newGpu, ...next] },
        // The last close names a row that is not current.
        { close: [...closeOld, { key: hex32("missing"), valid_to: at(5) }], open: [newGpu] }
      ]
      for (const changes of cases) {
        const defect = defectOf(yield* Effect.exit(s.transact(points, writes(changes))))
        assert.instanceOf(defect, StorageDefect, JSON.stringify(changes.close))
        assert.strictEqual((defect as StorageDefect).operation, "rental_prices.transact")
        assert.deepStrictEqual(yield* all(), before.rows)
        assert.deepStrictEqual(yield* s.spellings, before.spellings)
        assert.deepStrictEqual(yield* s.gpus, before.gpus)
        assert.sameMembers((yield* currentVersions(s.transact, old.map((r) => r.base_product_key))).map((r) => r.product_key), old.map((r) => r.product_key))
      }
    })))
})

// ---------------------------------------------------------------------------------------------
// Differential check against the in-memory reference store.

const VENDORS = ["aws", "lambda", "runpod", "vast.ai"]
const GPUS = ["a100-80gb", "h100-sxm", "l40s", "mi300x"]

interface Product {
  readonly vendor: string
  readonly gpu: string
  readonly sku: string
  readonly region: string
  readonly count: number
  readonly memory: number
  readonly contract: string
  readonly availability: string | null
  readonly spelling: string
  readonly manufacturer: string
  readonly vcpu: number | null
  readonly versions: ReadonlyArray<{ readonly gap: number; readonly price: number }>
  readonly closedAtEnd: boolean
}

const productArb: fc.Arbitrary<Product> = fc.record({
  vendor: fc.constantFrom(...VENDORS),
  gpu: fc.constantFrom(...GPUS),
  sku: fc.constantFrom("s1", "s2", "s3", "s4"),
  region: fc.constantFrom("us-east", "eu-west", "ap-south", "US-East", "eu-west-2"),
  count: fc.constantFrom(1, 2, 4, 8),
  memory: fc.constantFrom(24, 40, 80, 80.5, 141),
  contract: fc.constantFrom("ondemand", "spot", "reserved"),
  availability: fc.constantFrom(null, "available", "limited"),
  spelling: fc.constantFrom("NVIDIA H100", "H100 SXM5", "h100-sxm", "A100 80GB", "Instinct MI300X", "l40s", "L40S 48GB"),
  manufacturer: fc.constantFrom("nvidia", "NVIDIA", "amd"),
  vcpu: fc.constantFrom(null, 8, 96),
  versions: fc.array(fc.record({ gap: fc.integer({ min: 1, max: 6 }), price: fc.constantFrom(0.5, 1, 1.25, 2, 2.49, 3) }), { minLength: 1, maxLength: 4 }),
  closedAtEnd: fc.boolean()
})

/** A product's versions as rows, each closed when the next opens. */
const versionsOf = (p: Product, i: number): Array<RentalPrice> => {
  const base = hex32(`base-${i}`)
  let day = 0
  const starts = p.versions.map((v) => (day += v.gap))
  return p.versions.map((v, k) => ({
    vendor: p.vendor, vendor_gpu_name: p.spelling, vendor_sku: p.sku, vendor_region: null, region: p.region,
    gpu_canonical_name: p.gpu, gpu_manufacturer: p.manufacturer, gpu_model: p.gpu.toUpperCase(), gpu_count: p.count,
    gpu_memory_gb: p.memory, vcpu: p.vcpu, ram_gb: p.vcpu === null ? null : p.vcpu * 10.5, os: "linux", form_factor: null,
    interconnect: null, instance_type: `${p.vendor}.${p.count}x`, instance_variant: null, contract_type: p.contract,
    contract_term: null, contract_details: null, availability: p.availability, price_usd_per_gpu_hour: v.price,
    raw_price: v.price * p.count, raw_price_unit: "usd_per_hour", valid_from: at(starts[k]!), extracted_at: at(starts[k]!),
    valid_to: k < p.versions.length - 1 ? at(starts[k + 1]!) : p.closedAtEnd ? at(day + 3) : null,
    base_product_key: base, product_key: hex32(`row-${i}-${k}`)
  }))
}

/**
 * The steps that produce the products, as ingest would decide them: round k closes version k-1
 * and opens version k (current), a last round closes what ends closed. Each step decides on the
 * current rows it reads, so both stores are also asked to read alike.
 */
const stepsOf = (products: ReadonlyArray<Product>) => {
  const rows = products.map(versionsOf)
  const rounds = Math.max(...products.map((p) => p.versions.length))
  const steps: Array<Step> = []
  // The row each product opens in a round (null: it closes at `valid_to` and opens nothing).
  const round = (k: number) => rows.flatMap((vs): Array<{ base: string; when: string; open: RentalPrice | null }> => {
    if (k < vs.length) return [{ base: vs[k]!.base_product_key, when: vs[k]!.valid_from, open: { ...vs[k]!, valid_to: null } }]
    const last = vs[vs.length - 1]!
    return k === vs.length && last.valid_to !== null ? [{ base: last.base_product_key, when: last.valid_to, open: null }] : []
  })
  for (let k = 0; k <= rounds; k++) {
    const moves = round(k)
    const when = new Map(moves.map((m) => [m.base, m.when]))
    steps.push({
      points: moves.map((m) => ({ base: m.base, at: m.when })),
      decide: (view) => Either.right({
        changes: {
          close: view.current.map((r) => ({ key: r.product_key, valid_to: when.get(r.base_product_key)! })),
          open: moves.flatMap((m) => (m.open === null ? [] : [m.open]))
        },
        result: byKey(view.current)
      })
    })
  }
  return { rows: rows.flat(), steps }
}

const byKey = (rows: ReadonlyArray<RentalPrice>) => [...rows].sort((a, b) => (a.product_key < b.product_key ? -1 : 1))

/** One `transact`: its points and its decision. */
interface Step {
  readonly points: ReadonlyArray<VersionPoint>
  readonly decide: (view: VersionView<RentalPrice>) => Either.Either<Decision<VersionChanges<RentalPrice>, ReadonlyArray<RentalPrice>>>
}

/** Runs every step on both stores, which must read the same current rows at each. */
const runBoth = (sqlite: RentalPriceStore["Type"], memory: RentalPriceStore["Type"], steps: ReadonlyArray<Step>) =>
  Effect.forEach(steps, ({ points, decide }) => Effect.gen(function* () {
    assert.deepStrictEqual(yield* sqlite.transact(points, decide), yield* memory.transact(points, decide))
  }), { discard: true })

const subset = <A>(xs: ReadonlyArray<A>) => fc.subarray([...xs], { minLength: 0, maxLength: xs.length })
const dayArb = fc.integer({ min: 0, max: 30 })

const scopeArb: fc.Arbitrary<PlanScope> = fc.oneof(
  fc.constant({ _tag: "latest" as const }),
  fc.tuple(dayArb, fc.integer({ min: 0, max: 23 })).map(([d, h]) => ({ _tag: "asOf" as const, at: at(d, h) })),
  fc.tuple(dayArb, fc.integer({ min: 0, max: 20 })).map(([d, span]) => ({ _tag: "window" as const, start: at(d), end: at(d + span) }))
)

const predicateArb = (baseKeys: ReadonlyArray<string>): fc.Arbitrary<Predicate> => fc.oneof(
  { withCrossShrink: true },
  subset(VENDORS).map((values) => ({ op: "in" as const, field: "vendor", values })),
  subset(GPUS).map((values) => ({ op: "in" as const, field: "gpu_canonical_name", values })),
  subset(["us-east", "eu-west", "US-East", "nowhere"]).map((values) => ({ op: "in" as const, field: "region", values })),
  fc.constantFrom("ondemand", "spot").map((value) => ({ op: "eq" as const, field: "contract_type", value })),
  fc.constantFrom("available", "limited").map((value) => ({ op: "eq" as const, field: "availability", value })),
  fc.constantFrom(...baseKeys).map((value) => ({ op: "eq" as const, field: "base_product_key", value })),
  fc.tuple(fc.constantFrom("gte" as const, "lte" as const), fc.constantFrom("price_usd_per_gpu_hour", "gpu_count", "gpu_memory_gb", "vcpu", "ram_gb"), fc.constantFrom(0.5, 1, 2, 2.49, 4, 80, 96))
    .map(([op, field, value]) => ({ op, field, value })),
  // Shapes the reference treats strictly: a numeric field never equals text, text has no bounds.
  fc.constantFrom<Predicate>(
    { op: "eq", field: "gpu_count", value: "8" },
    { op: "in", field: "gpu_memory_gb", values: ["80", "24"] },
    { op: "in", field: "gpu_count", values: ["8"] },
    { op: "gte", field: "region", value: 1 }
  )
)

const planArb = (baseKeys: ReadonlyArray<string>): fc.Arbitrary<PagePlan> => fc.record({
  scope: scopeArb,
  predicates: fc.array(predicateArb(baseKeys), { maxLength: 2 }),
  sort: fc.record({
    by: fc.constantFrom(...SORTS, "product_key", "contract_type", "raw_price", "extracted_at"),
    order: fc.constantFrom("asc" as const, "desc" as const)
  }),
  after: fc.constant(undefined),
  limit: fc.integer({ min: 1, max: 9 })
})

const NUMERIC_SORTS = new Set(["gpu_count", "gpu_memory_gb", "price_usd_per_gpu_hour", "raw_price"])

/** An arbitrary keyset position of the right type for each sort, not only one a walk reaches. */
const positionArb = fc.record({
  number: fc.constantFrom(0.5, 1, 2, 2.49, 3, 4, 8, 40, 80, 80.5, 141, 1000),
  text: fc.constantFrom(...VENDORS, ...GPUS, "us-east", "eu-west", "US-East", "ondemand", "spot", at(5), at(10, 3), "", "m", "zzz"),
  tie: fc.constantFrom("0".repeat(32), "8".repeat(32), "f".repeat(32), hex32("row-3-0"))
}).map((p) => (by: string): NonNullable<PagePlan["after"]> =>
  ({ value: by === "product_key" ? p.tie : NUMERIC_SORTS.has(by) ? p.number : p.text, tie: p.tie }))

describe("differential against the memory store", () => {
  it("returns what the reference returns, page by page", () => {
    let runs = 0
    fc.assert(
      fc.property(
        fc.array(productArb, { minLength: 20, maxLength: 80 }).chain((products) =>
          fc.tuple(
            fc.constant(products),
            fc.array(fc.tuple(planArb(products.map((_, i) => hex32(`base-${i}`))), fc.option(positionArb)), { minLength: 30, maxLength: 60 })
          )),
        ([products, plans]) => {
          runs++
          const { rows, steps } = stepsOf(products)
          Effect.runSync(Effect.scoped(Effect.gen(function* () {
            const sqlite = (yield* make({ filename: freshFile() })).rentalStore
            const memory = (yield* MemoryStorage.make).rentalStore
            yield* runBoth(sqlite, memory, steps)
            assert.deepStrictEqual(yield* sqlite.spellings, yield* memory.spellings)
            assert.deepStrictEqual(yield* sqlite.gpus, yield* memory.gpus)
            const keys = [...products.map((_, i) => hex32(`base-${i}`)).filter((_, i) => i % 2 === 0), hex32("base-0"), hex32("no such product")]
            assert.deepStrictEqual(byKey(yield* currentVersions(sqlite.transact, keys)), byKey(yield* currentVersions(memory.transact, keys)))
            // The versions in force a step reads at earlier instants: at each row's bounds (valid_from
            // inclusive, valid_to exclusive) and between them.
            const probes = [
              ...rows.flatMap((r) => [r.valid_from, ...(r.valid_to === null ? [] : [r.valid_to])].map((t) => ({ base: r.base_product_key, at: t }))),
              ...products.flatMap((_, i) => [0, 1, 4, 9, 15].map((d) => ({ base: hex32(`base-${i}`), at: at(d, 12) })))
            ]
            const read = (view: VersionView<RentalPrice>) =>
              Either.right({ changes: { close: [], open: [] }, result: probes.map((p) => view.inForce(p.base, p.at) ?? null) })
            const inForce = yield* sqlite.transact(probes, read)
            assert.deepStrictEqual(inForce, yield* memory.transact(probes, read))
            assert.isTrue(inForce.some((r) => r !== null))
            for (const [plan, start] of plans) {
              let after: PagePlan["after"] = start === null ? undefined : start(plan.sort.by)
              for (let n = 0; n < 500; n++) {
                const p: PagePlan = { ...plan, after }
                const got = yield* sqlite.page(p)
                const want = yield* memory.page(p)
                assert.deepStrictEqual(got, want, `page ${n} of ${JSON.stringify(plan)}`)
                if (got.length < plan.limit) break
                const last = got[got.length - 1]!
                after = { value: last[plan.sort.by as keyof RentalPrice] as string | number, tie: last.product_key }
              }
            }
          })))
        }
      ),
      { seed: 20260101, numRuns: 40 }
    )
    assert.strictEqual(runs, 40)
  })

  it("agrees for positions anywhere, with the sort field bounded or pinned", () => {
    const { steps } = stepsOf(fc.sample(productArb, { seed: 7, numRuns: 60 }))
    const scopes: Array<PlanScope> = [{ _tag: "latest" }, { _tag: "window", start: at(0), end: at(40) }]
    const plans: Array<PagePlan> = []
    const ties = ["0".repeat(32), "f".repeat(32), hex32("row-5-0")]
    for (const scope of scopes) for (const order of ["asc", "desc"] as const) for (const tie of ties) {
      for (const by of ["price_usd_per_gpu_hour", "gpu_count", "gpu_memory_gb"]) {
        for (const op of ["gte", "lte"] as const) for (const bound of [1, 2, 2.49, 80]) for (const value of [0.5, 2, 2.49, 3, 80.5, 200]) {
          plans.push({ scope, predicates: [{ op, field: by, value: bound }], sort: { by, order }, after: { value, tie }, limit: 4 })
        }
      }
      for (const [by, pinned] of [["vendor", "lambda"], ["gpu_canonical_name", "h100-sxm"], ["contract_type", "spot"], ["region", "eu-west"]] as const) {
        for (const value of ["", "a", pinned, `${pinned}0`, "zzz"]) {
          plans.push({ scope, predicates: [{ op: "in", field: by, values: [pinned] }], sort: { by, order }, after: { value, tie }, limit: 4 })
          plans.push({ scope, predicates: [{ op: "eq", field: by, value: pinned }], sort: { by, order }, after: { value, tie }, limit: 4 })
        }
      }
    }
    Effect.runSync(Effect.scoped(Effect.gen(function* () {
      const sqlite = (yield* make({ filename: freshFile() })).rentalStore
      const memory = (yield* MemoryStorage.make).rentalStore
      yield* runBoth(sqlite, memory, steps)
      let rows = 0
      for (const plan of plans) {
        const got = yield* sqlite.page(plan)
        assert.deepStrictEqual(got, yield* memory.page(plan), JSON.stringify(plan))
        rows += got.length
      }
      assert.isAbove(rows, plans.length)
    })))
  })

  it("decisions breaking the rules die with a StorageDefect in both stores and write nothing; the others write the same", () => {
    const r = rentalRow({ vendor: "v", gpu_canonical_name: "g", vendor_gpu_name: "g" })
    const twin = { ...r, price_usd_per_gpu_hour: 7 }
    const closedTwin = { ...r, valid_to: at(3) }
    const other = rentalRow({ vendor: "v", gpu_canonical_name: "g", vendor_sku: "other" })
    const x = { ...twin, product_key: hex32("x"), valid_from: at(4) }
    const closeR = (valid_to: string) => ({ key: r.product_key, valid_to })
    // Each step reads the products of `r` and `other` at day 5 and writes its changes as given.
    const sequences: Array<Array<VersionChanges<RentalPrice>>> = [
      // One key opened twice in one decision.
      [{ close: [], open: [closedTwin, r] }],
      [{ close: [], open: [r, closedTwin] }],
      [{ close: [], open: [r, twin] }],
      // One row closed twice in one decision.
      [{ close: [], open: [r] }, { close: [closeR(at(4)), closeR(at(6))], open: [] }],
      // The same row written twice: its key is stored and its product has a current row.
      [{ close: [], open: [r] }, { close: [], open: [other, r] }],
      // Closing a row and opening it again under its key.
      [{ close: [], open: [r] }, { close: [closeR(at(4))], open: [r] }],
      // A valid close and open, then a row reusing the key of the closed row: the memory store
      // checks its keys first, SQLite finds it when inserting, after the close was written.
      [{ close: [], open: [r, other] }, { close: [closeR(at(4))], open: [x] }, { close: [{ key: x.product_key, valid_to: at(5) }], open: [{ ...closedTwin, valid_from: at(5), valid_to: at(6) }] }]
    ]
    const points = [r, other].map((row) => ({ base: row.base_product_key, at: at(5) }))
    const plan: PagePlan = { scope: { _tag: "window", start: at(0), end: at(10) }, predicates: [], sort: { by: "valid_from", order: "asc" }, after: undefined, limit: 50 }
    let defects = 0
    for (const seq of sequences) {
      Effect.runSync(Effect.scoped(Effect.gen(function* () {
        const sqlite = (yield* make({ filename: freshFile() })).rentalStore
        const memory = (yield* MemoryStorage.make).rentalStore
        for (const changes of seq) {
          const before = yield* memory.page(plan)
          const a = defectOf(yield* Effect.exit(sqlite.transact(points, writes(changes))))
          const b = defectOf(yield* Effect.exit(memory.transact(points, writes(changes))))
          assert.strictEqual(a instanceof StorageDefect, b instanceof StorageDefect, JSON.stringify(changes))
          if (a !== undefined) {
            assert.instanceOf(a, StorageDefect)
            assert.deepStrictEqual(yield* memory.page(plan), before, "a defect writes nothing")
            defects++
          }
          assert.deepStrictEqual(yield* sqlite.page(plan), yield* memory.page(plan))
          assert.deepStrictEqual(yield* sqlite.spellings, yield* memory.spellings)
          assert.deepStrictEqual(yield* sqlite.gpus, yield* memory.gpus)
        }
      })))
    }
    // Each sequence breaks the rules once, in its last step.
    assert.strictEqual(defects, sequences.length)
  })

  it("random decisions, some breaking the rules, leave both stores alike step by step", () => {
    const things = [0, 1, 2, 3].map((i) => rentalRow({ vendor: VENDORS[i]!, gpu_canonical_name: GPUS[i % 2]!, vendor_sku: `s${i}` }))
    const MISTAKES = ["none", "closeClosed", "closeEarly", "secondCurrent", "reuseKey", "unread"] as const
    const moveArb = fc.record({
      touched: fc.uniqueArray(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 4 }),
      // null withdraws the price: the current row closes and nothing opens.
      price: fc.option(fc.constantFrom(1, 2, 2.49, 3), { nil: null }),
      mistake: fc.constantFrom(...MISTAKES)
    })
    const all: PagePlan = { scope: { _tag: "window", start: at(0), end: at(30) }, predicates: [], sort: { by: "valid_from", order: "asc" }, after: undefined, limit: 500 }
    let broken = 0, written = 0
    fc.assert(
      fc.property(fc.array(moveArb, { minLength: 1, maxLength: 12 }), (moves) => {
        Effect.runSync(Effect.scoped(Effect.gen(function* () {
          const sqlite = (yield* make({ filename: freshFile() })).rentalStore
          const memory = (yield* MemoryStorage.make).rentalStore
          for (const [s, move] of moves.entries()) {
            // Step s runs at hour s of day 1, after every row stored so far.
            const now = at(1, s)
            const stored = yield* memory.page(all)
            const closed = stored.filter((r) => r.valid_to !== null)
            const rowOf = (t: number, key: string, valid_to: string | null = null) =>
              ({ ...things[t]!, price_usd_per_gpu_hour: move.price ?? 1, valid_from: now, extracted_at: now, valid_to, product_key: hex32(key) })
            // Whether the decision broke a rule, so the step must die; set while deciding.
            let breaks = false
            const decide = (view: VersionView<RentalPrice>) => {
              const close = move.touched.flatMap((t) =>
                view.current.filter((r) => r.base_product_key === things[t]!.base_product_key).map((r) => ({ key: r.product_key, valid_to: now })))
              const open = move.price === null ? [] : move.touched.map((t) => rowOf(t, `row-${t}-${s}`))
              const first = move.touched[0]!
              const current = view.current.find((r) => r.base_product_key === things[first]!.base_product_key)
              const untouched = [0, 1, 2, 3].find((t) => !move.touched.includes(t))
              breaks = true
              if (move.mistake === "closeClosed" && closed.length > 0) close.push({ key: closed[0]!.product_key, valid_to: now })
              else if (move.mistake === "closeEarly" && current !== undefined) close[0] = { key: current.product_key, valid_to: current.valid_from }
              else if (move.mistake === "secondCurrent") open.push(rowOf(first, `extra-${s}`), rowOf(first, `extra2-${s}`))
              else if (move.mistake === "reuseKey" && closed.length > 0) open.push({ ...rowOf(first, "unused", at(2)), product_key: closed[0]!.product_key })
              else if (move.mistake === "unread" && untouched !== undefined) open.push(rowOf(untouched, `unread-${s}`))
              else breaks = false
              return Either.right({ changes: { close, open }, result: byKey(view.current) })
            }
            const points = move.touched.map((t) => ({ base: things[t]!.base_product_key, at: now }))
            const a = yield* Effect.exit(sqlite.transact(points, decide))
            const b = yield* Effect.exit(memory.transact(points, decide))
            if (breaks) {
              broken++
              assert.instanceOf(defectOf(a), StorageDefect, `${move.mistake} on SQLite`)
              assert.instanceOf(defectOf(b), StorageDefect, `${move.mistake} in memory`)
              assert.deepStrictEqual(yield* memory.page(all), stored, "a defect writes nothing")
            } else {
              written++
              assert.isTrue(Exit.isSuccess(a) && Exit.isSuccess(b), `${move.mistake} broke nothing`)
              if (Exit.isSuccess(a) && Exit.isSuccess(b)) assert.deepStrictEqual(a.value, b.value, "both read the same current rows")
            }
            assert.deepStrictEqual(yield* sqlite.page(all), yield* memory.page(all))
            const bases = things.map((r) => r.base_product_key)
            assert.deepStrictEqual(byKey(yield* currentVersions(sqlite.transact, bases)), byKey(yield* currentVersions(memory.transact, bases)))
            assert.deepStrictEqual(yield* sqlite.spellings, yield* memory.spellings)
            assert.deepStrictEqual(yield* sqlite.gpus, yield* memory.gpus)
          }
        })))
      }),
      { seed: 20260102, numRuns: 30 }
    )
    assert.isAbove(broken, 20)
    assert.isAbove(written, 20)
  })
})

describe("token cache", () => {
  it.effect("a cached token costs one statement, the version's primary-key read: nothing reads the tokens table", () =>
    Effect.gen(function* () {
      const statements: Array<string> = []
      const filename = freshFile()
      fs.mkdirSync(path.dirname(filename), { recursive: true })
      const db = new Database(filename, { verbose: (sql) => statements.push(String(sql)) })
      yield* Effect.addFinalizer(() => Effect.sync(() => db.close()))
      const client = fromDatabase(db, filename)
      yield* migrate(client)
      const auth = yield* Effect.provide(Auth, Auth.Default.pipe(Layer.provide(Layer.succeedContext(storageContext(makeStores(client))))))
      const principal: Principal = {
        id: "p" as Principal["id"], name: "p", grants: {}, indices: "all", legacy_custom_index: false, procurement: false, rate_limit_per_minute: 1
      }
      yield* auth.issue(principal, "secret")
      statements.length = 0
      yield* auth.authenticateToken("secret")
      assert.strictEqual(statements.filter((s) => /\bFROM tokens\b/.test(s)).length, 1, "the first lookup reads the token")
      statements.length = 0
      for (let i = 0; i < 10; i++) assert.strictEqual((yield* auth.authenticateToken("secret")).id, principal.id)
      assert.deepStrictEqual(statements, Array.from({ length: 10 }, () => "SELECT value FROM settings WHERE name = 'tokens.version'"))
    }).pipe(Effect.scoped))
})
