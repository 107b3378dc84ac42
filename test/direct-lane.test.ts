import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createMarket, type Market, type Storage, StorageError, withRateLimits } from "@gpu-market/core"
import { RentalPriceStore } from "@gpu-market/core/storage"
import { redis } from "@gpu-market/storage-redis"
import * as RedisStorage from "@gpu-market/storage-redis"
import { sqlite } from "@gpu-market/storage-sqlite"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Context, Effect, Layer, Runtime } from "effect"
import { createServer, request } from "node:http"
import type { AddressInfo } from "node:net"
import { brotliDecompressSync, gunzipSync } from "node:zlib"
import { seedMarket, tempDb } from "./support/adapters"
import { type LanesHost, startLanesHost } from "./support/lanes"
import { makeDirect, makeReplay, nodeLanes } from "../packages/http-adapter/src/internal"
import { TOKENS } from "./support/market"
import { type RedisServer, startRedis, uniquePrefix } from "./support/redis"

/**
 * The direct lane, as the standalone server and the Node handler run it: a plain data GET is
 * read and written without the platform, and its answer is the app's to the byte. A request the
 * lane does not take (`If-None-Match`, an `Origin`) is the app's own answer, so the two are
 * compared request by request; refusals and failed reads are the app's problems, counted once.
 */

/** A reply as sent: its status, headers and undecoded bytes. */
interface Raw {
  readonly status: number
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  readonly bytes: Buffer
}

const rawGet = (url: string, headers: Record<string, string>): Promise<Raw> =>
  new Promise((resolve, reject) => {
    request(url, { headers }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, bytes: Buffer.concat(chunks) }))
      res.on("error", reject)
    }).on("error", reject).end()
  })

/** Headers that differ between any two answers (their request, their moment, their connection). */
const PER_ANSWER = new Set(["x-request-id", "x-ratelimit-remaining", "x-ratelimit-reset", "date", "connection", "keep-alive"])

const lasting = (raw: Raw) =>
  Object.fromEntries(Object.entries(raw.headers).filter(([name]) => !PER_ANSWER.has(name)).sort(([a], [b]) => a.localeCompare(b)))

const decoded = (raw: Raw): Buffer => {
  const coding = raw.headers["content-encoding"]
  return coding === "gzip" ? gunzipSync(raw.bytes) : coding === "br" ? brotliDecompressSync(raw.bytes) : raw.bytes
}

/** An `If-None-Match` no answer's tag is: the lane leaves the request to the app, which answers 200. */
const TO_THE_APP = { "if-none-match": "\"not-a-tag-of-any-answer\"" }

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

const backends: ReadonlyArray<{
  readonly name: string
  readonly open: () => Promise<{ readonly reader: Layer.Layer<Storage, StorageError>; readonly writer: Market; readonly close: () => Promise<void> }>
}> = [
  {
    name: "sqlite",
    open: async () => {
      const db = tempDb("direct-lane")
      const writer = await createMarket({ storage: sqlite(db) })
      return { reader: SqliteStorage.layer({ filename: db }), writer, close: () => writer.close() }
    }
  },
  {
    name: "redis",
    open: async () => {
      const server: RedisServer = await startRedis()
      const prefix = uniquePrefix("direct-lane")
      const writer = await createMarket({ storage: redis(server.url, prefix) })
      return {
        reader: RedisStorage.layer({ url: server.url, prefix }),
        writer,
        close: async () => {
          await writer.close()
          await server.stop()
        }
      }
    }
  }
]

/** Pages of every kind the lane takes: a `/latest` page, a history window, metadata, a type with no rows, its metadata. */
const PAGES: ReadonlyArray<readonly [string, keyof typeof TOKENS]> = [
  ["/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm&sort_by=price_usd_per_gpu_hour&page_size=5", "all"],
  ["/v2/gpu/rental/prices/history?vendor=v-gamma&start=2026-05-01&end=2026-05-08&page_size=5", "all"],
  ["/v2/gpu/rental/prices/metadata", "all"],
  ["/v2/gpu/hardware/prices/latest", "hardwareOnly"],
  ["/v2/gpu/hardware/prices/metadata", "hardwareOnly"]
]

for (const backend of backends) {
  describe(`the direct lane (${backend.name})`, () => {
    let hosts: { readonly plain: LanesHost; readonly cors: LanesHost; readonly prefixed: LanesHost }
    let close = async () => {}
    beforeAll(async () => {
      const opened = await backend.open()
      close = opened.close
      await seedMarket(opened.writer)
      hosts = {
        plain: await startLanesHost(opened.reader),
        cors: await startLanesHost(opened.reader, { baseUrl: "http://replay.test", cors: { origins: ["https://app.example"] } }),
        prefixed: await startLanesHost(opened.reader, { baseUrl: "http://replay.test/market" })
      }
    }, 120_000)
    afterAll(async () => {
      for (const host of Object.values(hosts ?? {})) await host.close()
      await close()
    })

    it("answers a plain data GET with the app's bytes and headers, in every coding", async () => {
      const host = hosts.plain
      let coded = 0
      for (const [page, token] of PAGES) {
        for (const coding of [undefined, "gzip", "br"]) {
          // Each asked once by the lane and once with If-None-Match, which the replay leaves alone.
          const url = `${host.origin}${page}`
          const headers = { ...bearer(token), ...(coding === undefined ? {} : { "accept-encoding": coding }) }
          const taken = host.direct.length
          const lane = await rawGet(url, headers)
          assert.strictEqual(host.direct.length, taken + 1, `the lane answered ${url}: ${lane.status} ${lane.bytes.toString().slice(0, 200)}`)
          const app = await rawGet(url, { ...headers, ...TO_THE_APP })
          assert.strictEqual(host.direct.length, taken + 1, `the app answered ${url} with If-None-Match`)
          assert.strictEqual(lane.status, 200, `${url}: ${lane.bytes.toString().slice(0, 300)}`)
          assert.strictEqual(app.status, 200)
          assert.deepStrictEqual(lasting(lane), lasting(app), url)
          assert.isTrue(decoded(lane).equals(decoded(app)), url)
          // Bodies under 1 KiB go uncoded, as the app sends them.
          assert.strictEqual(lane.headers["content-encoding"], coding !== undefined && decoded(lane).length >= 1024 ? coding : undefined)
          if (coding !== undefined && lane.headers["content-encoding"] !== undefined) coded++
          assert.strictEqual(lane.headers["content-length"], String(lane.bytes.length))
          assert.match(String(lane.headers["x-request-id"]), /^[0-9a-f-]{36}$/)
          // One less, unless the minute's window turned between the two (then a new window's first).
          const remaining = [lane, app].map((r) => Number(r.headers["x-ratelimit-remaining"]))
          assert.isTrue(remaining[1] === remaining[0]! - 1 || remaining[1] === TOKENS[token].rate_limit_per_minute - 1, remaining.join(" → "))
          const answered = host.direct[taken]!
          assert.deepInclude(answered, { method: "GET", status: 200, principalId: TOKENS[token].id, requestId: String(lane.headers["x-request-id"]) })
          assert.strictEqual(answered.route, page.split("?")[0])
        }
      }
      assert.isAtLeast(coded, 4, "pages large enough to code were coded")
    })

    it("with CORS on, says its answers vary by Origin as the app's do; a request with an Origin is the app's", async () => {
      const host = hosts.cors
      const url = `${host.origin}${PAGES[0]![0]}&max_price_usd_per_gpu_hour=1000`
      const taken = host.direct.length
      const lane = await rawGet(url, bearer("all"))
      const app = await rawGet(url, { ...bearer("all"), ...TO_THE_APP })
      assert.strictEqual(host.direct.length, taken + 1)
      assert.strictEqual(lane.headers["vary"], "Accept-Encoding, Origin")
      assert.deepStrictEqual(lasting(lane), lasting(app))
      const browser = await rawGet(url, { ...bearer("all"), origin: "https://app.example" })
      assert.strictEqual(host.direct.length, taken + 1, "a browser's request went to the app")
      assert.strictEqual(browser.headers["access-control-allow-origin"], "https://app.example")
      assert.isTrue(browser.bytes.equals(lane.bytes))
    })

    it("serves under the base URL's path and without it, with next links under the base URL", async () => {
      const host = hosts.prefixed
      const query = "/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm&sort_by=price_usd_per_gpu_hour&page_size=2"
      const taken = host.direct.length
      const under = await rawGet(`${host.origin}/market${query}`, bearer("all"))
      const bare = await rawGet(`${host.origin}${query}&max_price_usd_per_gpu_hour=1000`, bearer("all"))
      assert.strictEqual(host.direct.length, taken + 2)
      assert.deepStrictEqual([under.status, bare.status], [200, 200])
      const [a, b] = [JSON.parse(under.bytes.toString()), JSON.parse(bare.bytes.toString())]
      assert.deepStrictEqual(a.data, b.data)
      assert.match(a.meta.next.url, /^http:\/\/replay\.test\/market\/v2\/gpu\/rental\/prices\/latest\?/)
      assert.strictEqual(host.direct[taken]!.route, "/v2/gpu/rental/prices/latest")
    })

    it("leaves refusals and failed reads to the app: its problems, each request counted once", async () => {
      const host = hosts.plain
      const url = `${host.origin}${PAGES[0]![0]}`
      const taken = host.direct.length
      const unknown = await rawGet(url, bearer("not-a-token"))
      assert.strictEqual(unknown.status, 401)
      assert.strictEqual(unknown.headers["www-authenticate"], "Bearer realm=\"gpu-market\"")
      const bad = [await rawGet(`${url}&no_such_parameter=1`, bearer("other")), await rawGet(`${url}&no_such_parameter=2`, bearer("other"))]
      assert.deepStrictEqual(bad.map((r) => r.status), [422, 422])
      assert.strictEqual(bad[0]!.headers["content-type"], "application/problem+json")
      const remaining = bad.map((r) => Number(r.headers["x-ratelimit-remaining"]))
      // One less: counted by the lane's admission only, unless the minute's window turned between the two.
      assert.isTrue(remaining[1] === remaining[0]! - 1 || remaining[1] === TOKENS.other.rate_limit_per_minute - 1, remaining.join(" → "))
      const forbidden = await rawGet(url, bearer("hardwareOnly"))
      assert.strictEqual(forbidden.status, 403)
      assert.strictEqual(host.direct.length, taken, "no refusal is the lane's")

      const limited = []
      for (let i = 0; i < 4; i++) limited.push(await rawGet(`${url}&max_price_usd_per_gpu_hour=${200 + i}`, bearer("limited")))
      // 429 on the fourth, unless the minute's window turned during the four (then a new window's first).
      const last = limited[3]!
      assert.deepStrictEqual(limited.slice(0, 3).map((r) => r.status), [200, 200, 200])
      assert.isTrue(last.status === 429 || last.headers["x-ratelimit-remaining"] === "2", `${last.status}`)
      if (last.status === 429) assert.strictEqual(last.headers["x-ratelimit-remaining"], "0")
    })

    it("keeps its answers for the replay: the same request a third time is replayed, the same bytes", async () => {
      const host = hosts.plain
      const url = `${host.origin}${PAGES[0]![0]}&max_price_usd_per_gpu_hour=999`
      const taken = host.direct.length
      const replayed = host.replay.stats().replayed
      const answers = [await rawGet(url, bearer("all")), await rawGet(url, bearer("all")), await rawGet(url, bearer("all"))]
      // A page is kept from its second request on.
      assert.strictEqual(host.direct.length, taken + 2)
      assert.strictEqual(host.replay.stats().replayed, replayed + 1)
      assert.isTrue(answers.every((a) => a.status === 200 && a.bytes.equals(answers[0]!.bytes)))
      assert.deepStrictEqual(lasting(answers[2]!), lasting(answers[0]!))
    })
  })
}

describe("the direct lane, when writing a page fails", () => {
  it("leaves the request to the app while nothing is sent, and the server keeps serving", async () => {
    const admission = { principal: TOKENS.all, status: { limit: 10, remaining: 9, resetSeconds: 60 } }
    const runtime = Runtime.defaultRuntime
    const replay = makeReplay(0, { admit: () => Effect.succeed(admission), charge: () => Effect.succeed(admission), changeStamp: undefined, stamped: undefined }, runtime)
    const direct = makeDirect({
      // A body JSON cannot write (its serialisation throws): a bug of the service, as the app's defects are.
      routes: [
        { path: "/broken", call: () => Effect.succeed(Object.assign({ data: [], total: 0 }, { toJSON: () => { throw new TypeError("unwritable") } })) },
        { path: "/fine", call: () => Effect.succeed({ data: [], total: 0 }) }
      ],
      prefix: "", originOf: () => ({ origin: "http://lane.test", prefix: "" }), admit: () => Effect.succeed(admission), replay, varyOrigin: false, runtime
    })
    const handedOn: Array<string> = []
    const server = createServer(nodeLanes({ replay, direct }, (req, res) => {
      handedOn.push(req.url ?? "")
      res.writeHead(500, { "content-type": "text/plain" }).end("the app's answer")
    }))
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    try {
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      const broken = await rawGet(`${origin}/broken`, {})
      assert.deepStrictEqual([broken.status, broken.bytes.toString()], [500, "the app's answer"])
      const fine = await rawGet(`${origin}/fine`, {})
      assert.deepStrictEqual([fine.status, fine.bytes.toString()], [200, "{\"data\":[],\"total\":0}"])
      assert.deepStrictEqual(handedOn, ["/broken"])
    } finally {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })
})

/** Sends a request and leaves 200 ms later, before a paused store lets it be answered. */
const abandon = (url: string, headers: Record<string, string>) =>
  new Promise<void>((resolve) => {
    const req = request(url, { headers })
    req.on("error", () => resolve())
    req.end()
    setTimeout(() => {
      req.destroy()
      resolve()
    }, 200)
  })

/** Waits (up to 5 s) until the host has heard of more than `count` answers given without the app. */
const heardMore = async (host: LanesHost, count: number) => {
  for (let i = 0; i < 200 && host.direct.length <= count; i++) await new Promise((resolve) => setTimeout(resolve, 25))
}

describe("the direct lane, when the read fails or the client leaves", () => {
  it("a read that fails is made once: the app answers its problem without reading again", async () => {
    const db = tempDb("direct-lane-failing")
    const writer = await createMarket({ storage: sqlite(db) })
    const pages = { calls: 0 }
    // The server's own connection, whose rental pages fail as storage that cannot answer does.
    const failing = Layer.effectContext(Effect.map(Effect.context<Storage>(), (ctx) => {
      const rental = Context.get(ctx, RentalPriceStore)
      return Context.add(ctx, RentalPriceStore, {
        ...rental,
        page: () => Effect.suspend(() => (pages.calls++, Effect.fail(new StorageError({ operation: "rental_prices.page", cause: new Error("disk gone") }))))
      })
    })).pipe(Layer.provide(withRateLimits(SqliteStorage.layer({ filename: db }), "process")))
    let host: LanesHost | undefined
    try {
      await seedMarket(writer)
      host = await startLanesHost(failing)
      const answer = await rawGet(`${host.origin}${PAGES[0]![0]}`, bearer("all"))
      assert.strictEqual(answer.status, 503, answer.bytes.toString())
      assert.strictEqual(answer.headers["content-type"], "application/problem+json")
      assert.isDefined(answer.headers["x-ratelimit-remaining"])
      assert.strictEqual(pages.calls, 1, "one read of the page")
      assert.strictEqual(host.direct.length, 0)
    } finally {
      await host?.close()
      await writer.close()
    }
  })

  it("a client that leaves while Redis is slow to answer is recorded as 499 and not handed to the app, by the lane and by the replay", async () => {
    const server = await startRedis()
    const prefix = uniquePrefix("direct-lane-left")
    let writer: Market | undefined
    let host: LanesHost | undefined
    try {
      writer = await createMarket({ storage: redis(server.url, prefix) })
      await seedMarket(writer)
      host = await startLanesHost(RedisStorage.layer({ url: server.url, prefix }))
      const url = `${host.origin}${PAGES[0]![0]}`
      server.pause()
      await abandon(url, bearer("not-a-token"))
      server.resume()
      await heardMore(host, 0)
      assert.deepInclude(host.direct[0]!, { method: "GET", route: "/v2/gpu/rental/prices/latest", status: 499 })
      assert.isUndefined(host.direct[0]!.principalId, "no principal for a token that was refused")
      // The server still answers.
      assert.strictEqual((await rawGet(url, bearer("all"))).status, 200)

      // The same for a replay that the checks refuse: a kept answer of a token revoked since, to a
      // browser's request (with an Origin, which the lane leaves to the app).
      const browser = { ...bearer("left-revoked"), origin: "https://elsewhere.example" }
      await writer.tokens.create({ ...TOKENS.all, id: "t-left-revoked" }, "left-revoked")
      for (let i = 0; i < 3; i++) assert.strictEqual((await rawGet(url, browser)).status, 200)
      const replayed = host.replay.stats().replayed
      assert.isAbove(replayed, 0)
      await writer.tokens.revoke("t-left-revoked")
      const heard = host.direct.length
      server.pause()
      await abandon(url, browser)
      server.resume()
      await heardMore(host, heard)
      assert.deepInclude(host.direct[heard]!, { method: "GET", route: "/v2/gpu/rental/prices/latest", status: 499 })
      assert.strictEqual(host.replay.stats().replayed, replayed)
    } finally {
      server.resume()
      await host?.close()
      await writer?.close()
      await server.stop()
    }
  })
})
