import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createMarket, type Market, type PortableMarketStorage } from "@gpu-market/core"
import { type CorsOptions, type HandlerOptions, nodeHandler } from "@gpu-market/http-adapter"
import { redis } from "@gpu-market/storage-redis"
import { sqlite } from "@gpu-market/storage-sqlite"
import { createServer, type IncomingHttpHeaders, request } from "node:http"
import type { AddressInfo } from "node:net"
import { brotliDecompressSync, gunzipSync } from "node:zlib"
import { ADAPTER_LAST_DAY, seedMarket, tempDb } from "./support/adapters"
import { dayIso, observations, TOKENS } from "./support/market"
import { type RedisServer, startRedis, uniquePrefix } from "./support/redis"

/**
 * HTTP caching and transfer on a real node:http server (port 0) over a real SQLite file and a
 * real redis-server: strong ETags and 304s that follow the data and the caller's entitlements,
 * gzip and brotli negotiated from Accept-Encoding, and CORS for listed origins only. Requests go
 * through node:http, not fetch, so the bytes on the wire are what the test sees.
 */

const ALLOWED = "https://app.example"

/** A reply as it came off the wire. */
interface Raw {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  readonly body: Buffer
}

/** The market's Node handler on a node:http server on a free port, and `close` for both. */
const serveMarket = async (storage: PortableMarketStorage, options: Omit<HandlerOptions, "baseUrl"> = {}) => {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const closeServer = () => new Promise<void>((resolve) => server.close(() => resolve()))
  const market = await createMarket({ storage }).catch(async (e: unknown) => {
    await closeServer()
    throw e
  })
  try {
    const handler = await nodeHandler(market, { baseUrl: origin, ...options })
    server.on("request", handler.handle)
    return { origin, close: async () => { await closeServer(); await market.close() } }
  } catch (e) {
    await closeServer()
    await market.close()
    throw e
  }
}

/** One request; the body is collected as sent (no decoding). */
const raw = (url: string, options: { readonly token?: string; readonly method?: string; readonly headers?: Readonly<Record<string, string>> } = {}): Promise<Raw> =>
  new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...options.headers }
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
    const req = request(url, { method: options.method ?? "GET", headers, agent: false }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }))
      res.on("error", reject)
    })
    req.on("error", reject)
    req.end()
  })

/** Whether `later` was counted in a newer rate-limit window than `earlier`: its reset is further off. */
const windowTurned = (earlier: Raw, later: Raw) => Number(later.headers["x-ratelimit-reset"]) > Number(earlier.headers["x-ratelimit-reset"])

const varyOf = (r: Raw) => String(r.headers.vary ?? "").split(",").map((f) => f.trim().toLowerCase()).filter((f) => f !== "")

/** A v-alpha product in a region the fixture never lists: ingesting it adds a row to v-alpha's `/latest`. */
const newAlphaRow = () => ({ ...observations(ADAPTER_LAST_DAY)[0]!, region: "ap-south", vendor_region: "ap-south-1", extracted_at: dayIso(ADAPTER_LAST_DAY + 1) })
/** A v-beta price change: it changes v-beta's pages, not v-alpha's. */
const betaChange = () => {
  const o = observations(ADAPTER_LAST_DAY).find((x) => x.vendor === "v-beta")!
  return { ...o, price_usd_per_gpu_hour: o.price_usd_per_gpu_hour! + 7, raw_price: o.raw_price + 7 * o.gpu_count, extracted_at: dayIso(ADAPTER_LAST_DAY + 1) }
}

const ALPHA = "/v2/gpu/rental/prices/latest?vendor=v-alpha&page_size=100"

const BACKENDS: ReadonlyArray<readonly [string, () => Promise<{ readonly storage: PortableMarketStorage; readonly stop: () => Promise<void> }>]> = [
  ["SQLite", async () => ({ storage: sqlite(tempDb("transfer")), stop: async () => {} })],
  ["Redis", async () => {
    const server: RedisServer = await startRedis()
    return { storage: redis(server.url, uniquePrefix("transfer")), stop: () => server.stop() }
  }]
]

for (const [name, open] of BACKENDS) {
  describe(`conditional requests on ${name}`, () => {
    let stop: () => Promise<void> = async () => {}
    let writer: Market | undefined
    let host: Awaited<ReturnType<typeof serveMarket>> | undefined
    beforeAll(async () => {
      const backend = await open()
      stop = backend.stop
      writer = await createMarket({ storage: backend.storage })
      await seedMarket(writer)
      host = await serveMarket(backend.storage)
    }, 120_000)
    afterAll(async () => {
      await host?.close()
      await writer?.close()
      await stop()
    })

    it("an unchanged page is 304 with no body, keeping the rate-limit and request-id headers; a write that changes it gives 200 with the new rows and a new ETag", async () => {
      const first = await raw(`${host!.origin}${ALPHA}`, { token: "all" })
      assert.strictEqual(first.status, 200, first.body.toString())
      const etag = first.headers.etag!
      assert.match(etag, /^"[A-Za-z0-9_-]{22}"$/)
      assert.strictEqual(first.headers["cache-control"], "private, max-age=0, must-revalidate")
      // Nothing random in the page: the same request answers the same bytes under the same tag.
      const again = await raw(`${host!.origin}${ALPHA}`, { token: "all" })
      assert.strictEqual(again.headers.etag, etag)
      assert.deepStrictEqual(again.body, first.body)

      for (const ifNoneMatch of [etag, `"elsewhere", W/${etag}`, "*"]) {
        const before = await raw(`${host!.origin}${ALPHA}`, { token: "all" })
        const cached = await raw(`${host!.origin}${ALPHA}`, { token: "all", headers: { "if-none-match": ifNoneMatch } })
        assert.strictEqual(cached.status, 304, ifNoneMatch)
        assert.strictEqual(cached.body.length, 0)
        assert.strictEqual(cached.headers.etag, etag)
        assert.strictEqual(cached.headers["cache-control"], "private, max-age=0, must-revalidate")
        assert.strictEqual(cached.headers["x-ratelimit-limit"], "100000")
        // Unless a new one-minute window began in between (its reset is then further off), a 304 counts like any request.
        if (!windowTurned(before, cached)) {
          assert.strictEqual(Number(cached.headers["x-ratelimit-remaining"]), Number(before.headers["x-ratelimit-remaining"]) - 1)
        }
        assert.match(String(cached.headers["x-request-id"]), /^[0-9a-f-]{36}$/)
      }
      assert.strictEqual((await raw(`${host!.origin}${ALPHA}`, { token: "all", headers: { "if-none-match": "\"elsewhere\"" } })).status, 200)

      // A write elsewhere leaves the page, and its tag, as they were.
      await writer!.ingest.rental([betaChange()])
      assert.strictEqual((await raw(`${host!.origin}${ALPHA}`, { token: "all", headers: { "if-none-match": etag } })).status, 304)

      await writer!.ingest.rental([newAlphaRow()])
      const changed = await raw(`${host!.origin}${ALPHA}`, { token: "all", headers: { "if-none-match": etag } })
      assert.strictEqual(changed.status, 200)
      assert.notStrictEqual(changed.headers.etag, etag)
      const rows = JSON.parse(changed.body.toString()).data as Array<{ region: string }>
      assert.strictEqual(rows.length, JSON.parse(first.body.toString()).data.length + 1)
      assert.isTrue(rows.some((r) => r.region === "ap-south"))
      assert.strictEqual((await raw(`${host!.origin}${ALPHA}`, { token: "all", headers: { "if-none-match": changed.headers.etag! } })).status, 304)
    })

    it("every kind of data endpoint is tagged and revalidates: latest, as-of, history, metadata", async () => {
      for (const path of [
        "/v2/gpu/rental/prices/latest?gpu_canonical_name=l40s&page_size=5",
        "/v2/gpu/rental/prices/as-of?vendor=v-gamma&at=2026-05-05T00:00:00Z&page_size=5",
        "/v2/gpu/rental/prices/history?vendor=v-gamma&start=2026-05-01&end=2026-05-08&page_size=5",
        "/v2/gpu/rental/prices/metadata"
      ]) {
        const page = await raw(`${host!.origin}${path}`, { token: "all" })
        assert.strictEqual(page.status, 200, `${path}: ${page.body}`)
        assert.isString(page.headers.etag, path)
        const next = JSON.parse(page.body.toString()).meta?.next?.url as string | undefined
        assert.strictEqual((await raw(`${host!.origin}${path}`, { token: "all", headers: { "if-none-match": page.headers.etag! } })).status, 304, path)
        // A next page's token is bound to the caller and position only: following it twice is one tag.
        if (next !== undefined) {
          const [a, b] = [await raw(next, { token: "all" }), await raw(next, { token: "all" })]
          assert.strictEqual(a.status, 200)
          assert.strictEqual(a.headers.etag, b.headers.etag, next)
        }
      }
    })

    it("ETags differ between callers whose entitlements differ, even where the bytes are the same", async () => {
      const replies = await Promise.all(["all", "other", "since", "rolling"].map((token) => raw(`${host!.origin}${ALPHA}`, { token })))
      for (const r of replies) assert.strictEqual(r.status, 200, r.body.toString())
      // One page, row for row, for all four: only who is asking differs.
      for (const r of replies) assert.deepStrictEqual(r.body, replies[0]!.body)
      assert.strictEqual(new Set(replies.map((r) => r.headers.etag)).size, 4)
      const crossed = await raw(`${host!.origin}${ALPHA}`, { token: "since", headers: { "if-none-match": replies[0]!.headers.etag! } })
      assert.strictEqual(crossed.status, 200)
    })

    it("one caller's page, answered whole from the response cache, has another ETag when their grants of another type differ", async () => {
      // One principal id, two entitlements: the cached /latest answer is the same for both (it
      // follows the rental grant alone), the tag kept with it must not be.
      const rentalOnly = await writer!.tokens.create({ ...TOKENS.all, id: "t-audience" })
      const withHardware = await writer!.tokens.create({
        ...TOKENS.all, id: "t-audience", grants: { ...TOKENS.all.grants, gpu_hardware_prices: { history: { _tag: "unrestricted" } } }
      })
      const replies = []
      for (const token of [rentalOnly, withHardware, rentalOnly, withHardware]) replies.push(await raw(`${host!.origin}${ALPHA}`, { token }))
      for (const r of replies) assert.strictEqual(r.status, 200, r.body.toString())
      for (const r of replies) assert.deepStrictEqual(r.body, replies[0]!.body)
      const tags = replies.map((r) => r.headers.etag)
      assert.notStrictEqual(tags[0], tags[1])
      assert.deepStrictEqual(tags.slice(2), tags.slice(0, 2))
      const crossed = await raw(`${host!.origin}${ALPHA}`, { token: withHardware, headers: { "if-none-match": tags[0]! } })
      assert.strictEqual(crossed.status, 200)
    })

    it("a 304 is still counted: a token of 3 a minute revalidates twice, then gets 429 with Retry-After", async () => {
      const path = `${host!.origin}/v2/gpu/rental/prices/latest?vendor=v-alpha&page_size=1`
      // A window that turns mid-run restarts the count: then run again, with a fresh token.
      for (let attempt = 0; ; attempt++) {
        const token = await writer!.tokens.create({ ...TOKENS.limited, id: `limited-304-${attempt}` })
        const first = await raw(path, { token })
        assert.strictEqual(first.status, 200)
        const replies = [first]
        for (let i = 0; i < 3; i++) replies.push(await raw(path, { token, headers: { "if-none-match": first.headers.etag! } }))
        if (attempt === 0 && replies.some((r, i) => i > 0 && windowTurned(replies[i - 1]!, r))) continue
        assert.deepStrictEqual(replies.map((r) => [r.status, r.headers["x-ratelimit-remaining"]]), [[200, "2"], [304, "1"], [304, "0"], [429, "0"]])
        assert.isDefined(replies[3]!.headers["retry-after"])
        return
      }
    })
  })
}

describe("compression and CORS", () => {
  const db = tempDb("transfer-http")
  let writer: Market | undefined
  let host: Awaited<ReturnType<typeof serveMarket>> | undefined
  let plain: Awaited<ReturnType<typeof serveMarket>> | undefined
  const cors: CorsOptions = { origins: [ALLOWED, "http://localhost:5173"] }
  beforeAll(async () => {
    writer = await createMarket({ storage: sqlite(db) })
    await seedMarket(writer)
    host = await serveMarket(sqlite(db), { cors })
    plain = await serveMarket(sqlite(db))
  }, 120_000)
  afterAll(async () => {
    await host?.close()
    await plain?.close()
    await writer?.close()
  })

  const BIG = "/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm,a100-sxm-80gb,l40s&page_size=100"
  const SMALL = "/v2/gpu/rental/prices/latest?vendor=v-alpha&gpu_canonical_name=l40s&region=us-east&contract_type=spot&min_gpu_count=8"

  it("gzip and br as Accept-Encoding asks (q-values, q=0, identity, *), decoding to the identity bytes under a tag of their own", async () => {
    const identity = await raw(`${plain!.origin}${BIG}`, { token: "all" })
    assert.strictEqual(identity.status, 200)
    assert.isAbove(identity.body.length, 10_000)
    assert.isUndefined(identity.headers["content-encoding"])
    assert.include(varyOf(identity), "accept-encoding")
    const tag = identity.headers.etag!.slice(1, -1)
    const cases: ReadonlyArray<readonly [string, "gzip" | "br" | undefined]> = [
      ["gzip", "gzip"], ["br", "br"], ["gzip, deflate, br", "br"], ["br;q=0.5, gzip", "gzip"], ["gzip;q=0.2, br;q=0.1", "gzip"],
      ["x-gzip", "gzip"], ["*", "br"], ["br;q=0, *", "gzip"], ["br;q=0, gzip;q=0", undefined], ["identity", undefined],
      ["gzip;q=0.5, identity", undefined], ["identity;q=0, *;q=0", undefined], ["deflate", undefined], ["gzip;q=oops, br", "br"], ["", undefined]
    ]
    for (const [accept, coding] of cases) {
      const r = await raw(`${plain!.origin}${BIG}`, { token: "all", headers: { "accept-encoding": accept } })
      assert.strictEqual(r.status, 200)
      assert.strictEqual(r.headers["content-encoding"], coding, accept)
      assert.include(varyOf(r), "accept-encoding", accept)
      assert.strictEqual(Number(r.headers["content-length"]), r.body.length)
      const decoded = coding === "gzip" ? gunzipSync(r.body) : coding === "br" ? brotliDecompressSync(r.body) : r.body
      assert.deepStrictEqual(decoded, identity.body, accept)
      assert.strictEqual(r.headers.etag, coding === undefined ? `"${tag}"` : `"${tag}-${coding === "gzip" ? "gz" : "br"}"`, accept)
      if (coding !== undefined) assert.isBelow(r.body.length, identity.body.length / 4, accept)
    }
    const small = await raw(`${plain!.origin}${SMALL}`, { token: "all", headers: { "accept-encoding": "gzip, br" } })
    assert.strictEqual(small.status, 200, small.body.toString())
    assert.isBelow(small.body.length, 1024)
    assert.isUndefined(small.headers["content-encoding"], "a body under 1 KiB goes as it is")
    assert.include(varyOf(small), "accept-encoding")
  })

  it("If-None-Match matches the variant the client holds, if it still accepts that coding", async () => {
    const url = `${plain!.origin}${BIG}`
    const gz = await raw(url, { token: "all", headers: { "accept-encoding": "gzip" } })
    const tag = gz.headers.etag!
    assert.match(tag, /-gz"$/)
    const identityTag = `${tag.slice(0, -4)}"`
    const ask = async (acceptEncoding: string, ifNoneMatch: string) =>
      raw(url, { token: "all", headers: { "accept-encoding": acceptEncoding, "if-none-match": ifNoneMatch } })
    const same = await ask("gzip", tag)
    assert.deepStrictEqual([same.status, same.headers.etag], [304, tag])
    // The client holds the identity copy and now also takes br: its copy is still good.
    const held = await ask("br, gzip", identityTag)
    assert.deepStrictEqual([held.status, held.headers.etag], [304, identityTag])
    // Of several copies held, the one in the coding it would get now.
    const several = await ask("br", `${identityTag}, ${tag}, ${tag.replace(/-gz"$/, "-br\"")}`)
    assert.deepStrictEqual([several.status, several.headers.etag], [304, tag.replace(/-gz"$/, "-br\"")])
    // A gzip copy is no use to a client that no longer takes gzip.
    const refused = await ask("br, gzip;q=0", tag)
    assert.deepStrictEqual([refused.status, refused.headers["content-encoding"]], [200, "br"])
    assert.strictEqual((await ask("gzip", `W/${tag}`)).status, 304)
  })

  it("/openapi.json: a public strong ETag, 304 on revalidation, and compressed when asked", async () => {
    const doc = await raw(`${plain!.origin}/openapi.json`)
    assert.strictEqual(doc.status, 200)
    assert.strictEqual(doc.headers["cache-control"], "public, max-age=300")
    const br = await raw(`${plain!.origin}/openapi.json`, { headers: { "accept-encoding": "br" } })
    assert.deepStrictEqual(brotliDecompressSync(br.body), doc.body)
    assert.strictEqual(br.headers.etag, `${doc.headers.etag!.slice(0, -1)}-br"`)
    const again = await raw(`${plain!.origin}/openapi.json`, { headers: { "accept-encoding": "br", "if-none-match": br.headers.etag! } })
    assert.deepStrictEqual([again.status, again.body.length], [304, 0])
  })

  it("CORS: an allowed origin gets the headers on answers and problems, 304s included; any other origin gets none", async () => {
    const page = await raw(`${host!.origin}${ALPHA}`, { token: "all", headers: { origin: ALLOWED } })
    assert.strictEqual(page.status, 200)
    assert.strictEqual(page.headers["access-control-allow-origin"], ALLOWED)
    const exposed = String(page.headers["access-control-expose-headers"]).split(",").map((h) => h.trim().toLowerCase())
    for (const h of ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "retry-after", "etag", "x-request-id"]) assert.include(exposed, h)
    assert.includeMembers(varyOf(page), ["origin", "accept-encoding"])
    assert.isUndefined(page.headers["access-control-allow-credentials"])

    const other = await raw(`${host!.origin}/v2/gpu/rental/prices/latest?vendor=v-beta&page_size=100`, { token: "all", headers: { origin: "http://localhost:5173" } })
    assert.strictEqual(other.headers["access-control-allow-origin"], "http://localhost:5173")
    const notModified = await raw(`${host!.origin}${ALPHA}`, { token: "all", headers: { origin: ALLOWED, "if-none-match": page.headers.etag! } })
    assert.strictEqual(notModified.status, 304)
    assert.strictEqual(notModified.headers["access-control-allow-origin"], ALLOWED)
    const problem = await raw(`${host!.origin}${ALPHA}`, { token: "nope", headers: { origin: ALLOWED } })
    assert.strictEqual(problem.status, 401)
    assert.strictEqual(problem.headers["access-control-allow-origin"], ALLOWED)

    for (const origin of ["https://evil.example", "https://app.example.evil.example", "null", "https://APP.example"]) {
      const r = await raw(`${host!.origin}${ALPHA}`, { token: "all", headers: { origin } })
      assert.strictEqual(r.status, 200)
      assert.isUndefined(r.headers["access-control-allow-origin"], origin)
      assert.isUndefined(r.headers["access-control-expose-headers"], origin)
      assert.include(varyOf(r), "origin")
    }
  })

  it("CORS: a preflight from an allowed origin is answered 204 without a token; one from another origin is not", async () => {
    const preflight = (origin: string) => raw(`${host!.origin}${ALPHA}`, {
      method: "OPTIONS",
      headers: { origin, "access-control-request-method": "GET", "access-control-request-headers": "authorization, if-none-match" }
    })
    const ok = await preflight(ALLOWED)
    assert.strictEqual(ok.status, 204)
    assert.strictEqual(ok.body.length, 0)
    assert.strictEqual(ok.headers["access-control-allow-origin"], ALLOWED)
    assert.include(String(ok.headers["access-control-allow-methods"]), "GET")
    const allowHeaders = String(ok.headers["access-control-allow-headers"]).split(",").map((h) => h.trim().toLowerCase())
    assert.includeMembers(allowHeaders, ["authorization", "if-none-match"])
    assert.strictEqual(ok.headers["access-control-max-age"], "600")
    assert.include(varyOf(ok), "origin")

    const refused = await preflight("https://evil.example")
    assert.strictEqual(refused.status, 405)
    assert.isUndefined(refused.headers["access-control-allow-origin"])
    assert.isUndefined(refused.headers["access-control-allow-methods"])
  })

  it("CORS is off by default: no CORS headers and no Vary: Origin for any origin, preflights included", async () => {
    const page = await raw(`${plain!.origin}${ALPHA}`, { token: "all", headers: { origin: ALLOWED } })
    assert.strictEqual(page.status, 200)
    assert.isUndefined(page.headers["access-control-allow-origin"])
    assert.notInclude(varyOf(page), "origin")
    const preflight = await raw(`${plain!.origin}${ALPHA}`, { method: "OPTIONS", headers: { origin: ALLOWED, "access-control-request-method": "GET" } })
    assert.strictEqual(preflight.status, 405)
    assert.isUndefined(preflight.headers["access-control-allow-origin"])
  })

  it("an origin no browser sends is refused before anything is built", async () => {
    const market = await createMarket({ storage: sqlite(db) })
    try {
      for (const origins of [["https://app.example/"], ["app.example"], ["https://app.example/path"], ["ftp://files.example"]]) {
        const refused = await nodeHandler(market, { cors: { origins } }).then(() => undefined, (e: unknown) => e)
        assert.instanceOf(refused, TypeError, `${origins[0]} was accepted`)
        assert.include((refused as Error).message, "cors.origins")
      }
    } finally {
      await market.close()
    }
  })

  it("a change-feed heartbeat that is not a whole number of ms above 0 is refused before anything is built", async () => {
    const market = await createMarket({ storage: sqlite(db) })
    try {
      for (const feedHeartbeatMs of [0, -1, 0.5, Number.NaN, Infinity]) {
        const refused = await nodeHandler(market, { feedHeartbeatMs }).then(() => undefined, (e: unknown) => e)
        assert.instanceOf(refused, RangeError, `${feedHeartbeatMs} was accepted`)
        assert.include((refused as Error).message, "feedHeartbeatMs")
      }
    } finally {
      await market.close()
    }
  })
})
