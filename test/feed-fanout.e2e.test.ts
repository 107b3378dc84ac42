import { assert, describe, it } from "@effect/vitest"
import { createMarket, type FeedMessage, MAX_LAG, type PrincipalInput, type RentalPriceObservationInput } from "@gpu-market/core"
import { nodeHandler } from "@gpu-market/http-adapter"
import { createClient } from "@gpu-market/client"
import { sqlite } from "@gpu-market/storage-sqlite"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readFileSync } from "node:fs"
import { createServer, get, type IncomingMessage, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { freePort, startUntil, until } from "./support/process"

/**
 * The change feed's fan-out over real sockets: a burst to many subscribers of the standalone
 * server (read by a process of their own) reaches each exactly once while the server's memory
 * stays bounded and plain requests keep being answered; a subscriber that stops reading its
 * socket is dropped as a slow consumer with an id from which the rest arrives exactly once.
 * Bounds here are far from what this machine measures (BENCHMARKS.md (n) holds the figures), so
 * a loaded machine does not fail them; what they catch is memory that grows with the subscribers'
 * backlog, and requests held until a fan-out ends.
 */

const ROOT = resolve(import.meta.dirname, "..")
const BIN = join(ROOT, "node_modules/.bin/gpu-market")
const TSX = join(ROOT, "node_modules/.bin/tsx")

const principal = (id: string): PrincipalInput => ({
  id, name: id, grants: { gpu_rental_prices: { history: { _tag: "unrestricted" } } }, indices: "all", legacy_custom_index: false,
  procurement: false, rate_limit_per_minute: 10_000_000
})

const rental = (sku: string): RentalPriceObservationInput => ({
  vendor: "v-fanout", vendor_gpu_name: "H100 SXM", vendor_sku: sku, region: "us-east", gpu_canonical_name: "h100-sxm",
  gpu_manufacturer: "nvidia", gpu_model: "H100", gpu_count: 1, gpu_memory_gb: 80, contract_type: "ondemand",
  price_usd_per_gpu_hour: 2.5, raw_price: 2.5, raw_price_unit: "usd_per_instance_hour", extracted_at: new Date().toISOString()
})

/** Resident memory of a process in MiB, from /proc. */
const rssMiB = (pid: number) => Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024

const SUBSCRIBERS = 300
const BURST = 1_000
/** The server's RSS growth allowed: 300 subscribers once held each one's backlog, about 700 KB each for this burst. */
const GROWTH_MIB = 150

describe("the change feed's fan-out", () => {
  it("a burst reaches every subscriber of the standalone server exactly once, its memory bounded, /latest answered meanwhile", { timeout: 240_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "gpu-market-fanout-"))
    const db = join(dir, "market.db")
    const market = await createMarket({ storage: sqlite(db) })
    let subscribers: ChildProcess | undefined
    let server: Awaited<ReturnType<typeof startUntil>> | undefined
    try {
      await market.tokens.create(principal("fanout"), "fanout")
      await market.ingest.rental(Array.from({ length: 20 }, (_, i) => rental(`seed${i}`)))
      const port = await freePort()
      server = await startUntil(BIN, ["serve", "--db", db, "--port", String(port)], {
        cwd: dir, env: { ...process.env, NO_COLOR: "1" }, ready: /listening on/, timeoutMs: 60_000
      })
      const pid = server.child.pid!
      const base = `http://127.0.0.1:${port}`
      subscribers = spawn(TSX, ["test/support/feed-subscribers.ts"], {
        cwd: ROOT, detached: true, stdio: ["pipe", "pipe", "pipe"],
        env: { ...process.env, FEED_URL: base, FEED_TOKEN: "fanout", FEED_SUBSCRIBERS: String(SUBSCRIBERS), FEED_EXPECTED: String(BURST) }
      })
      let said = ""
      subscribers.stdout!.on("data", (c: Buffer) => (said += c.toString()))
      subscribers.stderr!.on("data", (c: Buffer) => (said += c.toString()))
      await until("every subscriber's stream open", () => /^(open|fail)/m.test(said), 120_000)
      assert.match(said, /^open$/m)

      const before = rssMiB(pid)
      let peak = before
      const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(pid))), 50)
      const delivered = () => /^(done|fail)/m.test(said)
      // Plain page requests one after another for as long as the burst fans out.
      let answered = 0
      const latest = (async () => {
        while (!delivered()) {
          // A connection each: this process, busy writing, could leave a kept-alive one idle past the server's keep-alive timeout.
          const status = await new Promise<number | undefined>((ok, fail) =>
            get(`${base}/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm&page_size=10`, { agent: false, headers: { authorization: "Bearer fanout" } },
              (res) => res.resume().on("end", () => ok(res.statusCode))).on("error", fail))
          assert.strictEqual(status, 200)
          if (!delivered()) answered++
        }
      })()
      // Its failure is the test's, once the burst is delivered.
      latest.catch(() => {})
      try {
        for (let i = 0; i < BURST; i += 500) await market.ingest.rental(Array.from({ length: 500 }, (_, k) => rental(`burst${i + k}`)))
        await until("every event at every subscriber", delivered, 180_000).catch((e: Error) => {
          throw new Error(`${e.message}; the subscribers said: ${said.slice(-500)}`)
        })
        await latest
      } finally {
        clearInterval(sampler)
      }
      // Each subscriber had each event once, in order (the subscribers' process checks the ids).
      assert.match(said, /^done \d+$/m)
      assert.isAtMost(peak - before, GROWTH_MIB, `RSS ${before.toFixed(0)} → ${peak.toFixed(0)} MiB`)
      assert.isAtLeast(answered, 5)
    } finally {
      if (subscribers !== undefined && subscribers.exitCode === null) {
        const exited = new Promise((r) => subscribers!.once("exit", r))
        try { process.kill(-subscribers.pid!, "SIGKILL") } catch { /* gone already */ }
        await exited
      }
      await server?.stop()
      await market.close()
    }
  })

  it("drops a subscriber that stops reading its socket with an id from which the rest arrives exactly once", { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "gpu-market-slow-"))
    const db = join(dir, "market.db")
    const market = await createMarket({ storage: sqlite(db) })
    const handler = await nodeHandler(market, { baseUrl: "http://127.0.0.1" })
    // The slow subscriber's connection is a Unix socket: its kernel buffers (about 200 KB) fill
    // as soon as it stops reading, where TCP's on loopback grow to megabytes.
    const onSocket: Server = createServer(handler.handle)
    const onTcp: Server = createServer(handler.handle)
    const socketPath = join(dir, "feed.sock")
    try {
      await new Promise<void>((r) => onSocket.listen(socketPath, r))
      await new Promise<void>((r) => onTcp.listen(0, "127.0.0.1", r))
      const client = createClient({ baseUrl: `http://127.0.0.1:${(onTcp.address() as AddressInfo).port}`, token: "slow" })
      await market.tokens.create(principal("slow"), "slow")
      const total = MAX_LAG + 1000
      const skuOf = (m: FeedMessage) => (m.type === "rental_price" ? m.row.vendor_sku ?? "" : "")

      // The slow one: opens, reads what the server sends first, then stops reading.
      const slow = await new Promise<IncomingMessage>((ok, fail) =>
        get({ socketPath, path: "/v2/events", headers: { authorization: "Bearer slow" } }, ok).on("error", fail))
      assert.strictEqual(slow.statusCode, 200)
      let slowText = ""
      slow.setEncoding("utf8")
      await new Promise<void>((r) => slow.once("data", (c: string) => {
        slowText += c
        r()
      }))
      slow.pause()

      // One that keeps up from the start of the log (resuming by itself if dropped) tells when the
      // server has read every event.
      let kept = 0
      const keeping = (async () => {
        for await (const m of client.events({}, { lastEventId: "0" })) if (skuOf(m).startsWith("p") && ++kept === total) return
      })()
      for (let i = 0; i < total; i += 500) {
        await market.ingest.rental(Array.from({ length: Math.min(500, total - i) }, (_, k) => rental(`p${i + k}`)))
      }
      await keeping

      // Read again: what the server had written, then `dropped`, then the end.
      const ended = new Promise<void>((r) => slow.once("end", () => r()))
      slow.on("data", (c: string) => (slowText += c))
      slow.resume()
      await ended
      const frames = slowText.split("\n\n").filter((f) => f.startsWith("id: "))
      const messages = frames.map((f) => JSON.parse(/^data: (.*)$/m.exec(f)![1]!) as FeedMessage)
      const dropped = messages.at(-1)!
      assert.deepStrictEqual(dropped.type === "dropped" && dropped.reason, "slow_consumer")
      const before = messages.filter((m) => skuOf(m).startsWith("p")).map(skuOf)
      assert.isBelow(before.length, total - MAX_LAG)

      // Resumed from the drop's id: the rest, each once.
      const rest: Array<string> = []
      for await (const m of client.events({}, { lastEventId: dropped.id })) {
        if (skuOf(m).startsWith("p")) rest.push(skuOf(m))
        if (skuOf(m) === `p${total - 1}`) break
      }
      const all = [...before, ...rest]
      assert.strictEqual(all.length, total)
      assert.strictEqual(new Set(all).size, total)
    } finally {
      for (const s of [onSocket, onTcp]) {
        s.closeAllConnections()
        s.close()
      }
      await market.close()
    }
  })
})
