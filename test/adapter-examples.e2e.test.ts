import { assert, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { readdirSync } from "node:fs"
import { tmpdir } from "node:os"
import { resolve } from "node:path"
import { promisify } from "node:util"
import { startUntil } from "./support/process"

const ROOT = resolve(import.meta.dirname, "..")
const TSX = resolve(ROOT, "node_modules/.bin/tsx")
/** The temp dirs an example made, by prefix: a new one left behind means it did not clean up. */
const tempDirs = (prefix: string) => readdirSync(tmpdir()).filter((d) => d.startsWith(prefix))
/** Runs an example and gives its stdout; asynchronously, so the test worker stays responsive meanwhile. */
const run = async (file: string, timeout = 90_000) => (await promisify(execFile)(TSX, [file], { cwd: ROOT, encoding: "utf8", timeout })).stdout

describe("adapter examples run as documented", () => {
  it("examples/direct.ts: typed query, every page, a problem", { timeout: 120_000 }, async () => {
    const out = await run("examples/direct.ts")
    assert.match(out, /^nebius us-east 2\.95$/m)
    assert.match(out, /^6 rows in all pages$/m)
    assert.match(out, /^400 missing_anchor: /m)
  })

  it("examples/memory.ts: core alone, Promise API then Effect services", { timeout: 120_000 }, async () => {
    const out = await run("examples/memory.ts")
    assert.match(out, /^lambda 2\.49$/m)
    assert.match(out, /^400 missing_anchor$/m)
    assert.match(out, /^Effect: coreweave 3\.29$/m)
  })

  it("examples/feed.ts: follows price changes in-process, then over HTTP from the id it stopped at; the temp dir is removed", { timeout: 120_000 }, async () => {
    const before = tempDirs("gpu-market-feed-example-").length
    const out = await run("examples/feed.ts")
    assert.match(out, /^in-process: lambda (above|at) 2 USD$/m)
    assert.match(out, /^over HTTP: rental_price, after the in-process one$/m)
    assert.strictEqual(tempDirs("gpu-market-feed-example-").length, before)
  })

  it("examples/sqlite.ts: a second market reads what the first wrote to the file; the temp dir is removed", { timeout: 120_000 }, async () => {
    const before = tempDirs("gpu-market-example-sqlite-")
    assert.match(await run("examples/sqlite.ts"), /^reopened: 1 row, lambda 2\.49$/m)
    assert.deepStrictEqual(tempDirs("gpu-market-example-sqlite-").filter((d) => !before.includes(d)), [])
  })

  it("examples/demo.ts: seeds a small demo market and reads it with demo-all; the temp dir is removed", { timeout: 180_000 }, async () => {
    const before = tempDirs("gpu-market-example-demo-")
    const out = await run("examples/demo.ts", 150_000)
    assert.match(out, /^seeded 15 days through \d{4}-\d{2}-\d{2}; tokens demo-all, demo-current, demo-rental$/m)
    const rows = out.split("\n").filter((l) => / h100-/.test(l))
    assert.strictEqual(rows.length, 3, out)
    const prices = rows.map((l) => Number(l.split(" ").at(-1)))
    assert.deepStrictEqual(prices, [...prices].sort((a, b) => a - b), "cheapest first")
    assert.deepStrictEqual(tempDirs("gpu-market-example-demo-").filter((d) => !before.includes(d)), [])
  })

  it("examples/worker.ts: answers from a pool of two workers", { timeout: 120_000 }, async () => {
    assert.match(await run("examples/worker.ts"), /^6 rows from 2 workers; cheapest nebius$/m)
  })

  it("examples/fetch-handler.ts: Request → Response under /market, and the client through it", { timeout: 120_000 }, async () => {
    const out = await run("examples/fetch-handler.ts")
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
