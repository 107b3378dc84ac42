import { assert, describe, it } from "@effect/vitest"
import { createHash } from "node:crypto"
import { execFile } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parquetReadObjects } from "hyparquet"
import { compressors } from "hyparquet-compressors"
import { beforeAll } from "vitest"

/**
 * `gpu-market export`, run as a user runs it on a seeded SQLite file: one Parquet file per day
 * and a manifest whose rows, bytes, SHA-256 and keys are the files', the estimate's row count,
 * and a refused query that exits non-zero leaving no manifest.
 */

const ROOT = join(import.meta.dirname, "..")
const BIN = join(ROOT, "node_modules/.bin/gpu-market")
const dir = mkdtempSync(join(tmpdir(), "gpu-market-export-cli-"))
const DB = join(dir, "market.db")

interface Run { readonly code: number; readonly stdout: string; readonly stderr: string }

const run = (...args: ReadonlyArray<string>): Promise<Run> =>
  new Promise((resolve) => {
    execFile(BIN, [...args], { cwd: dir, env: { ...process.env, NO_COLOR: "1", GPU_MARKET_REDIS_URL: "" }, timeout: 120_000 },
      (error, stdout, stderr) => resolve({ code: error === null ? 0 : Number(error.code ?? 1), stdout, stderr }))
  })

interface Manifest {
  readonly watermark: string
  readonly schema_version: number
  readonly query: Record<string, string>
  readonly files: ReadonlyArray<{ name: string; rows: number; bytes: number; sha256: string; first_key: string | null; last_key: string | null }>
}

const today = new Date().toISOString().slice(0, 10)
const weekAgo = new Date(Date.now() - 7 * 86_400_000).toISOString().slice(0, 10)

describe("gpu-market export", () => {
  beforeAll(async () => {
    const seeded = await run("seed", "--size", "small", "--db", DB)
    assert.strictEqual(seeded.code, 0, seeded.stderr)
  }, 180_000)

  it("writes one Parquet file per day and a manifest that lists each whole", async () => {
    const out = join(dir, "daily")
    const exported = await run("export", "--type", "rental", "--start", weekAgo, "--end", today, "--split", "day", "--out", out, "--db", DB)
    assert.strictEqual(exported.code, 0, exported.stderr)
    const manifest = JSON.parse(readFileSync(join(out, "manifest.json"), "utf8")) as Manifest
    assert.strictEqual(manifest.schema_version, 1)
    assert.match(manifest.watermark, /^\d+$/)
    assert.strictEqual(manifest.query.start, weekAgo)
    assert.isAbove(manifest.files.length, 1)
    assert.deepStrictEqual(readdirSync(out).sort(), [...manifest.files.map((f) => f.name), "manifest.json"].sort())
    for (const file of manifest.files) {
      assert.match(file.name, /^rental-\d{4}-\d{2}-\d{2}\.parquet$/)
      const bytes = readFileSync(join(out, file.name))
      assert.strictEqual(file.bytes, bytes.length)
      assert.strictEqual(file.sha256, createHash("sha256").update(bytes).digest("hex"))
      const rows = await parquetReadObjects({ file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer, compressors })
      assert.strictEqual(rows.length, file.rows)
      assert.strictEqual(rows[0]!.product_key, file.first_key)
      assert.strictEqual(rows[rows.length - 1]!.product_key, file.last_key)
      // Each file holds its own day's rows only.
      const day = file.name.slice("rental-".length, "rental-".length + 10)
      for (const r of rows) assert.strictEqual((r.valid_from as Date).toISOString().slice(0, 10), day)
    }
    const estimate = await run("export", "--type", "rental", "--start", weekAgo, "--end", today, "--estimate", "--db", DB)
    assert.strictEqual(estimate.code, 0, estimate.stderr)
    assert.strictEqual((JSON.parse(estimate.stdout) as { rows: number }).rows, manifest.files.reduce((n, f) => n + f.rows, 0))
  }, 180_000)

  it("exits non-zero on a query the API refuses, leaving no manifest", async () => {
    const out = join(dir, "refused")
    const refused = await run("export", "--type", "rental", "--latest", "--format", "csv", "--out", out, "--db", DB)
    assert.notStrictEqual(refused.code, 0)
    assert.include(refused.stderr, "anchor")
    assert.isFalse(existsSync(join(out, "manifest.json")))
  }, 120_000)
})
