import { assert, describe, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { resolve } from "node:path"
import { startUntil } from "./support/process"

const ROOT = resolve(import.meta.dirname, "..")
const TSX = resolve(ROOT, "node_modules/.bin/tsx")
const run = (file: string) => execFileSync(TSX, [file], { cwd: ROOT, encoding: "utf8", timeout: 90_000 })

describe("adapter examples run as documented", () => {
  it("examples/direct.ts: typed query, every page, a problem", { timeout: 120_000 }, () => {
    const out = run("examples/direct.ts")
    assert.match(out, /^nebius us-east 2\.95$/m)
    assert.match(out, /^6 rows in all pages$/m)
    assert.match(out, /^400 missing_anchor: /m)
  })

  it("examples/worker.ts: answers from a pool of two workers", { timeout: 120_000 }, () => {
    assert.match(run("examples/worker.ts"), /^6 rows from 2 workers; cheapest nebius$/m)
  })

  it("examples/fetch-handler.ts: Request → Response under /market, and the client through it", { timeout: 120_000 }, () => {
    const out = run("examples/fetch-handler.ts")
    assert.match(out, /^200: 2 rows; next page at https:\/\/app\.example\/market\/v2\/gpu\/rental\/prices\/latest$/m)
    assert.match(out, /^client followed meta\.next\.url through 6 rows$/m)
  })

  it("examples/http-server.ts: its own route and the market under /market, meta.next.url through the host", { timeout: 120_000 }, async () => {
    const server = await startUntil(TSX, ["examples/http-server.ts"], {
      cwd: ROOT, env: { ...process.env, PORT: "0" }, ready: /^curl .*$/m, timeoutMs: 90_000
    })
    try {
      const origin = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(server.output())![1]!
      const token = /Bearer ([^']+)'/.exec(server.output())![1]!
      assert.strictEqual(await (await fetch(`${origin}/health`)).text(), "ok\n")
      const headers = { authorization: `Bearer ${token}` }
      const first = await (await fetch(`${origin}/market/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm&page_size=4`, { headers })).json() as any
      assert.strictEqual(first.data.length, 4)
      const second = await (await fetch(first.meta.next.url, { headers })).json() as any
      assert.strictEqual(second.data.length, 2)
      assert.isFalse(second.meta.has_more)
    } finally {
      await server.stop()
    }
  })
})
