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
})
