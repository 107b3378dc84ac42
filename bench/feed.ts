import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import { Agent, createServer, get, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { REPO_ROOT } from "./config"
import { type FeedBurstResults, feedBurstLines, feedBurstMarkdown, lineReader, runFeedBurstBench } from "./feed-burst"
import { median, quantile } from "./stats"

/**
 * (n) Change-feed fan-out: 1,000 subscribers of `GET /v2/events` on one server process, one
 * rental price write in that process, and the time until the last subscriber has the event,
 * from just before the write is called. Subscribers are real sockets, read by this process; the
 * server runs in a child (`FEED_BENCH_ROLE=sut`) over a fresh SQLite file, and writes through
 * a market of its own on the same file, as an app ingesting beside its server does. Baseline,
 * same harness and run: a bare node:http server in a child (`FEED_BENCH_ROLE=bare`) holding the
 * same 1,000 SSE responses, writing one message to each in a loop. `FEED_BENCH_SUBSCRIBERS` sets
 * another count.
 */

export const FEED_SUBSCRIBERS = 1_000
/** The feed's p50 within this multiple of the bare loop's: the library's cost over writing the bytes. */
export const FEED_TARGET_RATIO = 5

export interface FeedSide {
  readonly samples: ReadonlyArray<number>
  readonly p50: number
  readonly p99: number
}
export interface FeedBenchResults {
  readonly subscribers: number
  readonly writes: number
  readonly feed: FeedSide
  readonly bare: FeedSide
  /** 1-minute load averages before each side ran: the machine is shared. */
  readonly load: { readonly bare: number; readonly feed: number }
  /** Memory and requests while a burst fans out (feed-burst.ts). */
  readonly burst: FeedBurstResults
}

/** Epoch milliseconds with sub-millisecond precision, comparable across processes on one machine. */
const now = () => performance.timeOrigin + performance.now()

/** The server side, in a child: serves, and on each `write` line writes once and prints `at <t0>`. */
const serve = async (role: string) => {
  const say = (line: string) => process.stdout.write(`${line}\n`)
  let write: () => Promise<void>
  let listen: (port: number) => Promise<number>
  let closeAll: () => Promise<void>
  if (role === "bare") {
    const responses: Array<ServerResponse> = []
    const server = createServer((req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store" })
      res.write(": bare\n\n")
      responses.push(res)
      req.on("close", () => responses.splice(responses.indexOf(res), 1))
    })
    let n = 0
    write = async () => {
      n++
      const message = `id: ${n}\nevent: rental_price\ndata: {"id":"${n}","type":"rental_price"}\n\n`
      for (const res of responses) res.write(message)
    }
    listen = (port) => new Promise((r) => server.listen(port, "127.0.0.1", () => r((server.address() as AddressInfo).port)))
    closeAll = async () => {
      server.closeAllConnections()
      server.close()
    }
  } else {
    const { createMarket } = await import("@gpu-market/core")
    const { nodeHandler } = await import("@gpu-market/http-adapter")
    const { sqlite } = await import("@gpu-market/storage-sqlite")
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gpu-market-feed-bench-"))
    const file = path.join(dir, "market.db")
    const market = await createMarket({ storage: sqlite(file) })
    await market.tokens.create({
      id: "feed-bench", name: "feed bench", grants: { gpu_rental_prices: { history: { _tag: "unrestricted" } } }, indices: "all",
      legacy_custom_index: false, procurement: false, rate_limit_per_minute: 1_000_000
    }, "feed-bench-token")
    const handler = await nodeHandler(market, { baseUrl: "http://127.0.0.1" })
    const server = createServer(handler.handle)
    let n = 0
    write = async () => {
      n++
      await market.ingest.rental([{
        vendor: "v-bench", vendor_gpu_name: "H100 SXM", vendor_sku: `s${n}`, region: "us-east", gpu_canonical_name: "h100-sxm",
        gpu_manufacturer: "nvidia", gpu_model: "H100", gpu_count: 1, gpu_memory_gb: 80, contract_type: "ondemand",
        price_usd_per_gpu_hour: 2.5, raw_price: 2.5, raw_price_unit: "usd_per_instance_hour", extracted_at: new Date().toISOString()
      }])
    }
    listen = (port) => new Promise((r) => server.listen(port, "127.0.0.1", () => r((server.address() as AddressInfo).port)))
    closeAll = async () => {
      server.closeAllConnections()
      server.close()
      await market.close()
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }
  say(`listening ${await listen(0)}`)
  let buffered = ""
  process.stdin.on("data", (chunk: Buffer) => {
    buffered += chunk.toString()
    let nl: number
    while ((nl = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, nl)
      buffered = buffered.slice(nl + 1)
      if (line === "write") {
        const t0 = now()
        void write().then(() => say(`at ${t0}`))
      }
    }
  })
  process.stdin.on("end", () => void closeAll().then(() => process.exit(0)))
}

/** Runs one side: starts its server, connects the subscribers, and times `writes` writes. */
const measure = async (role: "sut" | "bare", subscribers: number, writes: number): Promise<FeedSide> => {
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", path.join(REPO_ROOT, "bench/feed.ts")], {
    cwd: REPO_ROOT, env: { ...process.env, FEED_BENCH_ROLE: role, }, stdio: ["pipe", "pipe", "inherit"]
  })
  const nextLine = lineReader(child)
  const agent = new Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY })
  try {
    const port = Number((await nextLine()).split(" ")[1])
    // Per write, the time each subscriber got its event.
    const got: Array<Array<number>> = []
    let open = 0
    await new Promise<void>((ready, fail) => {
      for (let i = 0; i < subscribers; i++) {
        const req = get({ host: "127.0.0.1", port, path: "/v2/events", agent, headers: { authorization: "Bearer feed-bench-token" } }, (res) => {
          if (res.statusCode !== 200) return fail(new Error(`subscriber ${i}: ${res.statusCode}`))
          let seen = 0
          let text = ""
          let first = true
          res.on("data", (chunk: Buffer) => {
            const at = now()
            if (first) {
              first = false
              if (++open === subscribers) ready()
            }
            text += chunk.toString()
            let end: number
            while ((end = text.indexOf("\n\n")) >= 0) {
              const block = text.slice(0, end)
              text = text.slice(end + 2)
              if (block.includes("event: rental_price")) (got[seen++] ??= []).push(at)
            }
          })
        })
        req.on("error", fail)
      }
    })
    const latencies: Array<number> = []
    for (let w = 0; w < writes; w++) {
      child.stdin!.write("write\n")
      const t0 = Number((await nextLine()).split(" ")[1])
      const deadline = Date.now() + 10_000
      while ((got[w]?.length ?? 0) < subscribers) {
        if (Date.now() > deadline) throw new Error(`write ${w}: ${got[w]?.length ?? 0} of ${subscribers} subscribers notified`)
        await new Promise((r) => setTimeout(r, 2))
      }
      latencies.push(Math.max(...got[w]!) - t0)
      // Quiet between writes, as between market changes.
      await new Promise((r) => setTimeout(r, 50))
    }
    return { samples: latencies, p50: median(latencies), p99: quantile(latencies, 0.99) }
  } finally {
    agent.destroy()
    child.stdin!.end()
    await new Promise((r) => child.once("exit", r))
  }
}

/** Runs (n): the bare loop first, then the feed, each with its own server process; then the burst. */
export const runFeedBench = async (quick: boolean, log: (line: string) => void): Promise<FeedBenchResults> => {
  const subscribers = Number(process.env.FEED_BENCH_SUBSCRIBERS ?? (quick ? 200 : FEED_SUBSCRIBERS))
  const writes = quick ? 10 : 60
  log(`  (n) bare node:http, ${subscribers} SSE responses ...`)
  const loadBare = os.loadavg()[0]!
  const bare = await measure("bare", subscribers, writes)
  log(`  (n) GET /v2/events on SQLite, ${subscribers} subscribers ...`)
  const loadFeed = os.loadavg()[0]!
  const feed = await measure("sut", subscribers, writes)
  const burst = await runFeedBurstBench(quick, log)
  return { subscribers, writes, feed, bare, load: { bare: loadBare, feed: loadFeed }, burst }
}

const ms = (n: number) => `${n.toFixed(1)} ms`

/** The lines of (n) in the results table: one write's latency, then the burst's. */
export const feedLines = (r: FeedBenchResults) => [feedLine(r), ...feedBurstLines(r.burst)]

const feedLine = (r: FeedBenchResults) => ({
  name: `(n) feed fan-out: one write → ${r.subscribers.toLocaleString("en-US")}th subscriber notified, p50 (p99), vs bare SSE loop`,
  figure: `${ms(r.feed.p50)} (${ms(r.feed.p99)})`,
  baseline: `${ms(r.bare.p50)} (${ms(r.bare.p99)})`,
  ratio: r.feed.p50 / r.bare.p50,
  target: `≤ ${FEED_TARGET_RATIO.toFixed(2)}×`,
  pass: r.feed.p50 / r.bare.p50 <= FEED_TARGET_RATIO
})

/** The section of (n) in BENCHMARKS.md. */
export const feedMarkdown = (r: FeedBenchResults): string => `## (n) Change-feed fan-out

${r.subscribers.toLocaleString("en-US")} subscribers of \`GET /v2/events\` (Server-Sent Events over real sockets, read by the benchmark process) on one server process over a fresh SQLite file; that process writes one new rental price row through a market of its own on the same file, ${r.writes} times, 50 ms apart. Latency: from just before the write is called to the moment the last of the subscribers has the event (the write's own transaction included). The follower of the serving market is woken by the write at once (same process, same file); another process's writes would wait for its next poll (100 ms at most). Baseline, same harness, same run: a bare node:http server in its own process holding the same number of SSE responses and writing one message to each in a loop.

| subject | p50 | p99 | min | max |
| --- | ---: | ---: | ---: | ---: |
| \`GET /v2/events\` on SQLite | ${ms(r.feed.p50)} | ${ms(r.feed.p99)} | ${ms(Math.min(...r.feed.samples))} | ${ms(Math.max(...r.feed.samples))} |
| bare node:http SSE loop | ${ms(r.bare.p50)} | ${ms(r.bare.p99)} | ${ms(Math.min(...r.bare.samples))} | ${ms(Math.max(...r.bare.samples))} |

1-minute load average ${r.load.bare.toFixed(2)} before the baseline ran and ${r.load.feed.toFixed(2)} before the feed did, on 2 cores. Ratio at p50: ${(r.feed.p50 / r.bare.p50).toFixed(2)}×. Target: ≤ ${FEED_TARGET_RATIO.toFixed(2)}× of the bare loop at p50. Each subscriber costs the feed a filter and scrub of its own (entitlements, history floor, query) and a position of its own to resume from; each event's SSE frame is encoded once and its bytes shared.

${feedBurstMarkdown(r.burst)}`

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href
if (isMain) {
  const role = process.env.FEED_BENCH_ROLE
  if (role !== undefined) void serve(role)
  else {
    runFeedBench(process.env.BENCH_QUICK === "1", (line) => console.log(line)).then((r) => {
      for (const line of feedLines(r)) {
        console.log(`${line.name}: ${line.figure}; baseline ${line.baseline}; ${line.ratio.toFixed(2)}×; target ${line.target}: ${line.pass ? "pass" : "FAIL"}`)
      }
    }).catch((e: unknown) => {
      console.error(e)
      process.exitCode = 1
    })
  }
}
