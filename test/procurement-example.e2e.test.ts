import { assert, describe, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { resolve } from "node:path"

const ROOT = resolve(import.meta.dirname, "..")

describe("examples/procurement.ts runs as documented", () => {
  it("discovers, asks for offers, provisions once per key, waits, lists and deletes", { timeout: 90_000 }, () => {
    const out = execFileSync(resolve(ROOT, "node_modules/.bin/tsx"), ["examples/procurement.ts"], { cwd: ROOT, encoding: "utf8", timeout: 60_000 })
    assert.match(out, /^discover: h100-sxm from coreweave, lambda, nebius in eu-north, us-east, from 2\.49 USD\/GPU-h$/m)
    assert.match(out, /^offer: lambda 2×8 h100-sxm at 2\.49 USD\/GPU-h/m)
    assert.isBelow(out.indexOf("offer: lambda"), out.indexOf("offer: coreweave"), "cheapest first")
    assert.match(out, /^procure: 201 prc_\S+ is provisioning$/m)
    assert.match(out, /^procure again with the same key: 200, same procurement: true$/m)
    assert.match(out, /^procurement fulfilled with 2 resources$/m)
    assert.strictEqual(out.match(/^resource: res_\S+ running 8× h100-sxm in us-east$/gm)?.length, 2)
    assert.strictEqual(out.match(/^delete: 200 res_\S+ is deleted$/gm)?.length, 2)
  })
})
