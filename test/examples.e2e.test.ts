import { assert, describe, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { resolve } from "node:path"

const ROOT = resolve(import.meta.dirname, "..")
const run = (file: string) => execFileSync(resolve(ROOT, "node_modules/.bin/tsx"), [file], { cwd: ROOT, encoding: "utf8", timeout: 60_000 })

describe("examples run as documented", () => {
  it("examples/embedded.ts ingests, queries latest and history", { timeout: 90_000 }, () => {
    const out = run("examples/embedded.ts")
    assert.match(out, /^lambda\s+2\.49 USD\/GPU-h since 2026-06-02T00:00:00\.000000Z$/m)
    assert.match(out, /^coreweave\s+3\.29 USD\/GPU-h/m)
    assert.isBelow(out.indexOf("lambda"), out.indexOf("coreweave"), "cheapest first")
    assert.match(out, /^3 price changes between/m)
  })

  it("examples/export.ts exports rows, a Parquet file and an estimate, then follows the feed from the watermark", { timeout: 90_000 }, () => {
    const out = run("examples/export.ts")
    assert.match(out, /^watermark 6$/m)
    assert.match(out, /^6 rows; csv \d+ B, jsonl \d+ B, parquet ~\d+ B$/m)
    assert.strictEqual(out.match(/^(lambda|coreweave|nebius) (us-east|eu-west) \d/gm)?.length, 6)
    assert.match(out, /^wrote rental-history\.parquet$/m)
    // The feed from the watermark starts with the write after the export, not with the exported rows.
    assert.match(out, /^then lambda 2\.49$/m)
  })
})
