import { assert, describe, layer } from "@effect/vitest"
import {
  Auth, marketLayer, type MarketServices, type Principal, procurementLayer, simulatedProviderLayer, type Storage
} from "@gpu-market/core"
import { MemoryStorage, SettingsStore } from "@gpu-market/core/storage"
import * as RedisStorage from "@gpu-market/storage-redis"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import { Clock, type Context, Effect, Layer, TestClock } from "effect"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { seed as seedHardware } from "./support/hardware"
import { INDEX_NOW_MS, INDEX_TOKENS, seedIndexes } from "./support/indexes"
import { LLM_TOKENS, seedPrices as seedLlmPrices } from "./support/llm"
import { http, NOW_MS, type Reply, seed as seedRental } from "./support/market"
import { BUYERS, H100_REQUEST, PROVISION_MS, TERMINATE_MS } from "./support/procurement"
import { TestRedis, testRedisLayer, uniquePrefix } from "./support/redis"
import { seed as seedTransactions } from "./support/transactions"

/**
 * Golden sample of the HTTP envelopes, recorded before the storage layer is refactored: one
 * fixed market holding every data type (rental prices, hardware prices, transactions, LLM token
 * prices, index definitions with computed and administered values, a procurement with its offer
 * and resource) is served through the real HTTP app, and a fixed script of requests must answer
 * exactly what `fixtures/golden/envelopes.json` holds: status, headers and the body's bytes, on
 * memory, on SQLite (a real temporary file) and on Redis (a real redis-server), all against the
 * same file, since a storage backend must never show through the API.
 *
 * Re-record (only when a change of the envelopes is intended, and review the diff):
 *
 *     GOLDEN_RECORD=1 npx vitest run test/golden-envelopes.test.ts
 *
 * writes the file from the memory backend; SQLite and Redis, which run after it, still compare
 * against what was just written.
 *
 * What makes the bytes reproducible: the fixtures' fixed data and times; TestClock, which the
 * app reads for "now", the rate-limit windows and procurement deadlines; the page-token and
 * hardware listing-key secrets, fixed in the settings store before the market's services read
 * them (they are random per storage otherwise). What is inherently random, and so replaced
 * before comparing (nothing else is touched):
 * - the request id of each request: the `x-request-id` header is not recorded, and its value
 *   (a problem's `request_id`) reads `<request-id>` in the body;
 * - procurement ids (`off_…`, `prc_…`, `res_…`, random by design): each reads `<off-1>`,
 *   `<prc-1>`, … by order of first appearance, in bodies, headers and the recorded paths.
 * `content-length` is kept: it is of the bytes sent, and the random values have fixed lengths.
 * `x-ratelimit-remaining` counts each token's requests in the clock's minute, so a request added
 * to the script shifts the counts of that token's later requests: re-record after editing it.
 */

const GOLDEN = fileURLToPath(new URL("./fixtures/golden/envelopes.json", import.meta.url))
const RECORD = process.env.GOLDEN_RECORD === "1"

/** Fixed deployment secrets; the backends would each draw their own at random. */
const SECRETS = {
  page_token_secret: "golden-envelopes-page-token-secret-0123456789",
  hardware_listing_key_secret: "golden-envelopes-listing-key-secret-0123456789"
}

/** The main caller: every data type with full history, every index and the legacy endpoint, a limit it never reaches. */
const GOLDEN_CALLER: Principal = {
  id: "golden" as Principal["id"],
  name: "golden",
  grants: {
    gpu_rental_prices: { history: { _tag: "unrestricted" } },
    gpu_hardware_prices: { history: { _tag: "unrestricted" } },
    gpu_rental_transactions: { history: { _tag: "unrestricted" } },
    llm_token_prices: { history: { _tag: "unrestricted" } },
    gpu_rental_indexes: { history: { _tag: "unrestricted" } }
  },
  indices: "all",
  legacy_custom_index: true,
  procurement: false,
  rate_limit_per_minute: 100_000
}

/**
 * The market, through the fixtures' write paths: the rental fixture (and its tokens), hardware
 * and transactions (and theirs), the LLM prices, then the index fixture, whose definitions compute
 * what is due at its "now" (2026-06-15T12:10Z), where the clock stays for the requests. The LLM and
 * index fixtures' tokens share secrets with the rental one's, so they are issued here under a prefix.
 */
const seed = Effect.gen(function* () {
  yield* TestClock.setTime(NOW_MS)
  yield* seedRental
  yield* seedHardware
  yield* seedTransactions
  yield* seedLlmPrices
  yield* seedIndexes
  const auth = yield* Auth
  yield* auth.issue(GOLDEN_CALLER, "golden")
  for (const [name, p] of Object.entries(LLM_TOKENS)) yield* auth.issue(p, `llm-${name}`)
  for (const [name, p] of Object.entries(INDEX_TOKENS)) yield* auth.issue(p, `index-${name}`)
  for (const [secret, p] of Object.entries(BUYERS)) yield* auth.issue(p, secret)
})

/** The fixed secrets, stored before anything reads them; a store that already held others would make the sample meaningless. */
const fixedSecrets = Layer.effectDiscard(Effect.flatMap(SettingsStore, (settings) =>
  Effect.forEach(Object.entries(SECRETS), ([name, value]) =>
    Effect.filterOrDieMessage(settings.getOrSet(name, value), (stored) => stored === value, `${name} was already set`), { discard: true })))

/** The seeded market on `storage`, with the procurement service over it (the simulated provider prices from its rental data). */
const goldenMarket = <E, R>(storage: Layer.Layer<Storage, E, R>) =>
  procurementLayer.pipe(
    Layer.provide(simulatedProviderLayer({ provisionMillis: PROVISION_MS, terminateMillis: TERMINATE_MS })),
    Layer.provideMerge(Layer.effectDiscard(seed).pipe(Layer.provideMerge(marketLayer))),
    Layer.provideMerge(Layer.provideMerge(fixedSecrets, storage))
  )

const sqliteStorage = Layer.unwrapScoped(Effect.map(
  Effect.acquireRelease(Effect.sync(() => mkdtempSync(join(tmpdir(), "gpu-market-golden-"))), (dir) =>
    Effect.sync(() => rmSync(dir, { recursive: true, force: true }))),
  (dir) => SqliteStorage.layer({ filename: join(dir, "market.db") })
))
/** Every store in Redis, under a fresh prefix on the suite's server. */
const redisStorage = Layer.unwrapEffect(Effect.map(TestRedis, (server) => RedisStorage.layer({ url: server.url, prefix: uniquePrefix("golden") })))

/** Memory first: in record mode it writes the file the others then compare against. */
const BACKENDS = {
  memory: goldenMarket(MemoryStorage.layer),
  sqlite: goldenMarket(sqliteStorage),
  redis: goldenMarket(redisStorage)
}

// ---- the script ----

/** One request of the script. */
interface Request {
  readonly method?: "GET" | "POST" | "DELETE"
  /**
   * Path and query, where `<off-1>` etc. stand for the procurement ids seen so far; or built
   * from the previous reply's body (a listing key, a product key).
   */
  readonly path: string | ((previous: any) => string)
  /** The bearer token; `null` sends no Authorization header. Default `golden`. */
  readonly token?: string | null
  readonly authorization?: string
  readonly headers?: Readonly<Record<string, string>>
  readonly body?: string
  /** Also follow `meta.next` this many times, each page a reply of its own. */
  readonly follow?: number
}
/** Moves the clock (procurement deadlines); later requests see the new time. */
interface Advance {
  readonly advanceMs: number
}
type Step = Request | Advance

const R = "/api/v2/gpu/rental/prices"
const H = "/api/v2/gpu/hardware/prices"
const T = "/api/v2/gpu/rental/transactions/aggregated"
const L = "/api/v2/llm/token/prices"
const I = "/api/v2/gpu/rental/indexes"
const S = "/api/supply"

const SCRIPT: ReadonlyArray<Step> = [
  // Rental prices: every endpoint, filters, sorts, a withdrawn GPU, pages through meta.next.
  { path: `${R}/metadata` },
  { path: `${R}/latest?vendor=v-alpha&page_size=5`, follow: 2 },
  { path: `${R}/latest?gpu_canonical_name=h100-sxm&sort_by=price_usd_per_gpu_hour&sort_order=desc&page_size=10` },
  { path: `${R}/latest?gpu_search=a100,l40&region=eu-west&contract_type=spot` },
  { path: `${R}/latest?vendor=v-beta&min_price_usd_per_gpu_hour=1.5&max_price_usd_per_gpu_hour=2.5&min_gpu_count=8&sort_by=vendor&sort_order=desc` },
  { path: `${R}/latest?gpu_canonical_name=h100-sxm&region=us-east&contract_type=ondemand&sort_by=price_usd_per_gpu_hour` },
  { path: (previous) => `${R}/latest?base_product_key=${encodeURIComponent(previous.data[0].base_product_key)}` },
  { path: `${R}/latest?gpu_canonical_name=v100` },
  { path: `${R}/as-of?vendor=v-gamma&at=2026-05-20T00:00:00Z&page_size=8`, follow: 1 },
  { path: `${R}/as-of?gpu_canonical_name=v100&at=2026-05-30T12:00:00Z&sort_by=gpu_count` },
  { path: `${R}/history?gpu_canonical_name=v100&start=2026-05-25&end=2026-06-05` },
  { path: `${R}/history?gpu_canonical_name=h100-sxm,l40s&start=2026-05-01&end=2026-05-20&page_size=10`, follow: 2 },
  { path: `${R}/history?vendor=v-alpha&gpu_canonical_name=l40s&sort_by=valid_from&sort_order=asc&page_size=20` },
  { path: `${R}/history?vendor=va,vb,vc,vd&start=2026-06-01&end=2026-06-16` },
  { path: `${R}/history?vendor=v-beta&gpu_canonical_name=a100-sxm-80gb&page_size=5`, token: "rolling" },
  { path: `${R}/metadata`, token: "since" },
  // Rental prices: refusals.
  { path: `${R}/latest` },
  { path: `${R}/latest?gpu_search=wide` },
  { path: `${R}/latest?vendor=v-alpha&page_size=0` },
  { path: `${R}/latest?vendor=v-alpha&colour=red` },
  { path: `${R}/latest?vendor=v-alpha&sort_by=colour` },
  { path: `${R}/latest?page_token=not-a-token` },
  { path: `${R}/latest?vendor=v-alpha`, token: null },
  { path: `${R}/latest?vendor=v-alpha`, token: "no-such-token" },
  { path: `${R}/latest?vendor=v-alpha`, authorization: "Basic Z29sZGVuOmdvbGRlbg==" },
  { path: `${R}/latest?vendor=v-alpha`, token: "hardwareOnly" },
  { path: `${R}/history?vendor=v-alpha`, token: "current" },
  { path: `${R}/as-of?vendor=v-alpha&at=2026-05-01T00:00:00Z`, token: "since" },
  { path: `${R}/latest?vendor=v-alpha&page_size=1`, token: "limited" },
  { path: `${R}/latest?vendor=v-alpha&page_size=1`, token: "limited" },
  { path: `${R}/latest?vendor=v-alpha&page_size=1`, token: "limited" },
  { path: `${R}/latest?vendor=v-alpha&page_size=1`, token: "limited" },
  { method: "POST", path: `${R}/latest?vendor=v-alpha` },
  { path: "/api/v2/nothing/here" },

  // Hardware prices.
  { path: `${H}/metadata` },
  { path: `${H}/latest?page_size=5`, follow: 1 },
  { path: `${H}/latest?gpu_canonical_name=h100-sxm,h200-sxm&condition=new_sealed&sort_by=price_usd&sort_order=desc` },
  { path: `${H}/latest?country_group=europe&channel=broker,retailer&min_price_usd=100000` },
  { path: (previous) => `${H}/history?listing_key=${encodeURIComponent(previous.data[0].listing_key)}&start=2026-05-01&end=2026-06-16&page_size=10` },
  { path: `${H}/as-of?at=2026-04-01&market=secondary&stock_status=in_stock&page_size=5` },
  { path: `${H}/history?start=2026-06-01&end=2026-06-08&sort_by=condition&page_size=10`, follow: 1 },
  { path: `${H}/history?country=JP,SG&page_size=6`, token: "hw-rolling" },
  { path: `${H}/latest?condition=for_parts` },
  { path: `${H}/latest?condition=broken` },
  { path: `${H}/latest`, token: "hw-rental" },
  { path: `${H}/history`, token: "hw-current" },

  // Aggregated transactions: only /history and /metadata.
  { path: `${T}/metadata` },
  { path: `${T}/history?page_size=10`, follow: 2 },
  { path: `${T}/history?gpu_canonical_name=b200&region_group=europe&contract_type=reserved&start=2026-05-01&end=2026-06-01` },
  { path: `${T}/history?sort_by=total_gpu_count&sort_order=desc&min_total_gpu_count=32&page_size=7`, follow: 1 },
  { path: `${T}/history?sort_by=price_usd_per_gpu_hour&gpu_canonical_name=h100-sxm&page_size=8`, token: "tx-rolling" },
  { path: `${T}/history`, token: "tx-current" },
  { path: `${T}/latest` },
  { path: `${T}/history?start=2026-06-10&end=2026-06-01` },

  // LLM token prices.
  { path: `${L}/metadata` },
  { path: `${L}/latest?page_size=10`, follow: 1 },
  { path: `${L}/latest?model=gpt-4o&price_type=output` },
  { path: `${L}/latest?model_search=llama&exclude_outliers=true` },
  { path: `${L}/latest?serving_provider=p-delta&sort_by=price_usd_per_1m_tokens&sort_order=desc` },
  { path: `${L}/as-of?at=2026-05-25T00:00:00Z&model=mixtral-8x7b-instruct` },
  { path: `${L}/history?model=llama-3.1-70b-instruct&serving_provider=p-delta&start=2026-05-15&end=2026-06-05` },
  { path: `${L}/history?sort_by=price_usd_per_1m_tokens&sort_order=desc&page_size=5`, follow: 1 },
  { path: `${L}/history?region=eu-west&page_size=6`, token: "llm-rolling" },
  { path: `${L}/latest?model_search=wide` },
  { path: `${L}/latest?exclude_outliers=maybe` },
  { path: `${L}/latest`, token: "llm-rentalOnly" },

  // Indices: definitions, computed (daily, intraday, reference) and administered values, legacy endpoints.
  { path: `${I}/metadata` },
  { path: `${I}/latest?id=h100-na-daily` },
  { path: `${I}/latest?id=ref-intraday` },
  { path: `${I}/latest?id=adm-daily` },
  { path: `${I}/as-of?id=h100-na-intraday&at=2026-06-12T10:30:00Z` },
  { path: `${I}/as-of?id=adm-daily&at=2026-06-08` },
  { path: `${I}/history?id=h100-na-intraday&start=2026-06-14T00:00:00Z&page_size=10`, follow: 2 },
  { path: `${I}/history?id=ref-daily&sort_by=value&sort_order=desc` },
  { path: `${I}/history?id=adm-daily&page_size=5`, follow: 1 },
  { path: `${I}/history?id=h100-west-daily` },
  { path: `${I}/history?id=a100-na-daily`, token: "index-rolling" },
  { path: `${I}/metadata`, token: "index-held" },
  { path: `${I}/latest?id=h100-na-daily`, token: "index-dailyOnly" },
  { path: `${I}/latest?id=no-such-index` },
  { path: `${I}/latest` },
  { path: `${I}/latest?id=h100-na-daily,a100-na-daily` },
  { path: `${I}/history?id=a100-na-daily`, token: "index-current" },
  { path: "/api/v1/custom-index/current?index_id=h100-na-intraday" },
  { path: "/api/v1/custom-index/current" },
  { path: "/api/v1/custom-index/current", token: "index-held" },
  { path: "/api/v1/custom-index/current", token: "index-noLegacy" },
  { path: "/api/v1/info-index/available" },
  { path: "/api/v1/info-index/available", token: "index-since" },

  // Procurement: discovery, an offer, a procurement through provisioning, its resource; refusals.
  { path: `${S}/gpus`, token: "buyer" },
  { path: `${S}/vendors`, token: "buyer" },
  { path: `${S}/regions`, token: "buyer" },
  { path: `${S}/contracts`, token: "buyer" },
  { path: `${S}/storage-options`, token: "buyer" },
  { path: `${S}/gpus`, token: "nosupply" },
  { path: `${S}/gpus?region=us-east`, token: "buyer" },
  // Offers that tie on price are ordered by their random ids: this request has one offer (v-beta's 8x at 1.00).
  {
    method: "POST", path: `${S}/get_offers`, token: "buyer", headers: { "content-type": "application/yaml" },
    body: `${H100_REQUEST}max_price_usd_per_gpu_hour: 1.2\n`
  },
  { path: `${S}/offers/<off-1>`, token: "buyer" },
  { path: `${S}/offers/<off-1>`, token: "rival" },
  { path: `${S}/offers/off_AAAAAAAAAAAAAAAAAAAAAA`, token: "buyer" },
  {
    method: "POST", path: `${S}/procurements`, token: "buyer", headers: { "content-type": "application/json", "idempotency-key": "golden-1" },
    body: "{\"offer_id\":\"<off-1>\"}"
  },
  { path: `${S}/procurements/<prc-1>`, token: "buyer" },
  { advanceMs: PROVISION_MS },
  { path: `${S}/procurements/<prc-1>`, token: "buyer" },
  { path: `${S}/resources`, token: "buyer" },
  { path: `${S}/resources/<res-1>`, token: "buyer" },
  { path: `${S}/resources/<res-1>`, token: "rival" },
  { path: `${S}/resources`, token: "rival" },
  { method: "DELETE", path: `${S}/resources/<res-1>`, token: "buyer" },
  { advanceMs: TERMINATE_MS },
  { path: `${S}/resources/<res-1>`, token: "buyer" },
  { path: `${S}/resources?status=deleted`, token: "buyer" },
  { path: `${S}/procurements/<prc-1>`, token: "buyer" },
  { path: `${S}/resources?status=bogus`, token: "buyer" }
]

// ---- recording a reply ----

/** One reply as the golden file holds it. */
interface Recorded {
  /** Method, path (ids as placeholders) and the token sent. */
  readonly request: string
  readonly status: number
  /** Every response header but `x-request-id` (random), sorted by name. */
  readonly headers: Readonly<Record<string, string>>
  /** The body's text, byte for byte but for the random values described at the top. */
  readonly body: string
}

/** A procurement id (`newId`: a prefix and 16 random bytes in base64url). */
const PROCUREMENT_ID = /(?<![A-Za-z0-9_-])(?:off|prc|res)_[A-Za-z0-9_-]{22}(?![A-Za-z0-9_-])/g

/**
 * Numbers the random ids by first appearance, both ways. An id written in the script itself (an
 * unknown one, for a 404) is not random and stays as it is.
 */
const makeIds = () => {
  const toPlaceholder = new Map<string, string>()
  const toId = new Map<string, string>()
  const literal = new Set<string>()
  const counts: Record<string, number> = {}
  return {
    /** `text` with every random procurement id as its placeholder. */
    hide: (text: string) => text.replace(PROCUREMENT_ID, (id) => {
      if (literal.has(id)) return id
      let placeholder = toPlaceholder.get(id)
      if (placeholder === undefined) {
        const kind = id.slice(0, 3)
        counts[kind] = (counts[kind] ?? 0) + 1
        placeholder = `<${kind}-${counts[kind]}>`
        toPlaceholder.set(id, placeholder)
        toId.set(placeholder, id)
      }
      return placeholder
    }),
    /** Script text with every placeholder seen so far as its id; one not seen is a mistake of the script. */
    reveal: (text: string) => {
      for (const [id] of text.matchAll(PROCUREMENT_ID)) literal.add(id)
      return text.replace(/<(?:off|prc|res)-\d+>/g, (placeholder) => {
        const id = toId.get(placeholder)
        if (id === undefined) throw new Error(`${placeholder} used before any reply named it`)
        return id
      })
    }
  }
}

const record = (request: string, reply: Reply, hide: (text: string) => string): Recorded => {
  const requestId = reply.headers.get("x-request-id")
  const headers: Record<string, string> = {}
  for (const name of [...reply.headers.keys()].sort()) {
    if (name !== "x-request-id") headers[name] = hide(reply.headers.get(name)!)
  }
  const body = requestId === null ? reply.text : reply.text.split(requestId).join("<request-id>")
  return { request, status: reply.status, headers, body: hide(body) }
}

/** Runs the script against the market in context and records every reply. */
const runScript = Effect.gen(function* () {
  const ids = makeIds()
  const replies: Array<Recorded> = []
  let previous: any = undefined
  for (const step of SCRIPT) {
    if ("advanceMs" in step) {
      yield* TestClock.adjust(step.advanceMs)
      continue
    }
    const token = step.token === undefined ? "golden" : step.token
    const who = step.authorization !== undefined ? `Authorization: ${step.authorization}` : token === null ? "no token" : `token ${token}`
    let path = ids.reveal(typeof step.path === "string" ? step.path : step.path(previous))
    for (let page = 0; page <= (step.follow ?? 0); page++) {
      const reply = yield* http(path, {
        method: step.method ?? "GET",
        ...(step.authorization !== undefined ? { authorization: step.authorization } : token === null ? {} : { token }),
        ...(step.headers === undefined ? {} : { headers: step.headers }),
        ...(step.body === undefined ? {} : { body: ids.reveal(step.body) })
      })
      replies.push(record(`${step.method ?? "GET"} ${ids.hide(path)} (${who})`, reply, ids.hide))
      previous = reply.body
      if (page < (step.follow ?? 0)) {
        // A follow-up that has no next page would silently record less than the script says.
        const next: string | undefined = reply.body?.meta?.next?.url
        assert.isString(next, `${path}: expected a next page to follow`)
        path = next!.slice("http://market.test".length)
      }
    }
  }
  return replies
})

// ---- comparing ----

const readGolden = (): ReadonlyArray<Recorded> => JSON.parse(readFileSync(GOLDEN, "utf8")).replies

const writeGolden = (replies: ReadonlyArray<Recorded>) => {
  mkdirSync(dirname(GOLDEN), { recursive: true })
  const file = {
    about: "HTTP replies of the fixed market of test/golden-envelopes.test.ts; re-record with GOLDEN_RECORD=1 (see the test).",
    replies
  }
  writeFileSync(GOLDEN, `${JSON.stringify(file, null, 1)}\n`)
}

/** Fails on the first reply that differs, naming its request; the message counts all that differ. */
const assertMatchesGolden = (backend: string, actual: ReadonlyArray<Recorded>, golden: ReadonlyArray<Recorded>) => {
  assert.deepStrictEqual(actual.map((r) => r.request), golden.map((r) => r.request), `${backend}: the script's requests are not the golden file's; re-record`)
  const differ = actual.flatMap((r, i) => {
    const g = golden[i]!
    return r.status !== g.status || JSON.stringify(r.headers) !== JSON.stringify(g.headers) || r.body !== g.body ? [i] : []
  })
  if (differ.length === 0) return
  const i = differ[0]!
  const where = `${backend}: ${differ.length} of ${golden.length} replies differ from ${GOLDEN}; first, #${i}: ${golden[i]!.request}`
  assert.strictEqual(actual[i]!.status, golden[i]!.status, `${where} (status)`)
  assert.deepStrictEqual(actual[i]!.headers, golden[i]!.headers, `${where} (headers)`)
  assert.strictEqual(actual[i]!.body, golden[i]!.body, `${where} (body)`)
}

describe("golden envelopes", () => {
  layer(testRedisLayer(), { timeout: "60 seconds" })((it) => {
    for (const [name, backend] of Object.entries(BACKENDS)) {
      it.effect(`${name}: the fixed market's HTTP replies are byte for byte the golden sample's`, () =>
        Effect.gen(function* () {
          const context: Context.Context<MarketServices> = yield* Layer.build(backend)
          // The requests run at the index fixture's "now", where seeding left the clock.
          assert.strictEqual(yield* Clock.currentTimeMillis, INDEX_NOW_MS)
          const replies = yield* Effect.provide(runScript, context)
          if (RECORD && name === "memory") writeGolden(replies)
          else assertMatchesGolden(name, replies, readGolden())
        }).pipe(Effect.scoped), { timeout: 240_000 })
    }
  })
})
