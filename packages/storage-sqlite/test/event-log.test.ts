import { afterAll, assert, describe, it } from "@effect/vitest"
import type { MarketEvent, RentalPrice } from "@gpu-market/core"
import { rentalRow } from "@gpu-market/storage-testkit"
import { Effect, Either } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { makeClient, makeStores, migrate, migrations, type SqliteClient } from "../src/internal"

/**
 * The change feed's follower on SQLite polls the file for other processes' events: while
 * nothing is committed its polls read no table (the file's change stamp says so), and a commit
 * by another connection is read at the next poll.
 */

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gpu-market-events-"))
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

const row: RentalPrice = rentalRow({
  vendor: "v-events", gpu_canonical_name: "h100-sxm", vendor_sku: "s1", region: "r1", gpu_count: 1, price_usd_per_gpu_hour: 2,
  valid_from: "2026-01-05T06:00:00.000000Z", extracted_at: "2026-01-05T06:00:00.000000Z",
  base_product_key: "0".repeat(32), product_key: "1".repeat(32)
})

describe("SQLite event log follow", () => {
  it.live("a quiet feed's polls read no table; another connection's commit is read at the next", () =>
    Effect.scoped(Effect.gen(function* () {
      const filename = path.join(dir, "quiet.db")
      const client = yield* makeClient({ filename })
      yield* migrate(client)
      let reads = 0
      const counting: SqliteClient = {
        ...client,
        prepare: (sql) => {
          if (/\bevents\b/.test(sql)) reads++
          return client.prepare(sql)
        }
      }
      const log = makeStores(counting, { eventPollMs: 10 }).eventLogStore
      const head = yield* log.head
      reads = 0
      for (let i = 0; i < 5; i++) assert.deepStrictEqual(yield* log.follow(head, 10), [])
      // The first follow's one read (its bounds and rows); the polls after it read nothing.
      assert.strictEqual(reads, 3)

      const writer = yield* makeClient({ filename })
      yield* makeStores(writer).rentalStore.transact([{ base: row.base_product_key, at: row.valid_from }], () =>
        Either.right({ changes: { close: [], open: [row] }, result: undefined }))
      const found = yield* log.follow(head, 10)
      assert.deepStrictEqual(found.map((e) => e.event), [{ type: "rental_price", row }])
    })))
})

describe("SQLite event log rows", () => {
  const price = (r: RentalPrice, at: string, usd: number): RentalPrice =>
    rentalRow({ ...r, price_usd_per_gpu_hour: usd, valid_from: at, extracted_at: at, product_key: `${usd}`.padStart(32, "0") })

  it.live("a rental event names its row by key, with the row's valid_to then, and reads as the row it names", () =>
    Effect.scoped(Effect.gen(function* () {
      const client = yield* makeClient({ filename: path.join(dir, "keyed.db") })
      yield* migrate(client)
      const { rentalStore, eventLogStore } = makeStores(client)
      const head = yield* eventLogStore.head
      const later = price(row, "2026-01-06T06:00:00.000000Z", 3)
      yield* rentalStore.transact([{ base: row.base_product_key, at: row.valid_from }], () =>
        Either.right({ changes: { close: [], open: [row] }, result: undefined }))
      yield* rentalStore.transact([{ base: row.base_product_key, at: later.valid_from }], () =>
        Either.right({ changes: { close: [{ key: row.product_key, valid_to: later.valid_from }], open: [later] }, result: undefined }))
      yield* rentalStore.transact([{ base: row.base_product_key, at: "2026-01-07T06:00:00.000000Z" }], () =>
        Either.right({ changes: { close: [{ key: later.product_key, valid_to: "2026-01-07T06:00:00.000000Z" }], open: [] }, result: undefined }))

      // The log keeps the type, the key and valid_to as it was; no copy of the row.
      assert.deepStrictEqual(client.db.prepare("SELECT event, row_key, row_valid_to FROM events ORDER BY id").raw(true).all(), [
        ["rental_price", row.product_key, null],
        ["rental_price", later.product_key, null],
        ["rental_price_withdrawal", later.product_key, "2026-01-07T06:00:00.000000Z"]
      ])
      assert.deepStrictEqual((yield* eventLogStore.read(head, 10)).map((e) => e.event), [
        { type: "rental_price", row },
        { type: "rental_price", row: later },
        { type: "rental_price_withdrawal", row: { ...later, valid_to: "2026-01-07T06:00:00.000000Z" } }
      ])
    })))

  it.live("a log written before rows were named by key reads as it did once the file is migrated", () =>
    Effect.scoped(Effect.gen(function* () {
      const client = yield* makeClient({ filename: path.join(dir, "upgraded.db") })
      // The file as the build before migration 9 left it, with an event copied whole.
      client.db.transaction(() => {
        for (const m of migrations.filter((m) => m.version <= 8)) client.db.exec(m.sql)
        client.db.pragma("user_version = 8")
      })()
      const copied: MarketEvent = { type: "rental_price", row }
      client.db.prepare("INSERT INTO events (event) VALUES (?)").run(JSON.stringify(copied))
      yield* migrate(client)
      const { rentalStore, eventLogStore } = makeStores(client)
      const later = price(row, "2026-01-06T06:00:00.000000Z", 3)
      yield* rentalStore.transact([{ base: row.base_product_key, at: later.valid_from }], () =>
        Either.right({ changes: { close: [], open: [later] }, result: undefined }))
      assert.deepStrictEqual((yield* eventLogStore.read("0", 10)).map((e) => e.event), [copied, { type: "rental_price", row: later }])
    })))
})
