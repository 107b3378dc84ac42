import { afterAll, assert, describe, it } from "@effect/vitest"
import { type PagePlan, RentalPriceStore } from "@gpu-market/core/storage"
import { layer } from "@gpu-market/storage-sqlite"
import Database from "better-sqlite3"
import { Context, Effect, Layer } from "effect"
import { execFile, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/**
 * `gpu-market import` of a file large against the store holds the rental table's serving indexes
 * back and builds them when it ends (a bulk load): a reader in another process meanwhile gets the
 * answers it got before the import or the ones it gets after, nothing else, and the file ends with
 * every index a fresh one has.
 */

const ROOT = join(import.meta.dirname, "..")
const BIN = join(ROOT, "node_modules/.bin/gpu-market")
const dir = mkdtempSync(join(tmpdir(), "gpu-market-bulk-import-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const observation = (i: number, tag: string) => JSON.stringify({
  vendor: `v-${i % 7}`, vendor_gpu_name: "H100 SXM", vendor_sku: `${tag}-${i}`, region: i % 2 === 0 ? "us-east" : "eu-west",
  gpu_canonical_name: "h100-sxm", gpu_manufacturer: "nvidia", gpu_model: "H100", gpu_count: 1, gpu_memory_gb: 80,
  contract_type: "ondemand", price_usd_per_gpu_hour: 1 + (i % 97) / 10, raw_price: 1 + (i % 97) / 10, raw_price_unit: "usd_per_instance_hour",
  extracted_at: "2026-01-05T06:00:00Z"
})
const writeFile = (name: string, rows: number, tag: string) => {
  const file = join(dir, name)
  writeFileSync(file, Array.from({ length: rows }, (_, i) => observation(i, tag)).join("\n") + "\n")
  return file
}

const importFile = (file: string, db: string) => spawn(BIN, ["import", file, "--type", "rental", "--db", db], {
  cwd: dir, env: { ...process.env, NO_COLOR: "1", GPU_MARKET_REDIS_URL: "" }, stdio: ["ignore", "pipe", "pipe"]
})
const exited = (child: ReturnType<typeof importFile>) =>
  new Promise<{ readonly code: number | null; readonly output: string }>((resolve) => {
    let output = ""
    child.stdout.on("data", (d: Buffer) => (output += d.toString()))
    child.stderr.on("data", (d: Buffer) => (output += d.toString()))
    child.on("exit", (code) => resolve({ code, output }))
  })
const run = (file: string, db: string) =>
  new Promise<void>((resolve, reject) =>
    execFile(BIN, ["import", file, "--type", "rental", "--db", db], { cwd: dir, env: { ...process.env, GPU_MARKET_REDIS_URL: "" } }, (e) => (e === null ? resolve() : reject(e))))

/** `/latest` pages a server reads, by each anchor, sorted by fields with indexes of their own, and the count of current rows. */
const PLANS: ReadonlyArray<PagePlan> = (["vendor", "gpu_canonical_name"] as const).flatMap((anchor) =>
  (["price_usd_per_gpu_hour", "region", "valid_from"] as const).map((by): PagePlan => ({
    scope: { _tag: "latest" }, predicates: [{ op: "in", field: anchor, values: [anchor === "vendor" ? "v-3" : "h100-sxm"] }],
    sort: { by, order: "desc" }, after: undefined, limit: 40
  })))

const indexNames = (db: Database.Database) =>
  db.prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'rental_prices' ORDER BY name").pluck().all() as Array<string>

describe("gpu-market import of a large file on SQLite (a bulk load)", () => {
  it("a reader in another process gets the answers of before the import or of after it, and the indexes are all back at the end", { timeout: 180_000 }, async () => {
    const db = join(dir, "market.db")
    // A store with some products, then a file five times as large: a bulk load.
    await run(writeFile("first.jsonl", 4_000, "first"), db)
    const big = writeFile("big.jsonl", 20_000, "big")
    const fresh = join(dir, "fresh.db")
    await run(writeFile("one.jsonl", 1, "one"), fresh)
    const expectedIndexes = indexNames(new Database(fresh, { readonly: true }))

    await Effect.runPromise(Effect.scoped(Effect.gen(function* () {
      const store = Context.get(yield* Layer.build(layer({ filename: db })), RentalPriceStore)
      const raw = new Database(db, { readonly: true })
      // Each page is one statement, so one snapshot: pages apart may straddle the import's commit.
      const read = Effect.forEach(PLANS, (plan) => Effect.map(store.page(plan), (page) => JSON.stringify(page)))
      const before = yield* read
      const child = importFile(big, db)
      const done = exited(child)
      let running = true
      void done.then(() => (running = false))
      const seen: Array<{ readonly answers: ReadonlyArray<string>; readonly indexes: number }> = []
      while (running) {
        seen.push({ answers: yield* read, indexes: indexNames(raw).length })
        yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
      }
      const { code, output } = yield* Effect.promise(() => done)
      assert.strictEqual(code, 0, output)
      assert.match(output, /^read 20000: stored 20000, unchanged 0, duplicate 0, skipped 0, quarantined 0, rejected 0$/m)
      const after = yield* read
      for (let i = 0; i < PLANS.length; i++) {
        assert.notStrictEqual(after[i], before[i])
        const others = seen.filter((s) => s.answers[i] !== before[i] && s.answers[i] !== after[i])
        assert.strictEqual(others.length, 0, `page ${i}: ${others.length} of ${seen.length} reads matched neither`)
      }
      // The reads did run while the indexes were held back.
      assert.isAbove(seen.filter((s) => s.indexes < expectedIndexes.length).length, 0)
      assert.deepStrictEqual(indexNames(raw), expectedIndexes)
      raw.close()
    })))
  })
})
