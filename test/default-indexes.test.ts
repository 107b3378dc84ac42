import { assert, describe, layer } from "@effect/vitest"
import { Auth, DefaultIndexes, FormatImport, IndexIngest, marketLayer, type Principal } from "@gpu-market/core"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Effect, Layer, TestClock } from "effect"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SKYPILOT_CLOUDS } from "./support/formats"
import { http } from "./support/market"

/**
 * Default indices: a market imported from the real SkyPilot catalogs (test/fixtures/real) gets
 * per-GPU indices and a reference price over its own offers, which answer once a day is
 * complete; a market whose operator defined an index gets none.
 */

const REAL = join(import.meta.dirname, "fixtures/real/skypilot")
const IMPORTED_AT = Date.UTC(2026, 6, 1, 6)
const reader: Principal = {
  id: "reader" as Principal["id"], name: "reader", rate_limit_per_minute: 100_000, indices: "all", legacy_custom_index: false, procurement: false,
  grants: { gpu_rental_indexes: { history: { _tag: "unrestricted" } }, gpu_rental_prices: { history: { _tag: "unrestricted" } } }
}

const importAll = Effect.gen(function* () {
  const imports = yield* FormatImport
  for (const cloud of SKYPILOT_CLOUDS) {
    yield* imports.skypilot(readFileSync(join(REAL, `${cloud}-vms.csv`), "utf8"), { vendor: cloud })
  }
})

const market = (label: string) => Layer.effectDiscard(Effect.gen(function* () {
  yield* TestClock.setTime(IMPORTED_AT)
  yield* (yield* Auth).issue(reader, "reader")
})).pipe(
  Layer.provideMerge(marketLayer),
  Layer.provideMerge(SqliteStorage.layer({ filename: join(mkdtempSync(join(tmpdir(), `gpu-market-${label}-`)), "market.db") }))
)

describe("default indices of an imported market", () => {
  layer(market("default-indexes"), { timeout: "120 seconds" })((it) => {
    it.effect("the real catalogs get per-GPU indices and a reference price that answer the next day; the operator's definitions win", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(IMPORTED_AT)
        yield* importAll
        const metadata = yield* http("/api/v2/gpu/rental/indexes/metadata", { token: "reader" })
        assert.strictEqual(metadata.status, 200, metadata.text)
        const ids: Array<string> = metadata.body.data.indices.map((i: any) => i.id)
        assert.include(ids, "auto-gpu-h100-sxm-global-ondemand-daily")
        assert.include(ids, "auto-gpu-reference-price-daily")
        assert.isTrue(ids.some((id) => id.endsWith("-spot-daily")), "spot indices where two vendors offer spot")
        assert.isTrue(ids.some((id) => id.includes("-region-")), "regional indices where two vendors share a region")
        assert.isTrue(ids.every((id) => id.startsWith("auto-")))
        // Every index defined has a slice of at least two vendors: the H100 SXM one lists several.
        const h100 = metadata.body.data.indices.find((i: any) => i.id === "auto-gpu-h100-sxm-global-ondemand-daily")
        assert.strictEqual(h100.contract_type, "ondemand")
        assert.strictEqual(h100.region_group, "global")

        // The import day is complete at midnight: its values answer, the reference price among them.
        yield* TestClock.setTime(Date.UTC(2026, 6, 2, 0, 1))
        for (const id of ["auto-gpu-h100-sxm-global-ondemand-daily", "auto-gpu-reference-price-daily"]) {
          const latest = yield* http(`/api/v2/gpu/rental/indexes/latest?id=${id}`, { token: "reader" })
          assert.strictEqual(latest.status, 200, latest.text)
          assert.strictEqual(latest.body.data.length, 1, id)
          assert.strictEqual(latest.body.data[0].timestamp, "2026-07-01", id)
          assert.isAbove(latest.body.data[0].value, 0, id)
        }
        // The H100 index is the vendor-weighted median of what /latest lists: within the listed range.
        const offers = yield* http("/api/v2/gpu/rental/prices/summary?gpu_canonical_name=h100-sxm&contract_type=ondemand", { token: "reader" })
        const index = (yield* http("/api/v2/gpu/rental/indexes/latest?id=auto-gpu-h100-sxm-global-ondemand-daily", { token: "reader" })).body.data[0].value
        assert.isAtLeast(index, offers.body.data[0].price_min)
        assert.isAtMost(index, offers.body.data[0].price_max)

        // Importing again defines nothing new; once the operator defines an index, defaults are left alone.
        const defaults = yield* DefaultIndexes
        assert.deepStrictEqual(yield* defaults.ensure(), { defined: 0, weights: 0 })
        const definition = metadata.body.data.indices.find((i: any) => i.id === "auto-gpu-h100-sxm-global-ondemand-daily")
        yield* (yield* IndexIngest).define([{ ...definition, id: "operator-h100", gpu_model: "h100-sxm", inputs: { kind: "rental", starts_at: "2026-07-01", gpus: ["h100-sxm"], contract_types: ["ondemand"], regions: null, vendors: null } }])
        yield* Effect.flatMap(FormatImport, (i) => i.skypilot(readFileSync(join(REAL, "lambda-vms.csv"), "utf8"), { vendor: "lambda-two" }))
        const after = yield* http("/api/v2/gpu/rental/indexes/metadata", { token: "reader" })
        assert.strictEqual(after.body.data.indices.length, ids.length + 1, "no default added for the new vendor's offers")
      }))
  })
})
