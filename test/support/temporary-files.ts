import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/**
 * Global setup of the suite (vitest.config.ts): every temporary file of the run (the tests' SQLite
 * files, the servers', CLI processes' and Chromium's, SQLite's own sort runs) goes under one
 * directory, `$TMPDIR` for the workers and every process they start, removed when the run ends.
 * Each test makes its stores in a fresh directory and none removes it: a whole run left about
 * 700 directories and several GB in /tmp, every run.
 *
 * It runs once per test project (vitest.config.ts), all in one process: the first makes the
 * directory and the others use it, so paths stay short (a Unix socket path, Chromium's, has a
 * limit of about 100 bytes that three nested directories passed).
 */
const MADE = "GPU_MARKET_TEST_TMPDIR"

export default function setup(): () => void {
  if (process.env[MADE] !== undefined) return () => {}
  const previous = process.env.TMPDIR
  const run = mkdtempSync(join(tmpdir(), "gpu-market-test-"))
  process.env.TMPDIR = run
  process.env[MADE] = run
  return () => {
    if (previous === undefined) delete process.env.TMPDIR
    else process.env.TMPDIR = previous
    delete process.env[MADE]
    rmSync(run, { recursive: true, force: true })
  }
}
