import { afterAll, assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { execFile, execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, openSync, closeSync, rmSync, writeFileSync, writeSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort, type Started, startUntil } from "./support/process"

/**
 * SQLite on a full disk, on a real full volume: a small tmpfs this test mounts (it needs root;
 * elsewhere it is skipped, saying why). An import the disk stops says the disk is full and what it
 * stored; a server starts on the full disk and serves reads, and a write fails naming the disk;
 * once there is room, the next open builds the indexes the import held back.
 */

const ROOT = join(import.meta.dirname, "..")
const BIN = join(ROOT, "node_modules/.bin/gpu-market")
const dir = mkdtempSync(join(tmpdir(), "gpu-market-disk-full-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const ENV = { ...process.env, NO_COLOR: "1", GPU_MARKET_REDIS_URL: "", GPU_MARKET_LOG_FORMAT: "json" }

/** Mounts a tmpfs of `mb` MB at `at`; the error's text where this machine does not let us. */
const mount = (at: string, mb: number): string | undefined => {
  mkdirSync(at, { recursive: true })
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${mb}m`, "tmpfs", at], { stdio: "pipe" })
    return undefined
  } catch (e) {
    return ((e as { stderr?: Buffer }).stderr?.toString() ?? String(e)).trim() || String(e)
  }
}
const unmount = (at: string) => execFileSync("umount", ["-l", at], { stdio: "pipe" })

// Whether mounting works here, tried once on a tiny tmpfs.
const probe = join(dir, "probe")
const refused = mount(probe, 1)
if (refused === undefined) unmount(probe)

/** Runs the CLI to its end: its exit code and what it printed on each stream. */
const cli = (...args: ReadonlyArray<string>) =>
  new Promise<{ readonly code: number; readonly stdout: string; readonly stderr: string }>((resolve) =>
    execFile(BIN, args, { cwd: dir, env: ENV, maxBuffer: 16 << 20 }, (e, stdout, stderr) =>
      resolve({ code: e === null ? 0 : typeof e.code === "number" ? e.code : 1, stdout, stderr })))

const observation = (i: number) => JSON.stringify({
  vendor: `v-${i % 7}`, vendor_gpu_name: "H100 SXM", vendor_sku: `sku-${i}`, region: i % 2 === 0 ? "us-east" : "eu-west",
  gpu_canonical_name: "h100-sxm", gpu_manufacturer: "nvidia", gpu_model: "H100", gpu_count: 1, gpu_memory_gb: 80,
  contract_type: "ondemand", price_usd_per_gpu_hour: 1 + (i % 97) / 10, raw_price: 1 + (i % 97) / 10, raw_price_unit: "usd_per_instance_hour",
  extracted_at: "2026-01-05T06:00:00Z"
})

/** Fills what is left of the volume at `at` with zeros, to the last byte it takes. */
const fillUp = (file: string) => {
  const fd = openSync(file, "w")
  const block = Buffer.alloc(1 << 16)
  try {
    for (let size = block.length; size > 0;) {
      try {
        writeSync(fd, block, 0, size)
      } catch {
        size >>= 1
      }
    }
  } finally {
    closeSync(fd)
  }
}

const rentalIndexes = (file: string) => {
  const db = new Database(file, { readonly: true })
  try {
    return db.prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'rental_prices' ORDER BY name").pluck().all() as Array<string>
  } finally {
    db.close()
  }
}

describe("SQLite on a full disk", () => {
  it.skipIf(refused !== undefined)(
    `an import says the disk is full and what it stored; a server starts and serves reads; the held-back indexes are built once there is room${refused === undefined ? "" : ` (skipped: mounting a tmpfs is not permitted here: ${refused})`}`,
    { timeout: 180_000 },
    async () => {
      const volume = join(dir, "volume")
      assert.isUndefined(mount(volume, 40))
      let server: Started | undefined
      try {
        const db = join(volume, "market.db")
        const created = await cli("tokens", "create", "--name", "reader", "--grant", "rental:all", "--db", db)
        assert.strictEqual(created.code, 0, created.stderr)
        const token = created.stdout.trim().split("\n").at(-1)!.trim()
        // 15 MB left: the import's rows fit, the indexes it held back do not.
        writeFileSync(join(volume, "filler"), Buffer.alloc(25 << 20))
        const rows = join(dir, "rows.jsonl")
        writeFileSync(rows, Array.from({ length: 10_000 }, (_, i) => observation(i)).join("\n") + "\n")

        const imported = await cli("import", rows, "--type", "rental", "--db", db)
        assert.strictEqual(imported.code, 1, imported.stdout + imported.stderr)
        const line = imported.stderr.trim().split("\n").at(-1)!
        assert.match(line, /^gpu-market import: storage is unavailable \([a-z_.]+: the disk is full\)/)
        // It says how many rows it stored, and the file holds that many.
        const said = Number(/stored (\d+)/.exec(line)?.[1])
        const stored = new Database(db, { readonly: true })
        try {
          assert.strictEqual(stored.prepare("SELECT count(*) FROM rental_prices").pluck().get(), said, line)
        } finally {
          stored.close()
        }
        assert.isAbove(said, 0, line)
        const held = rentalIndexes(db)
        assert.notInclude(held, "rental_prices_current_vendor_price_usd_per_gpu_hour", "the import held the serving indexes back")

        // Not a byte left: the server still starts, and serves reads.
        fillUp(join(volume, "filler-rest"))
        const port = await freePort()
        server = await startUntil(BIN, ["serve", "--db", db, "--port", String(port)], { cwd: dir, env: ENV, ready: /gpu-market listening/, timeoutMs: 30_000 })
        const base = `http://127.0.0.1:${port}`
        assert.strictEqual((await fetch(`${base}/readyz`)).status, 200)
        const page = await fetch(`${base}/v2/gpu/rental/prices/latest?vendor=v-3&sort_by=price_usd_per_gpu_hour&page_size=5`, { headers: { authorization: `Bearer ${token}` } })
        assert.strictEqual(page.status, 200)
        assert.lengthOf(((await page.json()) as { readonly data: ReadonlyArray<unknown> }).data, 5)
        assert.match(server.output(), /"level":"warn","msg":"rental price indexes held back by an import are not built again yet \([a-z_.]+: the disk is full\)/)
        // A write that needs room fails, naming the disk (a small one may still fit in WAL pages already written).
        const more = join(dir, "more.jsonl")
        writeFileSync(more, Array.from({ length: 3_000 }, (_, i) => observation(20_000 + i)).join("\n") + "\n")
        const write = await cli("import", more, "--type", "rental", "--db", db)
        assert.strictEqual(write.code, 1, write.stdout + write.stderr)
        assert.match(write.stderr, /^gpu-market import: storage is unavailable \([a-z_.]+: the disk is full\)/m)
        await server.stop()
        server = undefined

        // Room again: the next open builds every index a fresh file has, and the planner reads through them.
        rmSync(join(volume, "filler"))
        rmSync(join(volume, "filler-rest"))
        assert.strictEqual((await cli("tokens", "list", "--db", db)).code, 0)
        const fresh = join(dir, "fresh.db")
        assert.strictEqual((await cli("tokens", "list", "--db", fresh)).code, 0)
        assert.deepStrictEqual(rentalIndexes(db), rentalIndexes(fresh))
        const file = new Database(db, { readonly: true })
        try {
          const plan = file.prepare("EXPLAIN QUERY PLAN SELECT * FROM rental_prices WHERE vendor = 'v-3' AND valid_to IS NULL ORDER BY price_usd_per_gpu_hour DESC LIMIT 5")
            .all() as Array<{ readonly detail: string }>
          assert.include(plan.map((p) => p.detail).join("\n"), "rental_prices_current_vendor_price_usd_per_gpu_hour")
          assert.strictEqual(file.prepare("SELECT count(*) FROM settings WHERE name = 'rental_prices.held_indexes'").pluck().get(), 0)
        } finally {
          file.close()
        }
      } finally {
        await server?.stop()
        unmount(volume)
      }
    }
  )
})
