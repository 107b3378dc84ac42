import { assert, beforeAll, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort, startUntil } from "./support/process"

/**
 * The `gpu-market` bin, run as a user runs it (a child process on a temp SQLite file), for what
 * only its process shows: the version it was installed at, help off a terminal, one-line errors
 * and the exit status they set, and a server that sees a token revoked by another process. What
 * each command does is tested in process: test/cli.test.ts.
 */

const ROOT = join(import.meta.dirname, "..")
const BIN = join(ROOT, "node_modules/.bin/gpu-market")
const dir = mkdtempSync(join(tmpdir(), "gpu-market-cli-"))
const DB = join(dir, "market.db")

interface Run { readonly code: number; readonly stdout: string; readonly stderr: string }

/** Runs the bin with `args`, and `env` over this process's environment. */
const runWith = (env: Readonly<Record<string, string>>, ...args: ReadonlyArray<string>): Promise<Run> =>
  new Promise((resolve) => {
    execFile(BIN, [...args], { cwd: dir, env: { ...process.env, NO_COLOR: "1", GPU_MARKET_REDIS_URL: "", ...env }, timeout: 120_000 },
      (error, stdout, stderr) => resolve({ code: error === null ? 0 : Number(error.code ?? 1), stdout, stderr }))
  })

const run = (...args: ReadonlyArray<string>): Promise<Run> => runWith({}, ...args)

describe("gpu-market --version", () => {
  it("reports the version the package was installed at", async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, "packages/cli/package.json"), "utf8")) as { version: string }
    const { code, stdout } = await run("--version")
    assert.strictEqual(code, 0)
    assert.strictEqual(stdout.trim(), version)
  })
})

describe("gpu-market CLI", () => {
  beforeAll(async () => {
    // The market the tests share, made before they run commands on it at once.
    const made = await run("tokens", "list", "--db", DB)
    assert.strictEqual(made.code, 0, made.stderr)
  }, 60_000)

  it("--help and -h print the command's help (packages/cli/test/help.test.ts checks every command's), without colour off a terminal", async () => {
    const commands = [["--help"], ["tokens", "create", "-h"], ["tokens"], ["serve", "--help"]]
    // NO_COLOR empty counts as unset: only the pipe keeps the colour out.
    const helps = await Promise.all(commands.map((command) => runWith({ NO_COLOR: "" }, ...command)))
    const usages = ["gpu-market <command> [options]", "gpu-market tokens create [options]", "gpu-market tokens <command>", "gpu-market serve [options]"]
    for (const [i, usage] of usages.entries()) {
      const r = helps[i]!
      assert.strictEqual(r.code, 0, r.stderr)
      assert.strictEqual(r.stderr, "")
      assert.include(r.stdout, `\nUsage: ${usage}\n`)
      assert.match(r.stdout, /\nExamples?:\n {2}gpu-market /)
      assert.notInclude(r.stdout, "\u001b[")
    }
  }, 120_000)

  it("an error is one line on stderr, without a stack: exit 2 for a command line that cannot work, 1 otherwise; --verbose adds the cause", async () => {
    const oneLine = (r: Run, code: number, line: RegExp) => {
      assert.strictEqual(r.code, code, r.stderr)
      assert.strictEqual(r.stdout, "")
      assert.match(r.stderr, /^[^\n]+\n$/, r.stderr)
      assert.match(r.stderr.trim(), line)
      assert.notMatch(r.stderr, /ERROR|_tag|\{|file:\/\/|\bat \S+ \(/)
    }
    const compute = ["indexes", "compute", "--from", "yesterday", "--to", "today", "--db", DB]
    const [size, name, command, from, cacheSize, verbose] = await Promise.all([
      run("seed", "--size", "tiny", "--db", DB),
      run("tokens", "create", "--db", DB),
      run("frob"),
      run(...compute),
      runWith({ GPU_MARKET_PAGE_CACHE_MB: "lots" }, "serve", "--db", DB),
      run(...compute, "--verbose")
    ])
    oneLine(size!, 2, /^gpu-market seed: .*small, medium, large.*\(see gpu-market seed --help\)$/)
    oneLine(name!, 2, /^gpu-market tokens create: .*'--name'/)
    oneLine(command!, 2, /^gpu-market: .*'serve', 'seed', 'import', 'export', 'sync', 'tokens', 'indexes'/)
    oneLine(from!, 2, /^gpu-market indexes compute: --from: expected an ISO 8601 datetime or a YYYY-MM-DD date \(see gpu-market indexes compute --help\)$/)
    oneLine(cacheSize!, 1, /^gpu-market serve: GPU_MARKET_PAGE_CACHE_MB is "lots"; expected a whole number of MB/)
    assert.strictEqual(verbose!.code, 2)
    const [first, ...cause] = verbose!.stderr.trim().split("\n")
    assert.strictEqual(`${first}\n`, from!.stderr)
    assert.isAbove(cause.length, 0)
    assert.include(cause.join("\n"), "UsageError")
  }, 120_000)

  it("an import that rejected rows ends with exit 1, the rows it could store stored", async () => {
    const file = join(dir, "one-bad-row.jsonl")
    writeFileSync(file, "{ not json\n")
    const r = await run("import", file, "--type", "rental", "--db", DB)
    assert.strictEqual(r.code, 1, r.stderr)
    assert.include(r.stdout.split("\n"), "read 1: stored 0, unchanged 0, duplicate 0, skipped 0, quarantined 0, rejected 1 (not_json 1)")
    assert.match(r.stderr, /^gpu-market import: 1 rejected /m)
  }, 60_000)

  it("a running server refuses a token revoked by another process at its next request", async () => {
    const created = await run("tokens", "create", "--name", "Cached", "--id", "cached", "--grant", "rental", "--rate-limit", "50", "--db", DB)
    assert.strictEqual(created.code, 0, created.stderr)
    const secret = created.stdout.trim()
    const port = await freePort()
    const server = await startUntil(BIN, ["serve", "--db", DB, "--port", String(port)], {
      cwd: dir, env: { ...process.env, NO_COLOR: "1", GPU_MARKET_RATE_LIMITS: "" }, ready: /listening on/, timeoutMs: 60_000
    })
    try {
      // SQLite serves with rate limits in the process by default, and says so.
      assert.match(server.output(), /\(storage: .*market\.db; rate limits: process\)/)
      const get = () => fetch(`http://127.0.0.1:${port}/v2/gpu/rental/prices/metadata`, { headers: { authorization: `Bearer ${secret}` } })
      for (let i = 0; i < 3; i++) assert.strictEqual((await get()).status, 200)
      const revoked = await run("tokens", "revoke", "cached", "--db", DB)
      assert.strictEqual(revoked.code, 0, revoked.stderr)
      const refused = await get()
      assert.strictEqual(refused.status, 401)
      assert.strictEqual(((await refused.json()) as any).code, "unauthenticated")
    } finally {
      await server.stop()
    }
  }, 120_000)
})
