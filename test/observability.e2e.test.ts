import { afterAll, afterEach, assert, beforeAll, describe, it } from "@effect/vitest"
import { Validator } from "@seriousme/openapi-schema-validator"
import { execFileSync, spawnSync } from "node:child_process"
import { join, resolve } from "node:path"
import { spawnTree, stopAll, type Tree, waitFor } from "./support/crash"
import { holdRequest, logLines, parsePrometheus, type Sample, total } from "./support/ops"
import { freePort } from "./support/process"
import { type RedisServer, startRedis, uniquePrefix } from "./support/redis"

/**
 * The standalone server as an operator runs it, on a real redis-server: probes, `/metrics` as
 * Prometheus parses it, one JSON log line per request with no secret in any line, and the
 * storage breaker. With Redis frozen (SIGSTOP), a few requests wait out the command timeout;
 * then the breaker opens and the rest are answered at once without a storage call (the metrics
 * say so), `/readyz` is 503, and it is 200 again once Redis thaws, without a restart.
 */

const ROOT = resolve(import.meta.dirname, "..")
const BIN = join(ROOT, "packages/cli/bin/gpu-market.js")
const LATEST = "/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm&page_size=5"

let redis: RedisServer
let prefix: string
let reader: string
let procurer: string

beforeAll(async () => {
  redis = await startRedis()
  prefix = uniquePrefix("ops")
  const token = (...args: Array<string>) => execFileSync("node", [BIN, "tokens", "create", "--redis", redis.url, "--redis-prefix", prefix, ...args], {
    encoding: "utf8", stdio: ["ignore", "pipe", "pipe"]
  }).split("\n")[0]!.trim()
  reader = token("--name", "reader", "--grant", "rental:all")
  procurer = token("--name", "procurer", "--grant", "rental", "--procurement")
})

afterEach(async () => {
  redis.resume()
  await stopAll()
})
afterAll(() => redis.stop())

/** `gpu-market serve` on the test's Redis, `--log-level` last: after the subcommand's own options. */
const serve = async (args: ReadonlyArray<string>) => {
  const port = await freePort()
  const tree = spawnTree("node", [BIN, "serve", "--redis", redis.url, "--redis-prefix", prefix, "--port", String(port), ...args], {
    cwd: ROOT, env: { ...process.env, GPU_MARKET_LOG_FORMAT: "json" }
  })
  await waitFor("serve listening", () => {
    if (!tree.running()) throw new Error(`serve exited:\n${tree.output()}`)
    return tree.output().includes("gpu-market listening on")
  }, 60_000)
  const get = async (path: string, token?: string) => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } })
    return { status: res.status, headers: res.headers, text: await res.text() }
  }
  const scrape = async (): Promise<Array<Sample>> => {
    const r = await get("/metrics")
    assert.strictEqual(r.status, 200)
    assert.match(r.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/)
    return parsePrometheus(r.text)
  }
  return { tree, port, get, scrape }
}

/** Every storage call that reached the backend, whichever its operation. */
const storageCalls = (samples: ReadonlyArray<Sample>) => total(samples, "gpu_market_storage_call_duration_seconds_count")

const requestsOf = (samples: ReadonlyArray<Sample>, route: string, status: number) =>
  total(samples, "gpu_market_http_requests_total", { method: "GET", route, status: String(status) })

/** The tree's log lines, every one asserted JSON and none holding a secret. */
const cleanLog = (tree: Tree) => {
  for (const secret of [reader, procurer, "not-a-real-token"]) assert.notInclude(tree.output(), secret, "a secret in the output")
  return logLines(tree.stderr())
}

describe("operating the server", () => {
  it("probes, Prometheus metrics that move with traffic, one JSON log line per request, no secret logged", { timeout: 120_000 }, async () => {
    const { get, port, scrape, tree } = await serve(["--metrics", "--log-level", "debug"])
    assert.strictEqual((await get("/healthz")).text, `{"status":"ok"}`)
    const ready = await get("/readyz")
    assert.deepStrictEqual([ready.status, ready.text, ready.headers.get("cache-control")], [200, `{"status":"ready"}`, "no-store"])

    const before = await scrape()
    const answers = [
      await get(LATEST, reader), await get(LATEST, reader), await get(LATEST, reader),
      await get(LATEST, "not-a-real-token"),
      await get("/v2/gpu/hardware/prices/latest", reader),
      await get("/supply/offers/off_x", procurer),
      await get("/no/such/path")
    ]
    assert.deepStrictEqual(answers.map((a) => a.status), [200, 200, 200, 401, 403, 404, 404])
    const after = await scrape()
    const moved = (f: (s: ReadonlyArray<Sample>) => number) => f(after) - f(before)
    assert.strictEqual(moved((s) => requestsOf(s, "/v2/gpu/rental/prices/latest", 200)), 3)
    assert.strictEqual(moved((s) => requestsOf(s, "/v2/gpu/rental/prices/latest", 401)), 1)
    assert.strictEqual(moved((s) => requestsOf(s, "/v2/gpu/hardware/prices/latest", 403)), 1)
    assert.strictEqual(moved((s) => requestsOf(s, "/supply/offers/:offer_id", 404)), 1, "a route's template, not its path")
    assert.strictEqual(moved((s) => requestsOf(s, "unmatched", 404)), 1)
    assert.strictEqual(moved((s) => total(s, "gpu_market_http_request_duration_seconds_count", { route: "/v2/gpu/rental/prices/latest" })), 4)
    // A page is kept from its second request on: the first two reads miss the cache, and the
    // second fills it; the third is a hit, and reads no rows.
    assert.strictEqual(moved((s) => total(s, "gpu_market_page_cache_lookups_total", { result: "hit" })), 1)
    assert.strictEqual(moved((s) => total(s, "gpu_market_page_cache_lookups_total", { result: "miss" })), 2)
    assert.isAbove(moved((s) => total(s, "gpu_market_storage_call_duration_seconds_count", { operation: "TokenStore.version" })), 3)
    assert.strictEqual(total(after, "gpu_market_storage_up"), 1)
    assert.isAbove(total(after, "process_cpu_user_seconds_total"), 0, "the process's own metrics too")

    // /metrics is documented when served, in a document that is still valid OpenAPI 3.1.
    const doc = JSON.parse((await get("/openapi.json")).text)
    assert.deepStrictEqual(Object.keys(doc.paths).filter((p) => !p.startsWith("/v") && !p.startsWith("/supply")), ["/healthz", "/readyz", "/metrics"])
    assert.isTrue((await new Validator().validate(doc)).valid)

    // One line per request, found by the request id its answer carries; probes at debug. Lines
    // reach stderr within 20 ms of being logged.
    const ids = answers.map((a) => a.headers.get("x-request-id"))
    await waitFor("every request's line", () => ids.every((id) => cleanLog(tree).some((l) => l.request_id === id)), 5_000)
    const lines = cleanLog(tree)
    for (const answer of answers) {
      const id = answer.headers.get("x-request-id")
      const logged = lines.filter((l) => l.msg === "request" && l.request_id === id)
      assert.strictEqual(logged.length, 1, `one line for ${id}`)
      assert.strictEqual(logged[0]!.status, answer.status)
      assert.strictEqual(logged[0]!.level, "info")
      assert.isNumber(logged[0]!.duration_ms)
    }
    const first = lines.find((l) => l.request_id === answers[0]!.headers.get("x-request-id"))!
    assert.deepInclude(first, { method: "GET", route: "/v2/gpu/rental/prices/latest", status: 200 })
    assert.match(String(first.principal_id), /^tok-/)
    assert.notProperty(lines.find((l) => l.request_id === answers[3]!.headers.get("x-request-id")), "principal_id", "no principal for a bad token")
    assert.strictEqual(lines.find((l) => l.msg === "request" && l.route === "/readyz")?.level, "debug")
    assert.strictEqual(lines[0]!.msg, "listening")

    // A client that leaves before its answer is a 499 request, not an internal error.
    const abandoned = await holdRequest(port, "/supply/procurements", {
      authorization: `Bearer ${procurer}`, "content-type": "application/json", "idempotency-key": "abandoned"
    }, "{}")
    abandoned.abandon()
    await waitFor("the abandoned request's line", () => cleanLog(tree).some((l) => l.msg === "request" && l.status === 499), 10_000)
    assert.deepInclude(cleanLog(tree).find((l) => l.status === 499), { method: "POST", route: "/supply/procurements" })
    assert.notInclude(cleanLog(tree).map((l) => l.level), "error")
    assert.strictEqual(total(await scrape(), "gpu_market_http_requests_total", { route: "/supply/procurements", status: "499" }), 1)

    process.kill(tree.child.pid!, "SIGTERM")
    assert.deepStrictEqual(await tree.exited, { code: 0, signal: null })
    assert.strictEqual(cleanLog(tree).at(-1)!.msg, "stopped")
  })

  it("Redis frozen: /readyz 503 and, once the breaker opens, 503s without a storage call; thawed: ready again without a restart", { timeout: 120_000 }, async () => {
    const { get, scrape, tree } = await serve(["--metrics"])
    assert.strictEqual((await get(LATEST, reader)).status, 200)
    redis.pause()
    const down = await get("/readyz")
    assert.strictEqual(down.status, 503)
    assert.match(down.headers.get("content-type") ?? "", /^application\/problem\+json/)
    assert.strictEqual(JSON.parse(down.text).code, "storage_unavailable")

    // Each request waits out the command timeout until the breaker has seen enough of them fail.
    let shortCircuited = false
    for (let i = 0; i < 6 && !shortCircuited; i++) {
      const r = await get(LATEST, reader)
      assert.strictEqual(r.status, 503, r.text)
      shortCircuited = JSON.parse(r.text).detail.includes("not tried")
    }
    assert.isTrue(shortCircuited, "the breaker opened")
    const open = await scrape()
    assert.strictEqual(total(open, "gpu_market_storage_up"), 0)
    const answers = await Promise.all(Array.from({ length: 20 }, () => get(LATEST, reader)))
    const readyz = await get("/readyz")
    const stillOpen = await scrape()
    for (const r of [...answers, readyz]) {
      assert.strictEqual(r.status, 503)
      assert.include(JSON.parse(r.text).detail, "not tried", "answered by the open breaker")
    }
    assert.strictEqual(storageCalls(stillOpen), storageCalls(open), "no call reached storage while the breaker was open")
    assert.isAtLeast(total(stillOpen, "gpu_market_storage_short_circuited_total") - total(open, "gpu_market_storage_short_circuited_total"), 21)

    redis.resume()
    await waitFor("/readyz 200 again", async () => (await get("/readyz")).status === 200, 30_000)
    assert.strictEqual((await get(LATEST, reader)).status, 200)
    assert.strictEqual(total(await scrape(), "gpu_market_storage_up"), 1)
    // Log lines reach stderr within 20 ms of being logged, not at once.
    const said = () => cleanLog(tree).map((l) => `${l.level} ${l.msg}`)
    await waitFor("the breaker's lines in the log", () => said().includes("info storage is reachable again; calls go through"), 5_000)
    assert.include(said(), "warn storage is unavailable; calls fail at once until a probe reaches it")
  })

  it("/metrics is not served unless asked for, /dashboard unless turned off; bad settings are refused with a reason", { timeout: 120_000 }, async () => {
    const { get } = await serve([])
    const r = await get("/metrics")
    assert.strictEqual(r.status, 404)
    assert.strictEqual(JSON.parse(r.text).code, "not_found")
    assert.strictEqual((await get("/dashboard")).status, 200)
    const without = await serve(["--no-dashboard"])
    const page = await without.get("/dashboard")
    assert.strictEqual(page.status, 404)
    assert.strictEqual(JSON.parse(page.text).code, "not_found")
    assert.strictEqual((await without.get("/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm", reader)).status, 200, "the API itself still served")
    const bad = spawnSync("node", [BIN, "serve", "--port", "1", "--log-level", "loud"], { encoding: "utf8", env: { ...process.env, GPU_MARKET_REDIS_URL: "" } })
    assert.notStrictEqual(bad.status, 0)
    assert.include(bad.stderr, `--log-level is "loud"; expected one of`)
    const badSwitch = spawnSync("node", [BIN, "serve", "--port", "1"], { encoding: "utf8", env: { ...process.env, GPU_MARKET_REDIS_URL: "", GPU_MARKET_DASHBOARD: "maybe" } })
    assert.notStrictEqual(badSwitch.status, 0)
    assert.include(badSwitch.stderr, `GPU_MARKET_DASHBOARD is "maybe"; expected 1 (serve /dashboard) or 0`)
  })

  it("--feed-heartbeat-ms sets how often a quiet change-feed stream gets a ping; under a second is refused with a reason", { timeout: 120_000 }, async () => {
    const { port } = await serve(["--feed-heartbeat-ms", "1000"])
    const started = Date.now()
    const response = await fetch(`http://127.0.0.1:${port}/v2/events`, { headers: { authorization: `Bearer ${reader}` } })
    assert.strictEqual(response.status, 200)
    const stream = response.body!.getReader()
    let text = ""
    while ((text.match(/^: ping$/gm) ?? []).length < 2) text += new TextDecoder().decode((await stream.read()).value)
    await stream.cancel()
    // Two pings at the default (15 s) would take 30 s.
    assert.isBelow(Date.now() - started, 10_000)
    const bad = spawnSync("node", [BIN, "serve", "--port", "1"], {
      encoding: "utf8", env: { ...process.env, GPU_MARKET_REDIS_URL: redis.url, GPU_MARKET_REDIS_PREFIX: prefix, GPU_MARKET_FEED_HEARTBEAT_MS: "500", GPU_MARKET_DEMO: "0" }
    })
    assert.notStrictEqual(bad.status, 0)
    assert.include(bad.stderr, "heartbeat interval is 500 ms; it must be at least 1000")
  })
})
