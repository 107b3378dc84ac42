import { afterAll, assert, describe, it } from "@effect/vitest"
import type { RentalPrice } from "@gpu-market/core"
import { rentalRow } from "@gpu-market/core/test"
import { Effect, Either } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { makeClient, makeStores, migrate, type SqliteClient } from "../src/internal"

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
