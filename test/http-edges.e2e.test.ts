import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Auth, createMarket, type Principal } from "@gpu-market/core"
import { MAX_BODY_DEPTH } from "@gpu-market/core/adapters"
import * as RedisStorage from "@gpu-market/storage-redis"
import { sqlite } from "@gpu-market/storage-sqlite"
import { Effect } from "effect"
import { join } from "node:path"
import { tempDb } from "./support/adapters"
import { TOKENS } from "./support/market"
import { freePort, type Started, startUntil } from "./support/process"
import { type RawReply, rawRequest } from "./support/raw-http"
import { type RedisServer, startRedis, uniquePrefix } from "./support/redis"

/**
 * The edges of the standalone server, on each backend, as `gpu-market serve` runs it: bodies
 * nested too deep, bodies too large however they are framed, bodies on a GET, requests Node's
 * parser refuses, and clients too slow. Each gets a problem+json answer with its status, never a
 * dropped connection, and the server never reads a body it does not need.
 */

const ROOT = join(import.meta.dirname, "..")
const BIN = join(ROOT, "node_modules/.bin/gpu-market")
const SECRET = "edges-token"
const PRINCIPAL: Principal = { ...TOKENS.all, id: "t-edges" as Principal["id"], name: "edges", procurement: true }
/** Short timeouts, set the way an operator sets them. */
const TIMEOUTS = { GPU_MARKET_HEADERS_TIMEOUT_MS: "1000", GPU_MARKET_REQUEST_TIMEOUT_MS: "1500", GPU_MARKET_KEEP_ALIVE_TIMEOUT_MS: "1000" }
/** A body of 100 MB is far more than the kernel buffers of both ends hold: a server that read it in full took more than this. */
const HUGE = 100_000_000
const UNREAD = 60_000_000

interface Backend {
  readonly name: string
  /** Issues the token, and the `serve` arguments that name the store. */
  readonly prepare: () => Promise<ReadonlyArray<string>>
  readonly cleanup: () => Promise<void>
}

let redis: RedisServer | undefined
const backends: ReadonlyArray<Backend> = [
  {
    name: "SQLite",
    prepare: async () => {
      const db = tempDb("edges")
      const market = await createMarket({ storage: sqlite(db) })
      try {
        await market.tokens.create(PRINCIPAL, SECRET)
      } finally {
        await market.close()
      }
      return ["--db", db]
    },
    cleanup: async () => undefined
  },
  {
    name: "Redis",
    prepare: async () => {
      redis = await startRedis()
      const prefix = uniquePrefix("edges")
      await Effect.runPromise(Effect.flatMap(Auth, (auth) => auth.issue(PRINCIPAL, SECRET)).pipe(
        Effect.provide(Auth.Default),
        Effect.provide(RedisStorage.layer({ url: redis.url, prefix }))
      ))
      return ["--redis", redis.url, "--redis-prefix", prefix]
    },
    cleanup: async () => redis?.stop()
  }
]

const nested = (depth: number) => "[".repeat(depth) + "]".repeat(depth)

const assertProblem = (reply: { readonly status: number; readonly headers: Readonly<Record<string, string>>; readonly body: string }, status: number, code: string) => {
  assert.strictEqual(reply.status, status, reply.body)
  assert.strictEqual(reply.headers["content-type"], "application/problem+json")
  assert.strictEqual(reply.headers["x-content-type-options"], "nosniff")
  const problem = JSON.parse(reply.body) as { type: string; title: string; status: number; code: string; detail: string; request_id: string }
  assert.strictEqual(problem.type, `/problems/${code}`)
  assert.isNotEmpty(problem.title)
  assert.strictEqual(problem.status, status)
  assert.strictEqual(problem.code, code)
  assert.strictEqual(problem.request_id, reply.headers["x-request-id"])
  assert.match(problem.request_id, /^[0-9a-f-]{36}$/)
  assert.notMatch(problem.detail, /stack|exceeded|Error/)
  return problem
}

/** A closed connection after the answer: the body the server did not read is not drained for the next request. */
const assertClosed = (reply: RawReply) => assert.isDefined(reply.closedAfterMs, "the server closed the connection")

describe.each(backends)("the $name server's edges", (backend) => {
  let server: Started
  let port: number
  const head = (line: string, ...headers: ReadonlyArray<string>) => [line, "Host: 127.0.0.1", `Authorization: Bearer ${SECRET}`, ...headers].join("\r\n")

  beforeAll(async () => {
    const store = await backend.prepare()
    port = await freePort()
    server = await startUntil(BIN, ["serve", ...store, "--port", String(port)], {
      cwd: ROOT, env: { ...process.env, NO_COLOR: "1", GPU_MARKET_REDIS_URL: "", ...TIMEOUTS }, ready: /listening on/, timeoutMs: 60_000
    })
  }, 120_000)

  afterAll(async () => {
    await server?.stop()
    await backend.cleanup()
  }, 60_000)

  const post = async (path: string, contentType: string, body: string) => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${SECRET}`, "content-type": contentType, "idempotency-key": "edges-1" },
      body
    })
    return { status: response.status, headers: Object.fromEntries(response.headers), body: await response.text() }
  }

  it(`a JSON or YAML body nested past ${MAX_BODY_DEPTH} levels is a 422 that says so`, async () => {
    const json = assertProblem(await post("/supply/procurements", "application/json", `{"offer_id":${nested(3000)}}`), 422, "validation_failed")
    assert.strictEqual(json.detail, `body: nested more than ${MAX_BODY_DEPTH} levels deep`)
    const yaml = assertProblem(await post("/supply/get_offers", "application/yaml", `gpu: ${nested(3000)}\ngpu_count: 1\n`), 422, "validation_failed")
    assert.strictEqual(yaml.detail, `body: nested more than ${MAX_BODY_DEPTH} levels deep`)
    // At the bound, nesting is not what is wrong with it.
    const within = assertProblem(await post("/supply/procurements", "application/json", `{"offer_id":${nested(MAX_BODY_DEPTH - 1)}}`), 422, "validation_failed")
    assert.notInclude(within.detail, "nested")
  })

  it("a chunked body past 16 KiB is a 413, whatever its size, and the rest of it is never read", async () => {
    const line = head("POST /supply/procurements HTTP/1.1", "Content-Type: application/json", "Idempotency-Key: edges-2", "Transfer-Encoding: chunked")
    const small = await rawRequest(port, line, { body: { bytes: 20_000, chunk: 4096, chunked: true } })
    assertProblem(small, 413, "payload_too_large")
    const huge = await rawRequest(port, line, { body: { bytes: HUGE, chunk: 65_536, chunked: true } })
    assertProblem(huge, 413, "payload_too_large")
    assertClosed(huge)
    assert.isBelow(huge.sent, UNREAD)
    // A declared length past the limit is refused before a byte of the body is read.
    const declared = await rawRequest(port, head("POST /supply/procurements HTTP/1.1", "Content-Type: application/json", "Idempotency-Key: edges-2", `Content-Length: ${HUGE}`), {
      body: { bytes: HUGE, chunk: 65_536 }
    })
    assertProblem(declared, 413, "payload_too_large")
    assert.isBelow(declared.sent, UNREAD)
  })

  it("a GET carrying a body is answered without reading it, and its connection closed", async () => {
    const path = "/v2/gpu/rental/prices/metadata"
    for (const framing of [`Content-Length: ${HUGE}`, "Transfer-Encoding: chunked"]) {
      const reply = await rawRequest(port, head(`GET ${path} HTTP/1.1`, framing), { body: { bytes: HUGE, chunk: 65_536, chunked: framing.startsWith("Transfer") } })
      assert.strictEqual(reply.status, 200, framing)
      assertClosed(reply)
      assert.isBelow(reply.sent, UNREAD, framing)
    }
    // A request without a body keeps its connection for the next one.
    const plain = await rawRequest(port, head(`GET ${path} HTTP/1.1`), { closeWithinMs: 500 })
    assert.strictEqual(plain.status, 200)
    assert.isUndefined(plain.closedAfterMs)
  })

  it("requests Node's parser refuses are problems too: 431 for a head too large, 400 for a malformed request line", async () => {
    const large = await rawRequest(port, head("GET /openapi.json HTTP/1.1", `X-Padding: ${"a".repeat(20_000)}`))
    assertProblem(large, 431, "header_fields_too_large")
    assertClosed(large)
    const target = assertProblem(await rawRequest(port, head("GET /a b HTTP/1.1")), 400, "malformed_request")
    assert.include(target.detail, "not valid HTTP/1.1")
    assertProblem(await rawRequest(port, head("G(T /openapi.json HTTP/1.1")), 400, "malformed_request")
  })

  it("HTTP/1.1 without Host is a 400 problem and its connection closed; HTTP/1.0 needs no Host", async () => {
    const noHost = await rawRequest(port, ["GET /openapi.json HTTP/1.1", `Authorization: Bearer ${SECRET}`].join("\r\n"))
    const problem = assertProblem(noHost, 400, "malformed_request")
    assert.include(problem.detail, "no Host header")
    assertClosed(noHost)
    const http10 = await rawRequest(port, "GET /openapi.json HTTP/1.0")
    assert.strictEqual(http10.status, 200)
    assert.strictEqual(http10.headers["content-type"], "application/json")
  })

  it("an expectation other than 100-continue is a 417 problem, body unread; 100-continue is met and the request served", async () => {
    const bogus = await rawRequest(port, head("GET /openapi.json HTTP/1.1", "Expect: 999-bogus"), { closeWithinMs: 500 })
    const problem = assertProblem(bogus, 417, "expectation_failed")
    assert.include(problem.detail, "999-bogus")
    assert.deepStrictEqual(bogus.interim, [])
    // Without a body pending, the connection stays for the request sent again.
    assert.isUndefined(bogus.closedAfterMs)
    const withBody = await rawRequest(port, head("POST /supply/procurements HTTP/1.1", "Content-Type: application/json", "Idempotency-Key: edges-4", "Expect: 999-bogus", `Content-Length: ${HUGE}`), {
      body: { bytes: HUGE, chunk: 65_536 }
    })
    assertProblem(withBody, 417, "expectation_failed")
    assertClosed(withBody)
    assert.isBelow(withBody.sent, UNREAD)
    const meetable = await rawRequest(port, head("GET /openapi.json HTTP/1.1", "Expect: 100-continue"))
    assert.deepStrictEqual(meetable.interim, [100])
    assert.strictEqual(meetable.status, 200)
    assert.strictEqual(meetable.headers["content-type"], "application/json")
    // An HTTP/1.0 request's expectation is ignored (RFC 9110 §10.1.1).
    assert.strictEqual((await rawRequest(port, "GET /openapi.json HTTP/1.0\r\nExpect: 999-bogus")).status, 200)
  })

  it("every answer says nosniff: data pages (read, read again), 304s, problems, probes, documents and the change feed", async () => {
    const base = `http://127.0.0.1:${port}`
    const auth = { authorization: `Bearer ${SECRET}` }
    // A `/latest` page: read, then from the page cache once asked twice.
    const page = `${base}/v2/gpu/rental/prices/latest?vendor=lambda`
    const first = await fetch(page, { headers: auth })
    const kept = await fetch(page, { headers: auth })
    const cached = await fetch(page, { headers: auth })
    const notModified = await fetch(page, { headers: { ...auth, "if-none-match": first.headers.get("etag")! } })
    assert.deepStrictEqual([first.status, kept.status, cached.status, notModified.status], [200, 200, 200, 304])
    const others = await Promise.all([
      fetch(page), fetch(`${base}/nowhere`, { headers: auth }), fetch(`${base}/openapi.json`), fetch(`${base}/healthz`), fetch(`${base}/readyz`),
      fetch(`${base}/docs`), fetch(page, { headers: { ...auth, "accept-encoding": "gzip" } })
    ])
    assert.deepStrictEqual(others.map((r) => r.status), [401, 404, 200, 200, 200, 200, 200])
    const feed = new AbortController()
    const events = await fetch(`${base}/v2/events`, { headers: auth, signal: feed.signal })
    feed.abort()
    assert.strictEqual(events.headers.get("content-type"), "text/event-stream")
    for (const response of [first, kept, cached, notModified, ...others, events]) {
      assert.strictEqual(response.headers.get("x-content-type-options"), "nosniff", `${response.url} ${response.status}`)
      if (response.status !== 304 && response.body !== null && response !== events) await response.arrayBuffer()
    }
  })

  it("a client too slow with its head or its body gets a 408, and an idle connection is closed", async () => {
    const slowHead = await rawRequest(port, "GET /openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n", { partial: true })
    assertProblem(slowHead, 408, "request_timeout")
    // A byte every 100 ms: the 1,000 bytes would take 100 s.
    const slowBody = await rawRequest(port, head("POST /supply/procurements HTTP/1.1", "Content-Type: application/json", "Idempotency-Key: edges-3", "Content-Length: 1000"), {
      body: { bytes: 1000, chunk: 1, pauseMs: 100 }
    })
    assertProblem(slowBody, 408, "request_timeout")
    assert.isBelow(slowBody.sent, 1000)
    const idle = await rawRequest(port, head("GET /openapi.json HTTP/1.1"), { closeWithinMs: 10_000 })
    assert.strictEqual(idle.status, 200)
    assertClosed(idle)
  })
})
