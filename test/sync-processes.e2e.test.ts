import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort, type Started, startUntil, until } from "./support/process"
import { type RedisServer, startRedis, uniquePrefix } from "./support/redis"

/**
 * Several `gpu-market sync` loops on one market run one sync between them: real processes on one
 * SQLite file and on one Redis, a local HTTP server (127.0.0.1) serving the real lambda catalog
 * (test/fixtures/real/SOURCES.md). While both run, only the lease's holder fetches; after a
 * `kill -9` of the holder, the other takes the lease and syncs within the lease time.
 */

const BIN = join(import.meta.dirname, "../node_modules/.bin/gpu-market")
const CATALOG = readFileSync(join(import.meta.dirname, "fixtures/real/skypilot/lambda-vms.csv"))
const LEASE_MS = 1_000
const dir = mkdtempSync(join(tmpdir(), "gpu-market-sync-processes-"))

let requests = 0
const server = http.createServer((req, res) => {
  if (req.url === "/gone.csv") {
    res.writeHead(404)
    return res.end()
  }
  requests++
  if (req.headers["if-none-match"] === "\"v1\"") {
    res.writeHead(304, { etag: "\"v1\"" })
    return res.end()
  }
  res.writeHead(200, { "content-type": "text/plain", etag: "\"v1\"", "content-length": CATALOG.length })
  res.end(CATALOG)
})
let sources = ""
let redis: RedisServer | undefined
const started: Array<Started> = []

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  sources = join(dir, "sources.yaml")
  // Every second: the holder fetches (a 304 after the first) about once a second.
  writeFileSync(sources, [
    "sources:",
    "  - name: lambda",
    `    url: http://127.0.0.1:${(server.address() as AddressInfo).port}/vms.csv`,
    "    format: skypilot",
    "    vendor: lambda",
    "    snapshot: true",
    "    interval: 1 second",
    ""
  ].join("\n"))
  redis = await startRedis()
}, 60_000)

afterAll(async () => {
  await Promise.all(started.map((s) => s.stop()))
  await redis?.stop()
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))
}, 60_000)

const startSync = async (env: Readonly<Record<string, string>>) => {
  const s = await startUntil(BIN, ["sync", "--sources", sources, "--lease-ms", String(LEASE_MS)], {
    cwd: dir, env: { ...process.env, NO_COLOR: "1", GPU_MARKET_LOG_FORMAT: "json", GPU_MARKET_SYNC: "", GPU_MARKET_REDIS_URL: "", ...env },
    ready: /sync: 1 sources/, timeoutMs: 30_000
  })
  started.push(s)
  return s
}

const attempts = (s: Started) => (s.output().match(/"msg":"sync lambda: attempt/g) ?? []).length
const holds = (s: Started) => /holds the sync lease/.test(s.output())

const oneSyncer = async (env: Readonly<Record<string, string>>) => {
  const first = await startSync(env)
  await until("the first process holding the lease and syncing", () => holds(first) && attempts(first) >= 1, 30_000)
  const second = await startSync(env)
  // Both run for several lease renewals and intervals: only the holder fetches.
  const seen = requests
  await until("three more syncs", () => requests >= seen + 3, 30_000)
  assert.strictEqual(attempts(second), 0, second.output())
  assert.isFalse(holds(second))

  // kill -9 of the holder: the other takes over within the lease time and syncs.
  process.kill(-first.child.pid!, "SIGKILL")
  const killed = Date.now()
  await until("the survivor holding the lease", () => holds(second), 10 * LEASE_MS)
  const tookOver = Date.now() - killed
  await until("the survivor syncing", () => attempts(second) >= 1, 10_000)
  // The lease expires LEASE_MS after its last renewal; the survivor looks every third of it.
  assert.isBelow(tookOver, LEASE_MS + LEASE_MS / 3 + 2_000)
  await second.stop()
}

describe("one sync loop per market", () => {
  it("serve --sync runs the loop beside the server, which stays ready and counts its syncs on /metrics", { timeout: 60_000 }, async () => {
    const port = await freePort()
    const db = join(dir, "served.db")
    // Beside lambda, a source that is never found: attempted and never a success, it is stale.
    const withBroken = join(dir, "served-sources.yaml")
    writeFileSync(withBroken, readFileSync(sources, "utf8") + [
      "  - name: broken",
      `    url: http://127.0.0.1:${(server.address() as AddressInfo).port}/gone.csv`,
      "    format: skypilot",
      "    vendor: lambda",
      "    attempts: 1",
      ""
    ].join("\n"))
    const served = await startUntil(BIN, ["serve", "--sync", withBroken, "--metrics", "--port", String(port), "--db", db], {
      cwd: dir, env: { ...process.env, NO_COLOR: "1", GPU_MARKET_LOG_FORMAT: "json", GPU_MARKET_SYNC: "", GPU_MARKET_REDIS_URL: "" },
      ready: /listening/, timeoutMs: 30_000
    })
    started.push(served)
    await until("the server's sync importing the catalog", () => /"msg":"sync lambda: imported: read 629: stored 306/.test(served.output()), 30_000)
    await until("the broken source refused", () => /"msg":"sync broken: refused: HTTP 404"/.test(served.output()), 30_000)
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`)
    assert.strictEqual(ready.status, 200)
    const body = await ready.json() as { status: string; sync: { stale: Array<string>; oldest_success_at: string } }
    assert.deepStrictEqual({ ...body, sync: { ...body.sync, oldest_success_at: "" } }, { status: "ready", sync: { stale: ["broken"], oldest_success_at: "" } })
    const success = Date.parse(body.sync.oldest_success_at)
    assert.isAtMost(success, Date.now())
    assert.isAbove(success, Date.now() - 60_000)
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
    assert.match(metrics, /^gpu_market_sync_runs_total\{source="lambda",outcome="imported"\} 1$/m)
    assert.match(metrics, /^gpu_market_sync_rows_total\{source="lambda",result="stored"\} 306$/m)
    assert.match(metrics, /^gpu_market_sync_last_success_timestamp_seconds\{source="lambda"\} \d+(\.\d+)?$/m)
    assert.match(metrics, /^gpu_market_sync_next_run_timestamp_seconds\{source="lambda"\} \d+(\.\d+)?$/m)
    await served.stop()
  })

  it("on one SQLite file: one process fetches; after kill -9 of it the other takes over", { timeout: 60_000 }, () =>
    oneSyncer({ GPU_MARKET_DB: join(dir, "market.db") }))

  it("on one Redis: one process fetches; after kill -9 of it the other takes over", { timeout: 60_000 }, () =>
    oneSyncer({ GPU_MARKET_REDIS_URL: redis!.url, GPU_MARKET_REDIS_PREFIX: uniquePrefix("sync") }))
})
