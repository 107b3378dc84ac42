import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createMarket, type Principal } from "@gpu-market/core"
import { sqlite } from "@gpu-market/storage-sqlite"
import { execFile } from "node:child_process"
import { writeFileSync } from "node:fs"
import { createServer, get, type IncomingMessage } from "node:http"
import type { AddressInfo } from "node:net"
import { availableParallelism } from "node:os"
import { dirname, join, resolve } from "node:path"
import { ADAPTER_LAST_DAY, seedMarket, tempDb } from "./support/adapters"
import { spawnTree, stopAll, type Tree, waitFor } from "./support/crash"
import { observations, TOKENS } from "./support/market"
import { alive, holdRequest, logLines } from "./support/ops"
import { freePort } from "./support/process"

/**
 * `gpu-market serve --workers N`: N server processes on one port and one SQLite file answer as
 * one process does, hold a client to exactly its rate limit between them, serve the change feed
 * from each, run `--sync` once between them (the sync lease), outlive a worker killed
 * with SIGKILL (its replacement serves), drain every worker on SIGTERM and exit 0. A command line
 * that cannot work is a usage error before anything starts, and workers that die as they start
 * end the primary rather than being started forever. `auto` starts one worker per core.
 */

const ROOT = resolve(import.meta.dirname, "..")
const BIN = join(ROOT, "packages/cli/bin/gpu-market.js")
const BASE_URL = "http://market.test"
const LIMIT = 20
/** Bursts that may be tried, each with a token of its own: one that straddles two minutes is tried again. */
const ATTEMPTS = 3

const db = tempDb("workers")

/** A token of `LIMIT` requests a minute that may buy (for a request held mid-body). */
const limited = (name: string): Principal => ({ ...TOKENS.all, id: `t-${name}` as Principal["id"], name, rate_limit_per_minute: LIMIT, procurement: true })

/** An answer as a client sees it, with the parts that differ by request (its id) taken out. */
interface Answer {
  readonly status: number
  readonly remaining: string | null
  readonly body: string
}

/** `GET path` on a connection of its own, so the primary hands each request to the next worker. */
const fetchOnce = (port: number, path: string, token: string | undefined): Promise<Answer> =>
  new Promise((done, fail) => {
    const headers = token === undefined ? {} : { authorization: `Bearer ${token}` }
    const request = get({ host: "127.0.0.1", port, path, headers, agent: false, timeout: 20_000 }, (res) => {
      let body = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => (body += chunk))
      res.on("end", () => done({
        status: res.statusCode!,
        remaining: res.headers["x-ratelimit-remaining"] as string | undefined ?? null,
        body: body.replace(/"request_id":"[^"]*"/g, `"request_id":"…"`)
      }))
    })
    request.on("error", fail).on("timeout", () => request.destroy(new Error(`GET ${path}: no answer in 20 s`)))
  })

/** `gpu-market serve` on `port` over the fixture file, with `args`; resolves once `listening` workers (or the one process) listen. */
const launch = async (port: number, args: ReadonlyArray<string>, listening: number): Promise<Tree> => {
  const tree = spawnTree("node", [BIN, "serve", "--db", db, "--port", String(port), "--base-url", BASE_URL, "--shutdown-timeout", "20", ...args], {
    cwd: ROOT, env: { ...process.env, GPU_MARKET_DEMO: "0", GPU_MARKET_LOG_FORMAT: "json", GPU_MARKET_REDIS_URL: "", GPU_MARKET_RATE_LIMITS: "", GPU_MARKET_WORKERS: "" }
  })
  await waitFor(`${listening} listening`, () => {
    if (!tree.running()) throw new Error(`exited:\n${tree.output()}`)
    return logLines(tree.stderr()).filter((l) => l.msg === "listening").length >= listening
  }, 120_000)
  return tree
}

/** The pid of each listening worker, by worker id. */
const workerPids = (tree: Tree) =>
  new Map(logLines(tree.stderr()).filter((l) => l.msg === "listening").map((l) => [Number(l.worker), Number(l.pid)]))

/** The pids that logged an answer to `route`. */
const answeredBy = (tree: Tree, route: string) =>
  new Set(logLines(tree.stderr()).filter((l) => l.msg === "request" && l.route === route).map((l) => Number(l.pid)))

/** The command's exit code and stderr. */
const run = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  new Promise<{ readonly code: number | null; readonly stderr: string }>((done) => {
    const child = execFile("node", [BIN, ...args], { cwd: ROOT, env: { ...process.env, GPU_MARKET_LOG_FORMAT: "json", ...env }, timeout: 60_000 }, (error, _stdout, stderr) =>
      done({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, stderr }))
    child.stdin?.end()
  })

const PATHS = [
  "/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm&sort_by=price_usd_per_gpu_hour",
  "/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm&sort_by=price_usd_per_gpu_hour&page_size=2",
  "/v2/gpu/rental/prices/history?gpu_canonical_name=a100-80gb&start=2026-05-01T00:00:00Z&end=2026-05-12T00:00:00Z&page_size=5",
  "/v2/gpu/rental/prices/metadata",
  "/v2/gpu/rental/prices/latest?page_size=0",
  "/v2/gpu/rental/prices/latest?sort_by=nope",
  "/v2/nothing-here"
]

describe("serve --workers 2 on one SQLite file", () => {
  let cluster: Tree
  let clusterPort: number
  let singlePort: number

  /** What the sync's one source was asked: it answers 404, so the sync writes no rows the answers compared here could differ by. */
  let sourceRequests = 0
  const source = createServer((_, res) => {
    sourceRequests++
    res.writeHead(404).end()
  })

  beforeAll(async () => {
    await new Promise<void>((done) => source.listen(0, "127.0.0.1", done))
    const sources = join(dirname(db), "sources.yaml")
    writeFileSync(sources, [
      "sources:",
      "  - name: lambda",
      `    url: http://127.0.0.1:${(source.address() as AddressInfo).port}/vms.csv`,
      "    format: skypilot",
      "    vendor: lambda",
      "    interval: 1 hour",
      ""
    ].join("\n"))
    const market = await createMarket({ storage: sqlite(db) })
    try {
      await seedMarket(market)
      for (let i = 0; i < ATTEMPTS; i++) await market.tokens.create(limited(`burst-${i}`), `burst-${i}`)
      await market.tokens.create(limited("held"), "held")
    } finally {
      await market.close()
    }
    ;[clusterPort, singlePort] = [await freePort(), await freePort()]
    // The single process is stopped with the rest by `stopAll`.
    ;[cluster] = await Promise.all([launch(clusterPort, ["--workers", "2", "--sync", sources], 2), launch(singlePort, [], 1)])
  }, 180_000)

  afterAll(async () => {
    await stopAll()
    source.closeAllConnections()
    await new Promise<void>((done) => source.close(() => done()))
  }, 60_000)

  it("answers every request as one process does, and both workers answer", { timeout: 60_000 }, async () => {
    for (const path of PATHS) {
      const one = await fetchOnce(singlePort, path, "all")
      // Twice, so the primary hands the request to each worker in turn.
      for (const answer of [await fetchOnce(clusterPort, path, "all"), await fetchOnce(clusterPort, path, "all")]) {
        assert.deepStrictEqual({ status: answer.status, body: answer.body }, { status: one.status, body: one.body }, path)
      }
    }
    assert.deepStrictEqual(await fetchOnce(clusterPort, PATHS[0]!, undefined).then((a) => a.status), 401)
    assert.deepStrictEqual(answeredBy(cluster, "/v2/gpu/rental/prices/metadata"), new Set(workerPids(cluster).values()))
    assert.include(cluster.output(), "(storage: " + db + "; rate limits: process)")
    // The banner once, from the first worker.
    assert.strictEqual(cluster.output().split("gpu-market listening on").length - 1, 1)
  })

  it("holds a client to exactly its limit across the workers, over many connections, counting in the primary", { timeout: 60_000 }, async () => {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const minute = Math.floor(Date.now() / 60_000)
      const answers = await Promise.all(Array.from({ length: 3 * LIMIT }, () => fetchOnce(clusterPort, "/v2/gpu/rental/prices/metadata", `burst-${attempt}`)))
      if (Math.floor(Date.now() / 60_000) !== minute) continue
      const ok = answers.filter((a) => a.status === 200)
      assert.strictEqual(ok.length, LIMIT)
      assert.strictEqual(answers.filter((a) => a.status === 429).length, 2 * LIMIT)
      // One count in the file: each remaining budget was handed out once.
      assert.deepStrictEqual(ok.map((a) => Number(a.remaining)).sort((a, b) => a - b), Array.from({ length: LIMIT }, (_, i) => i))
      return
    }
    assert.fail("every burst straddled two minutes")
  })

  it("serves the change feed from each worker: a write by another process reaches every stream", { timeout: 60_000 }, async () => {
    // Four streams on connections of their own: the primary hands them to the workers in turn.
    const streams = await Promise.all(Array.from({ length: 4 }, () => new Promise<{ readonly response: IncomingMessage; readonly text: () => string }>((done, fail) => {
      get({ host: "127.0.0.1", port: clusterPort, path: "/v2/events?data_type=gpu_rental_prices", headers: { authorization: "Bearer all" }, agent: false }, (response) => {
        let text = ""
        response.on("data", (chunk: Buffer) => (text += chunk.toString()))
        done({ response, text: () => text })
      }).on("error", fail)
    })))
    try {
      assert.deepStrictEqual(streams.map((s) => s.response.statusCode), [200, 200, 200, 200])
      const market = await createMarket({ storage: sqlite(db) })
      try {
        await market.ingest.rental(observations(ADAPTER_LAST_DAY + 1))
      } finally {
        await market.close()
      }
      await waitFor("the write on every stream", () => streams.every((s) => /^event: \w+$/m.test(s.text())), 30_000)
    } finally {
      for (const s of streams) s.response.destroy()
    }
    // Each stream's request is logged as it ends: both workers served some.
    await waitFor("both workers logging a stream", () => answeredBy(cluster, "/v2/events").size === 2, 20_000)
  })

  it("runs one sync between the workers: each runs the loop, one holds the lease, the source is asked once", { timeout: 30_000 }, async () => {
    await waitFor("the source asked", () => sourceRequests > 0, 20_000)
    const lines = logLines(cluster.stderr())
    assert.deepStrictEqual(new Set(lines.filter((l) => l.msg.startsWith("sync: 1 sources")).map((l) => l.worker)), new Set([1, 2]))
    assert.strictEqual(lines.filter((l) => l.msg.endsWith("holds the sync lease")).length, 1)
    assert.strictEqual(sourceRequests, 1)
  })

  it("replaces a worker killed with SIGKILL, and answers every request but the one it held", { timeout: 90_000 }, async () => {
    const [victim, other] = [...workerPids(cluster).values()]
    let stop = false
    let failed = 0
    const statuses: Array<number> = []
    // One request at a time: at most one is in flight on the killed worker.
    const load = (async () => {
      while (!stop) {
        await fetchOnce(clusterPort, PATHS[0]!, "all").then((a) => statuses.push(a.status), () => failed++)
      }
    })()
    await waitFor("requests answered", () => statuses.length >= 5, 20_000)
    process.kill(victim!, "SIGKILL")
    await waitFor("a replacement worker listening", () => workerPids(cluster).size === 3, 60_000)
    const replacement = [...workerPids(cluster).values()].find((pid) => pid !== victim && pid !== other)!
    await waitFor("the replacement answering", () => answeredBy(cluster, "/v2/gpu/rental/prices/latest").has(replacement), 30_000)
    stop = true
    await load
    assert.isAtMost(failed, 1, `requests lost: ${failed}`)
    assert.isTrue(statuses.every((s) => s === 200), JSON.stringify(statuses))
    assert.isFalse(alive(victim!))
    const replaced = logLines(cluster.stderr()).find((l) => l.msg === "worker died: replacing it")
    assert.strictEqual(replaced?.ended, "signal SIGKILL")
  })

  it("SIGTERM to the primary drains every worker: the request in flight is answered, and it exits 0", { timeout: 60_000 }, async () => {
    const pids = [...workerPids(cluster).values()].filter(alive)
    assert.strictEqual(pids.length, 2)
    const request = await holdRequest(clusterPort, "/supply/procurements", {
      authorization: "Bearer held", "content-type": "application/json", "idempotency-key": "held-workers"
    }, "{}")
    process.kill(cluster.child.pid!, "SIGTERM")
    await waitFor("a worker closing", () => logLines(cluster.stderr()).some((l) => l.msg.startsWith("closing the server")), 20_000)
    const reply = await request.finish()
    assert.strictEqual(reply?.status, 422, JSON.stringify(reply))
    assert.deepStrictEqual(await cluster.exited, { code: 0, signal: null }, cluster.output())
    assert.isTrue(pids.every((pid) => !alive(pid)), "every worker exited")
    const said = logLines(cluster.stderr()).map((l) => l.msg)
    assert.strictEqual(said.filter((m) => m === "stopped").length, 2)
    assert.strictEqual(said.at(-1), "workers stopped")
  })
})

describe("serve --workers: what cannot work", () => {
  // A test that times out never reaches its own `finally`: whatever it started goes here.
  afterAll(stopAll, 60_000)

  it("a count that is not one is a usage error, exit 2", { timeout: 60_000 }, async () => {
    const counts = ["0", "nope", "-1", "1.5"]
    const runs = await Promise.all(counts.map((workers) => run(["serve", "--db", db, "--workers", workers])))
    counts.forEach((workers, i) => {
      assert.strictEqual(runs[i]!.code, 2, runs[i]!.stderr)
      assert.include(runs[i]!.stderr, `--workers is "${workers}"; expected a number of server processes`)
    })
    const env = await run(["serve", "--db", db], { GPU_MARKET_WORKERS: "many" })
    assert.strictEqual(env.code, 2, env.stderr)
    assert.include(env.stderr, `GPU_MARKET_WORKERS is "many"`)
  })

  it.skipIf(availableParallelism() < 2)("auto is a worker per core; workers that die as they start end the primary with exit 1 after a few tries", { timeout: 90_000 }, async () => {
    const port = await freePort()
    const tree = spawnTree("node", [BIN, "serve", "--db", db, "--port", String(port), "--workers", "auto", "--cors-origin", "nope"], {
      cwd: ROOT, env: { ...process.env, GPU_MARKET_DEMO: "0", GPU_MARKET_LOG_FORMAT: "json" }
    })
    try {
      const exit = await tree.exited
      assert.deepStrictEqual(exit, { code: 1, signal: null }, tree.output())
      // The workers' errors are plain lines among the primary's JSON ones.
      assert.include(tree.stderr(), `"msg":"starting the workers","pid":${tree.child.pid},"role":"primary","workers":${availableParallelism()}}`)
      assert.strictEqual(tree.stderr().split(`"nope" is not an origin`).length - 1, 3, tree.output())
      assert.match(tree.stderr(), /gpu-market serve: workers died 3 times in a row within 10 s of starting \(the last: worker 3, exit code 1\); giving up/)
    } finally {
      await tree.kill()
    }
  })
})
