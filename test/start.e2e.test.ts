import { assert, describe, it } from "@effect/vitest"
import { existsSync, mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { freePort, startUntil } from "./support/process"
import { AGAINST_NPM_START, DOCS, readmeBlocks, shown } from "./support/readme"
import { execFileSync } from "node:child_process"
import * as Demo from "@gpu-market/demo"

const ROOT = resolve(import.meta.dirname, "..")

const start = async (db: string, env: Record<string, string> = {}) => {
  const port = await freePort()
  const server = await startUntil("npm", ["start", "--silent"], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), GPU_MARKET_DB: db, ...env },
    ready: /listening on http:\/\/127\.0\.0\.1:\d+/,
    timeoutMs: 120_000
  })
  const get = async (path: string, token: string) => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { authorization: `Bearer ${token}` } })
    return { status: res.status, headers: res.headers, body: await res.json() as any }
  }
  return { server, get, port }
}

describe("npm start", () => {
  it("creates, seeds and serves the demo market on an empty directory, then reuses it", { timeout: 240_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "gpu-market-start-"))
    const db = join(dir, "nested", "market.db")
    const today = new Date().toISOString().slice(0, 10)

    const first = await start(db)
    let rows: Array<any>
    try {
      assert.match(first.server.output(), /Seeded the demo market from \d{4}-\d{2}-\d{2} to \d{4}-\d{2}-\d{2}/)
      for (const token of ["demo-all", "demo-current", "demo-rental"]) assert.include(first.server.output(), token)
      assert.isTrue(existsSync(db))
      const latest = await first.get("/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm&page_size=1000", "demo-all")
      assert.strictEqual(latest.status, 200)
      assert.strictEqual(latest.headers.get("content-type"), "application/json")
      assert.isNotNull(latest.headers.get("x-ratelimit-limit"))
      rows = latest.body.data
      assert.isAbove(rows.length, 10)
      assert.isTrue(rows.every((r) => r.gpu_canonical_name === "h100-sxm" && r.valid_to === null))
      // The market ends today; its prices change through today, or through the anchor day once
      // the catalogs' prices hold (they do not move after it).
      assert.include(first.server.output(), ` to ${today} `)
      const anchor = new Date(Demo.DEMO_ANCHOR_DAY * 86_400_000).toISOString().slice(0, 10)
      const lastChange = today < anchor ? today : anchor
      const since = new Date(Date.parse(lastChange) - 29 * 86_400_000).toISOString().slice(0, 10)
      const history = await first.get(`/v2/gpu/rental/prices/history?start=${since}&page_size=1000&sort_by=valid_from`, "demo-all")
      assert.strictEqual(history.status, 200)
      assert.strictEqual(history.body.data[0].valid_from.slice(0, 10), lastChange)
      const next = await first.get(history.body.meta.next.path + "?page_token=" + history.body.meta.next.query_params.page_token, "demo-all")
      assert.strictEqual(next.status, 200)
      // The demo tokens' entitlements are as documented.
      assert.strictEqual((await first.get("/v2/gpu/rental/prices/history", "demo-current")).status, 403)
      const rental = await first.get("/v2/gpu/rental/prices/history?start=2000-01-01", "demo-rental")
      assert.isTrue(rental.body.meta.window.clamped)
      const floor = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate()) - 60 * 86_400_000)
      assert.strictEqual(rental.body.meta.window.history_starts_at, floor.toISOString().slice(0, 10))
      // Every SkyPilot cloud of the shipped catalogs is a vendor.
      const meta = await first.get("/v2/gpu/rental/prices/metadata", "demo-all")
      assert.sameMembers([...new Set(meta.body.data.gpus.flatMap((g: any) => g.vendors))], [...Demo.DEMO_VENDORS])
      // Every type's demo is seeded, ends today, and is served.
      const hardware = await first.get("/v2/gpu/hardware/prices/latest?page_size=1000&sort_by=observed_date&sort_order=desc", "demo-all")
      assert.strictEqual(hardware.status, 200)
      assert.strictEqual(hardware.body.data[0].observed_date, today)
      const deals = await first.get("/v2/gpu/rental/transactions/aggregated/history?page_size=1000", "demo-all")
      assert.strictEqual(deals.status, 200)
      assert.isAbove(deals.body.data.length, 100)
      assert.isTrue(deals.body.data.some((r: any) => r.is_rolling))
      const llm = await first.get("/v2/llm/token/prices/latest?page_size=1000", "demo-all")
      assert.isAbove(llm.body.data.length, 20)
      assert.isTrue(llm.body.data.some((r: any) => r.is_price_outlier))
      const daily = await first.get("/v2/gpu/rental/indexes/latest?id=gpu-h100-sxm-na-daily", "demo-all")
      assert.strictEqual(daily.status, 200)
      assert.strictEqual(daily.body.data[0].timestamp, new Date(Date.now() - 86_400_000).toISOString().slice(0, 10))
      const reference = await first.get("/v2/gpu/rental/indexes/latest?id=gpu-reference-price-intraday", "demo-all")
      assert.strictEqual(reference.status, 200)
      assert.strictEqual(reference.body.data.length, 1)
      const legacy = await first.get("/v1/info-index/available", "demo-all")
      assert.strictEqual(legacy.status, 200)
      assert.strictEqual(legacy.body.total, legacy.body.data.length)
      // demo-rental reads rental prices and a subset of indices only.
      for (const path of ["/v2/gpu/hardware/prices/latest", "/v2/gpu/rental/transactions/aggregated/history", "/v2/llm/token/prices/latest"]) {
        assert.strictEqual((await first.get(path, "demo-rental")).status, 403, path)
      }
      const held = await first.get("/v2/gpu/rental/indexes/metadata", "demo-rental")
      assert.deepStrictEqual(held.body.data.indices.map((i: any) => i.id).sort(), ["gpu-a100-sxm-80gb-na-daily", "gpu-h100-sxm-na-daily"])
      assert.strictEqual((await first.get("/v2/gpu/rental/indexes/latest?id=gpu-b200-na-daily", "demo-rental")).status, 404)
      // The examples of the README and of docs/ against the demo server run as written, and answer with data.
      const examples = [undefined, ...DOCS].flatMap((file) =>
        readmeBlocks(file).filter((b) => b.marker === AGAINST_NPM_START).map((b) => ({ ...b, file: file === undefined ? "README.md" : shown(file) })))
      assert.isAtLeast(examples.length, 2)
      const outs = examples.map((b) => {
        const script = b.body.join("\n").replaceAll("http://127.0.0.1:8787", `http://127.0.0.1:${first.port}`)
        const out = JSON.parse(execFileSync("bash", ["-euo", "pipefail", "-c", script], { encoding: "utf8", timeout: 30_000 }))
        assert.isAbove(out.data?.length ?? 0, 0, `${b.file} line ${b.line}: ${JSON.stringify(out).slice(0, 300)}`)
        return out
      })
      // The first one shows real offers: each row a catalog row at its published price (from the anchor day on).
      const cheapest = outs[0]
      if (today >= anchor) {
        // As the README says below the block.
        assert.deepStrictEqual([cheapest.data[0].vendor, cheapest.data[0].price_usd_per_gpu_hour], ["primeintellect", 1.2075])
        for (const r of cheapest.data) {
          const product = Demo.demoProducts().find((p) => p.observation.vendor === r.vendor && p.observation.vendor_sku === r.vendor_sku &&
            p.observation.vendor_region === r.vendor_region && p.observation.contract_type === r.contract_type)
          assert.strictEqual(r.raw_price, product?.published, JSON.stringify(r))
        }
      }
    } finally {
      await first.server.stop()
    }

    const second = await start(db)
    try {
      assert.match(second.server.output(), /Demo market is current through/)
      const again = await second.get("/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm&page_size=1000", "demo-all")
      assert.deepStrictEqual(again.body.data, rows)
    } finally {
      await second.server.stop()
    }

    const plain = await start(db, { GPU_MARKET_DEMO: "0" })
    try {
      const r = await plain.get("/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm", "demo-all")
      assert.strictEqual(r.status, 401)
      assert.strictEqual(r.body.code, "unauthenticated")
    } finally {
      await plain.server.stop()
    }
  })
})
