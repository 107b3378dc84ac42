import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { execFile } from "node:child_process"
import { copyFileSync, mkdtempSync, openSync, closeSync, rmSync, statSync, writeSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort, type Started, startUntil, until } from "./support/process"

/**
 * A damaged SQLite file is named, not served silently: a server's check at start logs it and makes
 * `/readyz` answer 503, and `gpu-market check` lists its problems and exits 1. A sound file, a
 * large one too, passes both.
 */

const ROOT = join(import.meta.dirname, "..")
const BIN = join(ROOT, "node_modules/.bin/gpu-market")
const dir = mkdtempSync(join(tmpdir(), "gpu-market-integrity-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const ENV = { ...process.env, NO_COLOR: "1", GPU_MARKET_REDIS_URL: "", GPU_MARKET_LOG_FORMAT: "json" }

const cli = (...args: ReadonlyArray<string>) =>
  new Promise<{ readonly code: number; readonly stdout: string; readonly stderr: string }>((resolve) =>
    execFile(BIN, args, { cwd: dir, env: ENV, maxBuffer: 16 << 20 }, (e, stdout, stderr) =>
      resolve({ code: e === null ? 0 : typeof e.code === "number" ? e.code : 1, stdout, stderr })))

const sound = join(dir, "sound.db")
const corrupt = join(dir, "corrupt.db")
const large = join(dir, "large.db")

beforeAll(async () => {
  const seeded = await cli("seed", "--size", "small", "--db", sound)
  assert.strictEqual(seeded.code, 0, seeded.stderr)
  // 1 MiB of zeros in the middle of the seeded market, on page boundaries.
  copyFileSync(sound, corrupt)
  const size = statSync(corrupt).size
  const fd = openSync(corrupt, "r+")
  try {
    writeSync(fd, Buffer.alloc(1 << 20), 0, 1 << 20, Math.floor(size / 2 / 4096) * 4096)
  } finally {
    closeSync(fd)
  }
  // The market with 300 MB more in a table of its own: a check that reads every page takes a while.
  copyFileSync(sound, large)
  const db = new Database(large)
  try {
    db.exec("CREATE TABLE ballast (b BLOB)")
    const insert = db.prepare("INSERT INTO ballast VALUES (randomblob(65536))")
    db.transaction(() => {
      for (let i = 0; i < 4_800; i++) insert.run()
    })()
  } finally {
    db.close()
  }
}, 180_000)

/** A server on `file` until `body` ends, stopped whatever happens. */
const serving = async (file: string, body: (base: string, server: Started) => Promise<void>) => {
  const port = await freePort()
  const server = await startUntil(BIN, ["serve", "--db", file, "--port", String(port)], { cwd: dir, env: ENV, ready: /gpu-market listening/, timeoutMs: 30_000 })
  try {
    await body(`http://127.0.0.1:${port}`, server)
  } finally {
    await server.stop()
  }
}

describe("a corrupt SQLite file", () => {
  it("gpu-market check lists its problems and exits 1; a sound file, large or not, is sound", { timeout: 120_000 }, async () => {
    const damaged = await cli("check", "--db", corrupt)
    assert.strictEqual(damaged.code, 1, damaged.stdout + damaged.stderr)
    assert.match(damaged.stdout, new RegExp(`^${corrupt}: corrupt \\(PRAGMA quick_check, in [\\d.]+ m?s\\):\\n  \\S`))
    assert.match(damaged.stdout, /btreeInitPage|Page \d+|Tree \d+/)
    assert.match(damaged.stderr, new RegExp(`^gpu-market check: ${corrupt} is corrupt \\(.*problem.* listed above\\); restore it from a backup`))
    for (const file of [sound, large]) {
      const checked = await cli("check", "--db", file)
      assert.strictEqual(checked.code, 0, checked.stdout + checked.stderr)
      assert.match(checked.stdout, new RegExp(`^${file}: sound \\(PRAGMA quick_check found no problem, in [\\d.]+ m?s\\)\\n$`))
    }
  })

  it("a server's check at start logs it and /readyz answers 503 naming it", { timeout: 120_000 }, () =>
    serving(corrupt, async (base, server) => {
      await until("the check's log line", () => server.output().includes(`"msg":"the database file is corrupt; /readyz answers 503 until it is replaced"`), 60_000)
      const ready = await fetch(`${base}/readyz`)
      assert.strictEqual(ready.status, 503)
      const problem = await ready.json() as { readonly code: string; readonly detail: string }
      assert.strictEqual(problem.code, "storage_unavailable")
      assert.match(problem.detail, /^storage is unavailable \(the database file is corrupt: .+\); not ready$/)
      assert.strictEqual((await fetch(`${base}/healthz`)).status, 200)
    }))

  it("a server on a sound large file logs that the check passed, and stays ready", { timeout: 120_000 }, () =>
    serving(large, async (base, server) => {
      await until("the check's log line", () => server.output().includes(`"msg":"integrity check passed"`), 60_000)
      assert.notInclude(server.output(), "corrupt")
      assert.strictEqual((await fetch(`${base}/readyz`)).status, 200)
    }))
})
