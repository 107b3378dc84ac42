import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import { Agent, get } from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { setTimeout as sleep } from "node:timers/promises"
import { pathToFileURL } from "node:url"
import { BENCH_TOKEN, POPULAR_GPU, REPO_ROOT } from "./config"
import { startServer } from "./http-bench"
import { median, quantile } from "./stats"

/**
 * (n) burst: 1,000 subscribers of `GET /v2/events` on the standalone server (bench/serve-adapter.ts
 * over a fresh SQLite file), read by a child process of their own, while another process (this
 * one) writes 1,500 new rental rows in three imports of 500. Measured: the server's RSS before the
 * burst, at its peak and 10 s after every stream closed, and the latency of plain `/latest`
 * requests sent every 20 ms by a third process while the events fan out. Every subscriber must
 * get every event exactly once (a `dropped` one resumes from its id, as the HTTP client does:
 * test/support/feed-subscribers.ts).
 * `FEED_BURST_SUBSCRIBERS` sets another count.
 */

export const BURST_SUBSCRIBERS = 1_000
export const BURST_EVENTS = 1_500
/** The server's RSS at the peak of the burst, over its RSS before it. */
export const BURST_GROWTH_TARGET_MIB = 150
/** p99 of `/latest` answered while the burst fans out. */
export const BURST_P99_TARGET_MS = 250

const IMPORTS = 3
const PROBE_EVERY_MS = 20
const AFTER_MS = 10_000
const LATEST = `/v2/gpu/rental/prices/latest?gpu_canonical_name=${POPULAR_GPU}&page_size=100`
const AUTHORIZATION = `Bearer ${BENCH_TOKEN}`

export interface FeedBurstResults {
  readonly subscribers: number
  readonly events: number
  /** Server RSS in MiB: before the first write, the highest sample until the streams closed, 10 s after they closed. */
  readonly rss: { readonly before: number; readonly peak: number; readonly after: number }
  /** From the first write until the last subscriber had every event. */
  readonly fanOutSeconds: number
  /** Subscriptions dropped as slow consumers (each resumed from its id). */
  readonly dropped: number
  /** `/latest` latencies (ms) of requests sent from the first write until the last subscriber had every event, each waited for. */
  readonly latest: { readonly samples: number; readonly p50: number; readonly p99: number; readonly max: number }
  readonly load: number
}

/** Epoch milliseconds with sub-millisecond precision, comparable across processes on one machine. */
const now = () => performance.timeOrigin + performance.now()

/** The lines a child prints, one per call, waiting for the next; after `ms` (when given) it fails naming `what`. */
export const lineReader = (child: ChildProcess) => {
  const lines: Array<string> = []
  const waiters: Array<(line: string) => void> = []
  let out = ""
  child.stdout!.on("data", (c: Buffer) => {
    out += c.toString()
    let nl: number
    while ((nl = out.indexOf("\n")) >= 0) {
      const line = out.slice(0, nl)
      out = out.slice(nl + 1)
      const waiter = waiters.shift()
      if (waiter !== undefined) waiter(line)
      else lines.push(line)
    }
  })
  return (what = "line", ms?: number) => new Promise<string>((resolve, reject) => {
    const line = lines.shift()
    if (line !== undefined) return resolve(line)
    const timer = ms === undefined ? undefined : setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms)
    waiters.push((l) => {
      clearTimeout(timer)
      resolve(l)
    })
  })
}

/**
 * The prober's process: a `/latest` request every 20 ms, without waiting for the one before; when
 * stdin ends, stops sending, waits for every answer still due, and prints `[sentAt, ms]` pairs
 * (ms -1: failed, or not a page).
 */
const probe = (base: string) => {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 })
  const samples: Array<readonly [number, number]> = []
  let due = 0
  const timer = setInterval(() => {
    const sent = now()
    due++
    get(`${base}${LATEST}`, { agent, headers: { authorization: AUTHORIZATION } }, (res) => {
      res.resume()
      res.on("end", () => {
        // A request not answered with a page counts as never answered.
        samples.push([sent, res.statusCode === 200 ? now() - sent : Number.POSITIVE_INFINITY])
        due--
      })
    }).on("error", () => {
      samples.push([sent, Number.POSITIVE_INFINITY])
      due--
    })
  }, PROBE_EVERY_MS)
  process.stdin.on("end", () => {
    clearInterval(timer)
    const report = () => {
      if (due > 0) return void setTimeout(report, 20)
      process.stdout.write(`${JSON.stringify(samples.map(([sent, ms]) => [sent, Number.isFinite(ms) ? ms : -1]))}\n`)
      agent.destroy()
      process.exit(0)
    }
    report()
  }).resume()
}

/** A script of this repository in a process of its own, talking over stdin and stdout. */
const child = (script: string, env: Record<string, string>) =>
  spawn(process.execPath, ["--import", "tsx", path.join(REPO_ROOT, script)], {
    cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ["pipe", "pipe", "inherit"]
  })

const stop = async (c: ChildProcess) => {
  if (c.exitCode !== null || c.signalCode !== null) return
  const exited = new Promise((r) => c.once("exit", r))
  c.stdin!.end()
  if (await Promise.race([exited.then(() => true), sleep(5000).then(() => false)])) return
  c.kill("SIGKILL")
  await exited
}

/** Resident memory of a process in MiB, from /proc (Linux). */
const rssMiB = (pid: number): number => {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8")
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1]
  if (kb === undefined) throw new Error(`process ${pid} has no resident memory (it exited):\n${status}`)
  return Number(kb) / 1024
}

const rental = (sku: string) => ({
  vendor: "v-burst", vendor_gpu_name: "H100 SXM", vendor_sku: sku, region: "us-east", gpu_canonical_name: POPULAR_GPU,
  gpu_manufacturer: "nvidia", gpu_model: "H100", gpu_count: 1, gpu_memory_gb: 80, contract_type: "ondemand" as const,
  price_usd_per_gpu_hour: 2.5, raw_price: 2.5, raw_price_unit: "usd_per_instance_hour" as const, extracted_at: new Date().toISOString()
})

/** Runs the burst: server, subscribers and prober each in a process of their own, the writes in this one. */
export const runFeedBurstBench = async (quick: boolean, log: (line: string) => void): Promise<FeedBurstResults> => {
  const n = Number(process.env.FEED_BURST_SUBSCRIBERS ?? (quick ? 200 : BURST_SUBSCRIBERS))
  const events = quick ? 300 : BURST_EVENTS
  const { createMarket } = await import("@gpu-market/core")
  const { sqlite } = await import("@gpu-market/storage-sqlite")
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gpu-market-feed-burst-"))
  const file = path.join(dir, "market.db")
  const market = await createMarket({ storage: sqlite(file) })
  const children: Array<ChildProcess> = []
  let server: Awaited<ReturnType<typeof startServer>> | undefined
  try {
    await market.tokens.create({
      id: "feed-burst", name: "feed burst", grants: { gpu_rental_prices: { history: { _tag: "unrestricted" } } }, indices: "all",
      legacy_custom_index: false, procurement: false, rate_limit_per_minute: 10_000_000
    }, BENCH_TOKEN)
    // A page for /latest to answer: 100 products.
    await market.ingest.rental(Array.from({ length: 100 }, (_, i) => rental(`seed${i}`)))
    server = await startServer("feed-burst", "serve-adapter.ts", { BENCH_DB: file }, LATEST)
    const pid = server.pid!
    const base = new URL(server.url).origin
    log(`  (n) burst: ${n} subscribers, ${events} events ...`)
    const subs = child("test/support/feed-subscribers.ts", { FEED_URL: base, FEED_TOKEN: BENCH_TOKEN, FEED_SUBSCRIBERS: String(n), FEED_EXPECTED: String(events) })
    children.push(subs)
    const subsLine = lineReader(subs)
    const opened = await subsLine("open", 120_000)
    if (opened !== "open") throw new Error(`subscribers: ${opened}`)
    const prober = child("bench/feed-burst.ts", { FEED_BURST_ROLE: "probe", FEED_BURST_URL: base })
    children.push(prober)
    const proberLine = lineReader(prober)
    // Settled: the streams open, the server idle.
    await sleep(2000)
    const load = os.loadavg()[0]!
    const before = rssMiB(pid)
    let peak = before
    const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(pid))), 50)
    const started = now()
    const per = Math.ceil(events / IMPORTS)
    for (let i = 0; i < events; i += per) {
      await market.ingest.rental(Array.from({ length: Math.min(per, events - i) }, (_, k) => rental(`burst${i + k}`)))
    }
    let done = await subsLine("every event at every subscriber", 300_000)
    while (done.startsWith("progress ")) done = await subsLine("every event at every subscriber", 300_000)
    if (!done.startsWith("done ")) throw new Error(`subscribers: ${done}`)
    const finished = now()
    const dropped = Number(done.split(" ")[1])
    // The prober stops sending and answers once every request it sent was answered.
    prober.stdin!.end()
    const samples = (JSON.parse(await proberLine("probe samples", 120_000)) as Array<[number, number]>)
      .filter(([sent]) => sent >= started && sent <= finished).map(([, ms]) => (ms < 0 ? Number.POSITIVE_INFINITY : ms))
    await stop(prober)
    await stop(subs)
    peak = Math.max(peak, rssMiB(pid))
    await sleep(AFTER_MS)
    clearInterval(sampler)
    const after = rssMiB(pid)
    return {
      subscribers: n, events, rss: { before, peak, after }, fanOutSeconds: (finished - started) / 1000, dropped,
      latest: { samples: samples.length, p50: median(samples), p99: quantile(samples, 0.99), max: Math.max(...samples) },
      load
    }
  } finally {
    for (const c of children) await stop(c)
    await server?.stop()
    await market.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

const mib = (n: number) => `${n.toFixed(0)} MiB`
const ms = (n: number) => `${n.toFixed(1)} ms`

/** The lines of the burst in the results table: the server's memory, and requests answered meanwhile. */
export const feedBurstLines = (r: FeedBurstResults) => {
  const growth = r.rss.peak - r.rss.before
  const title = `(n) feed burst, ${r.subscribers.toLocaleString("en-US")} subscribers × ${r.events.toLocaleString("en-US")} events`
  return [{
    name: `${title}: server RSS growth at the peak (before → peak → 10 s after)`,
    figure: `${mib(growth)} (${mib(r.rss.before)} → ${mib(r.rss.peak)} → ${mib(r.rss.after)})`,
    baseline: mib(BURST_GROWTH_TARGET_MIB),
    ratio: growth / BURST_GROWTH_TARGET_MIB,
    target: `≤ ${mib(BURST_GROWTH_TARGET_MIB)}`,
    pass: growth <= BURST_GROWTH_TARGET_MIB
  }, {
    name: `${title}: plain /latest meanwhile, p99 (p50)`,
    figure: `${ms(r.latest.p99)} (${ms(r.latest.p50)})`,
    baseline: `${BURST_P99_TARGET_MS} ms`,
    ratio: r.latest.p99 / BURST_P99_TARGET_MS,
    target: `≤ ${BURST_P99_TARGET_MS} ms`,
    pass: r.latest.p99 <= BURST_P99_TARGET_MS
  }]
}

/** The burst's part of section (n) in BENCHMARKS.md. */
export const feedBurstMarkdown = (r: FeedBurstResults): string => `### Burst: memory and requests while events fan out

${r.subscribers.toLocaleString("en-US")} subscribers of \`GET /v2/events?data_type=gpu_rental_prices\` on the standalone server (\`bench/serve-adapter.ts\`, SQLite), read by a process of their own; another process writes ${r.events.toLocaleString("en-US")} new rental rows in ${IMPORTS} imports, and a third sends a plain \`/latest\` page request every ${PROBE_EVERY_MS} ms without waiting for the one before. Every subscriber got every event exactly once (ids checked in order; ${r.dropped} subscriptions dropped as slow consumers and resumed from their ids). The fan-out took ${r.fanOutSeconds.toFixed(1)} s from the first write to the last subscriber's last event.

| measure | figure | target |
| --- | ---: | ---: |
| server RSS before the burst | ${mib(r.rss.before)} | |
| server RSS at the peak (sampled every 50 ms) | ${mib(r.rss.peak)} | growth ≤ ${mib(BURST_GROWTH_TARGET_MIB)} |
| server RSS 10 s after every stream closed | ${mib(r.rss.after)} | |
| \`/latest\` during the fan-out: p50, p99, max (${r.latest.samples} requests) | ${ms(r.latest.p50)}, ${ms(r.latest.p99)}, ${ms(r.latest.max)} | p99 ≤ ${BURST_P99_TARGET_MS} ms |

1-minute load average ${r.load.toFixed(2)} before the burst, on 2 cores. What bounds the memory: each event's frame is encoded once and shared; a subscriber's stream is written 16 KiB at a time, the next write once its socket took the last, so it holds under 32 KiB; the events it has yet to take wait in the shared ring. Subscribers take 32 events at a time, one slice after another in turns of 10 ms, and the event loop reads requests between turns.
`

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href
if (isMain) {
  if (process.env.FEED_BURST_ROLE === "probe") probe(process.env.FEED_BURST_URL!)
  else {
    runFeedBurstBench(process.env.BENCH_QUICK === "1", (line) => console.log(line)).then((r) => {
      for (const line of feedBurstLines(r)) console.log(`${line.name}: ${line.figure}; target ${line.target}: ${line.pass ? "pass" : "FAIL"}`)
      console.log(JSON.stringify(r))
    }).catch((e: unknown) => {
      console.error(e)
      process.exitCode = 1
    })
  }
}
