import { assert, type Vitest } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type { HardwarePrice, MarketEvent, RentalPrice } from "@gpu-market/core"
import { EventLogStore, HardwarePriceStore, IndexStore, type LoggedEvent, putVersions, rentalPriceKeys, RentalPriceStore, type Storage } from "@gpu-market/core/storage"
import { namespace } from "./namespace.js"

/**
 * The change feed's log, as every backend keeps it: each write that reports rows logs their
 * events in its own atomic step, in order, with positions that resume exactly after an event;
 * a refused write logs nothing. Tests share the store, so each reads only what it wrote after
 * the head it read first (the suite's tests run one at a time).
 */

/** Everything logged after `from`, read in pages of `page`, and the position after it. */
const readAll = (from: string, page = 2) =>
  Effect.gen(function* () {
    const log = yield* EventLogStore
    const out: Array<LoggedEvent> = []
    let position = from
    for (;;) {
      const found = yield* log.read(position, page)
      if (found.length === 0) return { events: out, position }
      for (const e of found) {
        assert.isFalse(log.positions.covers(position, e), `${e.id} is after ${position}`)
        position = log.positions.advance(position, e)
        assert.isTrue(log.positions.covers(position, e))
        out.push(e)
      }
    }
  })

export const eventLogConformance = (
  it: Vitest.MethodsNonLive<Storage>,
  rows: {
    readonly rental: (vendor: string, sku: string, day: number, price: number) => RentalPrice
    readonly hardware: (listing: string, day: number) => HardwarePrice
  }
) => {
  it.effect("event log: a versioned write logs each new row and each withdrawal, as stored, in order; a refused one nothing", () =>
    Effect.gen(function* () {
      const log = yield* EventLogStore
      const store = yield* RentalPriceStore
      const vendor = namespace("ev")
      const start = yield* log.head
      assert.strictEqual(log.positions.parse(start), start)
      assert.isUndefined(log.positions.parse("not a position\n"))

      const a1 = rows.rental(vendor, "a", 1, 2), b1 = rows.rental(vendor, "b", 1, 3)
      yield* putVersions(store.transact, rentalPriceKeys, [a1, b1])
      // A price change of a (its row closes, a new one opens), then b withdrawn.
      const a2 = rows.rental(vendor, "a", 2, 2.5)
      yield* store.transact([{ base: a1.base_product_key, at: a2.valid_from }], () =>
        Either.right({ changes: { close: [{ key: a1.product_key, valid_to: a2.valid_from }], open: [a2] }, result: undefined }))
      yield* store.transact([{ base: b1.base_product_key, at: a2.valid_from }], () =>
        Either.right({ changes: { close: [{ key: b1.product_key, valid_to: a2.valid_from }], open: [] }, result: undefined }))
      const refused = yield* Effect.either(store.transact([{ base: a2.base_product_key, at: a2.valid_from }], () => Either.left("refused")))
      assert.deepStrictEqual(refused, Either.left("refused"))

      const { events, position } = yield* readAll(start)
      const expected: Array<MarketEvent> = [
        { type: "rental_price", row: a1 }, { type: "rental_price", row: b1 }, { type: "rental_price", row: a2 },
        { type: "rental_price_withdrawal", row: { ...b1, valid_to: a2.valid_from } }
      ]
      assert.deepStrictEqual(events.map((e) => e.event), expected)
      assert.strictEqual(yield* log.head, position)
      // Resuming after any event reads exactly the ones after it.
      for (let i = 0; i < events.length; i++) {
        const after = events.slice(0, i + 1).reduce((p, e) => log.positions.advance(p, e), start)
        assert.deepStrictEqual((yield* log.read(after, 100)).map((e) => e.event), expected.slice(i + 1))
      }
    }))

  it.effect("event log: hardware observations and index values are logged by the writes that store them", () =>
    Effect.gen(function* () {
      const log = yield* EventLogStore
      const hardware = yield* HardwarePriceStore
      const indexes = yield* IndexStore
      const ns = namespace("evh")
      const start = yield* log.head
      const observed = [rows.hardware(`${ns}-1`, 3), rows.hardware(`${ns}-2`, 3)]
      yield* hardware.put(observed)
      const value = { id: `${ns}-idx`, type: "daily" as const, timestamp: "2026-01-05", value: 2.5, p5: null, p95: null }
      yield* indexes.apply({ clear: [], values: [value], cursors: [] })
      // Writes that report nothing log nothing.
      yield* hardware.put([])
      yield* indexes.apply({ clear: [], values: [], cursors: [] })
      const { events } = yield* readAll(start)
      // Each type's events in the order written. Across types a backend may order events of one
      // moment either way (Redis keeps a stream per type, its ids from the clock).
      const ofType = (type: string) => events.filter((e) => e.event.type === type).map((e) => e.event)
      assert.strictEqual(events.length, 3)
      assert.deepStrictEqual(ofType("hardware_observation"), observed.map((row) => ({ type: "hardware_observation" as const, row })))
      assert.deepStrictEqual(ofType("index_value"), [{ type: "index_value", row: value }])
    }))

  it.effect("event log: follow answers at once what was written after a position, as read does", () =>
    Effect.gen(function* () {
      const log = yield* EventLogStore
      const store = yield* RentalPriceStore
      const vendor = namespace("evf")
      const start = yield* log.head
      const written = [rows.rental(vendor, "a", 1, 2), rows.rental(vendor, "b", 1, 3)]
      yield* putVersions(store.transact, rentalPriceKeys, written)
      const followed = yield* log.follow(start, 10)
      assert.deepStrictEqual(followed.map((e) => e.event), written.map((row): MarketEvent => ({ type: "rental_price", row })))
      assert.deepStrictEqual(followed, yield* log.read(start, 10))
    }))
}
