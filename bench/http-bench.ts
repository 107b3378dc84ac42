import { type ChildProcess, spawn } from "node:child_process"
import { deepStrictEqual, ok } from "node:assert/strict"
import { once } from "node:events"
import * as path from "node:path"
import { setTimeout as sleep } from "node:timers/promises"
import { type BenchConfig, BENCH_DIR, BENCH_TOKEN, POPULAR_GPU, REPO_ROOT, SORT_BY } from "./config"
import { freePort, processCpuSeconds } from "./processes"
import { median } from "./stats"

/**
 * (c) Requests per second for the benchmark page over HTTP: the real server and the baseline
 * each in a child process of its own, loaded in turn by autocannon in a third, so no two of
 * them share an event loop.
 */

const PATH = `/v2/gpu/rental/prices/latest?gpu_canonical_name=${POPULAR_GPU}&sort_by=${SORT_BY}&page_size=100`
const AUTHORIZATION = `Bearer ${BENCH_TOKEN}`

export interface Server {
  readonly name: string
  readonly url: string
  /** The server process's id. */
  readonly pid: number | undefined
  /** CPU seconds (user + system) the server process has used so far, where the OS tells. */
  readonly cpuSeconds: () => number | undefined
  readonly stop: () => Promise<void>
}

export interface LoadRun {
  readonly server: string
  readonly reqPerSec: number
  readonly requests: number
  readonly seconds: number
  readonly latencyP50Ms: number
  readonly latencyP99Ms: number
  /**
   * Server CPU time per answered request. On a shared machine req/s drops whenever a neighbour
   * takes the core; CPU per request moves much less, so it shows whether a change is real.
   */
  readonly cpuUsPerRequest: number | undefined
}

export interface HttpResults {
  readonly adapter: ReadonlyArray<LoadRun>
  readonly baseline: ReadonlyArray<LoadRun>
  readonly adapterMedian: number
  readonly baselineMedian: number
  readonly adapterCpuUsMedian: number | undefined
  readonly baselineCpuUsMedian: number | undefined
  readonly adapterBodyBytes: number
  readonly baselineBodyBytes: number
  readonly connections: number
  readonly seconds: number
}




const stopChild = async (child: ChildProcess) => {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = once(child, "exit")
  child.kill("SIGTERM")
  const done = await Promise.race([exited.then(() => true), sleep(5000).then(() => false)])
  if (!done) {
    child.kill("SIGKILL")
    await exited
  }
}

export const get = async (url: string) => {
  const response = await fetch(url, { headers: { authorization: AUTHORIZATION } })
  const text = await response.text()
  return { status: response.status, contentType: response.headers.get("content-type") ?? "", text }
}

export const startServer = async (name: string, script: string, env: Record<string, string>, pathAndQuery = PATH): Promise<Server> =>
  startProcess(name, (port) => ({ args: ["--import", "tsx", path.join(BENCH_DIR, script)], env: { ...env, BENCH_PORT: String(port) } }), pathAndQuery)

/**
 * A server process on a free port, once it answers `pathAndQuery` (and, for `gpu-market serve
 * --workers N`, once it logged `listening` N times). Its stdout is the bench's; its stderr is
 * kept, the last few KiB of it, for the error if it never answers (a server's request log would
 * flood the bench's output, and writing it is part of what is measured).
 */
export const startProcess = async (
  name: string,
  spec: (port: number) => { readonly args: ReadonlyArray<string>; readonly env: Record<string, string> },
  pathAndQuery = PATH,
  listening = 0
): Promise<Server> => {
  const port = await freePort()
  const { args, env } = spec(port)
  const child = spawn(process.execPath, args, { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "inherit", "pipe"] })
  let stderr = ""
  let listened = 0
  child.stderr!.on("data", (d: Buffer) => {
    // Counted on whole lines: a chunk may end inside one.
    const text = stderr.slice(stderr.lastIndexOf("\n") + 1) + d.toString()
    listened += text.slice(0, text.lastIndexOf("\n") + 1).split(`"msg":"listening"`).length - 1
    stderr = (stderr + d.toString()).slice(-4096)
  })
  const server: Server = {
    name,
    url: `http://127.0.0.1:${port}${pathAndQuery}`,
    pid: child.pid,
    cpuSeconds: () => processCpuSeconds(child.pid),
    stop: () => stopChild(child)
  }
  const deadline = Date.now() + 60_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} server exited with code ${child.exitCode} before it answered:\n${stderr}`)
    try {
      await get(server.url)
      if (listened >= listening) return server
      throw new Error(`${listened} of ${listening} listening`)
    } catch (e) {
      if (Date.now() > deadline) {
        await server.stop()
        throw new Error(`${name} server did not answer within 60 s: ${String(e)}\n${stderr}`)
      }
      await sleep(100)
    }
  }
}

interface AutocannonResult {
  readonly requests: { readonly total: number }
  readonly latency: { readonly p50: number; readonly p99: number }
  readonly duration: number
  readonly errors: number
  readonly timeouts: number
  readonly non2xx: number
  readonly "2xx": number
}

const CANNON = path.join(BENCH_DIR, "cannon.mjs")

/**
 * `connections` clients loading `server` for `seconds`, from a child process of their own. With
 * `vary`, every request is a query no request asked before (see cannon.mjs).
 */
export const load = async (server: Server, seconds: number, connections: number, vary = false): Promise<LoadRun> => {
  const cpuBefore = server.cpuSeconds()
  const child = spawn(process.execPath, [
    CANNON, JSON.stringify({ url: server.url, connections, seconds, authorization: AUTHORIZATION, vary })
  ], { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] })
  let out = ""
  let err = ""
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()))
  child.stderr!.on("data", (d: Buffer) => (err += d.toString()))
  const [code] = (await once(child, "exit")) as [number | null]
  if (code !== 0) throw new Error(`autocannon exited with ${code}: ${err}`)
  const cpuAfter = server.cpuSeconds()
  const r = JSON.parse(out) as AutocannonResult
  ok(r.errors === 0 && r.timeouts === 0 && r.non2xx === 0, `${server.name}: ${r.errors} errors, ${r.timeouts} timeouts, ${r.non2xx} non-2xx`)
  return {
    server: server.name,
    reqPerSec: r["2xx"] / r.duration,
    requests: r["2xx"],
    seconds: r.duration,
    latencyP50Ms: r.latency.p50,
    latencyP99Ms: r.latency.p99,
    cpuUsPerRequest: cpuBefore === undefined || cpuAfter === undefined || r["2xx"] === 0
      ? undefined
      : ((cpuAfter - cpuBefore) * 1e6) / r["2xx"]
  }
}

const medianOf = (values: ReadonlyArray<number | undefined>): number | undefined =>
  values.every((v): v is number => v !== undefined) && values.length > 0 ? median(values) : undefined

export const runHttpBench = async (
  config: BenchConfig,
  filename: string,
  pageTokenLength: number,
  log: (line: string) => void
): Promise<HttpResults> => {
  const servers: Array<Server> = []
  try {
    const env = { BENCH_DB: filename, BENCH_TOKEN_LENGTH: String(pageTokenLength) }
    const adapter = await startServer("adapter", "serve-adapter.ts", env)
    servers.push(adapter)
    const baseline = await startServer("baseline", "baseline-server.ts", env)
    servers.push(baseline)

    const a = await get(adapter.url)
    const b = await get(baseline.url)
    for (const [name, r] of [["adapter", a], ["baseline", b]] as const) {
      ok(r.status === 200, `${name} answered ${r.status}: ${r.text.slice(0, 300)}`)
      ok(r.contentType.startsWith("application/json"), `${name} answered ${r.contentType}`)
    }
    const aBody = JSON.parse(a.text) as { data: unknown; meta: Record<string, unknown> }
    const bBody = JSON.parse(b.text) as { data: unknown; meta: Record<string, unknown> }
    deepStrictEqual(aBody.data, bBody.data, "the two servers disagree on data")
    deepStrictEqual(Object.keys(aBody.meta), Object.keys(bBody.meta), "the two servers' meta differ in shape")

    log(`  warm-up: ${config.httpWarmupSeconds} s each`)
    for (const s of [adapter, baseline]) await load(s, config.httpWarmupSeconds, config.connections)
    const runs: Array<LoadRun> = []
    for (let i = 0; i < config.httpRuns; i++) {
      // Alternating who goes first spreads slow drifts (thermal, neighbours) over both.
      for (const s of i % 2 === 0 ? [adapter, baseline] : [baseline, adapter]) {
        const run = await load(s, config.httpSeconds, config.connections)
        const cpu = run.cpuUsPerRequest === undefined ? "" : `  ${run.cpuUsPerRequest.toFixed(0)} µs CPU/req`
        log(`  run ${i + 1}/${config.httpRuns} ${s.name.padEnd(8)} ${run.reqPerSec.toFixed(0).padStart(6)} req/s  p50 ${run.latencyP50Ms} ms  p99 ${run.latencyP99Ms} ms${cpu}`)
        runs.push(run)
      }
    }
    const adapterRuns = runs.filter((r) => r.server === "adapter")
    const baselineRuns = runs.filter((r) => r.server === "baseline")
    return {
      adapter: adapterRuns,
      baseline: baselineRuns,
      adapterMedian: median(adapterRuns.map((r) => r.reqPerSec)),
      baselineMedian: median(baselineRuns.map((r) => r.reqPerSec)),
      adapterCpuUsMedian: medianOf(adapterRuns.map((r) => r.cpuUsPerRequest)),
      baselineCpuUsMedian: medianOf(baselineRuns.map((r) => r.cpuUsPerRequest)),
      adapterBodyBytes: Buffer.byteLength(a.text),
      baselineBodyBytes: Buffer.byteLength(b.text),
      connections: config.connections,
      seconds: config.httpSeconds
    }
  } finally {
    for (const s of servers) await s.stop()
  }
}
