import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { baseProductKey, createMarket, type Market, MarketProblemError, memory, portableStorage, type RentalPriceObservationInput } from "@gpu-market/core"
import { layer as sqliteLayer, sqlite } from "@gpu-market/storage-sqlite"
import Database from "better-sqlite3"
import { ParseResult } from "effect"
import { BroadcastChannel } from "node:worker_threads"
import { createWorkerMarket, type WorkerMarket } from "@gpu-market/worker"
import { ADAPTER_LAST_DAY, seedMarket, tempDb } from "./support/adapters"
import { observations } from "./support/market"

/** What a JavaScript caller might send: the types say it is incomplete, the write path must say so too. */
const untypedRecord = JSON.parse('{ "vendor": "v-alpha" }') as RentalPriceObservationInput

/** The outcome of a call as bytes: the JSON of its result, or of its problem without `request_id`. */
const outcome = async (call: Promise<unknown>): Promise<string> => {
  try {
    return JSON.stringify(await call)
  } catch (e) {
    assert.instanceOf(e, MarketProblemError)
    const { request_id: _, ...problem } = (e as MarketProblemError).problem
    return `problem ${JSON.stringify(problem)}`
  }
}

describe("worker market (createWorkerMarket)", () => {
  const db = tempDb("worker")
  const baseUrl = "https://example.com/market"
  let direct: Market
  let worker: WorkerMarket
  beforeAll(async () => {
    direct = await createMarket({ storage: sqlite(db), baseUrl })
    await seedMarket(direct)
    worker = await createWorkerMarket({ storage: sqlite(db), poolSize: 2, baseUrl })
  }, 120_000)
  afterAll(async () => {
    await worker?.close()
    await direct?.close()
  })

  it("starts the pool size asked for", () => {
    const ids = worker.threadIds()
    assert.strictEqual(ids.length, 2)
    assert.strictEqual(new Set(ids).size, 2)
  })

  it("answers the same requests with the same envelopes, byte for byte, page tokens included", async () => {
    const calls: ReadonlyArray<(m: Market) => Promise<unknown>> = [
      (m) => m.rental.prices.latest({ gpu_canonical_name: ["h100-sxm"], sort_by: "price_usd_per_gpu_hour", page_size: 5 }, { token: "all" }),
      (m) => m.rental.prices.history({ start: "2026-05-01", end: "2026-05-08", vendor: "v-beta", page_size: 3 }, { token: "all" }),
      (m) => m.rental.prices.asOf({ at: "2026-05-05T12:00:00Z", vendor: "v-gamma", page_size: 4 }, { token: "since" }),
      (m) => m.rental.prices.metadata({}, { token: "all" }),
      (m) => m.transactions.history({ start: "2026-05-01", end: "2026-05-08" }, { token: "all" })
    ]
    for (const call of calls) assert.strictEqual(await outcome(call(worker)), await outcome(call(direct)))

    // A page token from either side reads the same next page on both.
    const first = await direct.rental.prices.latest({ vendor: "v-alpha", page_size: 6 }, { token: "all" })
    const next = { page_token: first.meta.next!.query_params.page_token!, page_size: 6 }
    const viaWorker = await worker.rental.prices.latest(next, { token: "all" })
    assert.strictEqual(JSON.stringify(viaWorker), JSON.stringify(await direct.rental.prices.latest(next, { token: "all" })))
    assert.isTrue(viaWorker.meta.has_more)

    const pages = async (m: Market) => {
      const out: Array<string> = []
      for await (const page of m.rental.prices.latest.pages({ vendor: "v-alpha", page_size: 10 }, { token: "all" })) out.push(JSON.stringify(page))
      return out
    }
    const workerPages = await pages(worker)
    assert.isAbove(workerPages.length, 2)
    assert.deepStrictEqual(workerPages, await pages(direct))
  })

  it("sends errors back as the same problems", async () => {
    const calls: ReadonlyArray<(m: Market) => Promise<unknown>> = [
      (m) => m.rental.prices.latest({ vendor: "v-alpha" }),
      (m) => m.rental.prices.latest({ vendor: "v-alpha" }, { token: "wrong" }),
      (m) => m.rental.prices.history({}, { token: "current" }),
      (m) => m.rental.prices.latest({ vendor: "NOT A SLUG", page_size: 5000 }, { token: "all" }),
      (m) => m.rental.prices.latest({}, { token: "all" }),
      (m) => m.hardware.prices.latest({}, { token: "all" }),
      (m) => m.rental.prices.asOf({ at: "2026-05-01", vendor: "v-alpha" }, { token: "since" }),
      (m) => m.indices.latest({ id: "no-such-index" }, { token: "all" }),
      (m) => m.ingest.rental([untypedRecord])
    ]
    for (const call of calls) {
      const [fromWorker, fromDirect] = [await outcome(call(worker)), await outcome(call(direct))]
      assert.match(fromWorker, /^problem /)
      assert.strictEqual(fromWorker, fromDirect)
    }
  })

  it("writes through a worker are read by the others", async () => {
    const created = await worker.tokens.create({ ...(await direct.tokens.list())[0]!, id: "t-worker" as never, name: "worker" }, "worker-secret")
    assert.strictEqual(created, "worker-secret")
    const page = await direct.rental.prices.latest({ vendor: "v-alpha", page_size: 1 }, { token: "worker-secret" })
    assert.strictEqual(page.data.length, 1)
  })

  it("rate limits hold exactly across the pool's threads: they count in the file the threads share", () => limitedBurst(worker))
})

/** `limited` may make 3 calls a minute: 12 at once over the pool get 3 answers and 9 429s. A burst that straddles two minutes is tried again. */
const limitedBurst = async (market: WorkerMarket) => {
  for (;;) {
    const window = Math.floor(Date.now() / 60_000)
    const outcomes = await Promise.allSettled(Array.from({ length: 12 }, () => market.rental.prices.metadata({}, { token: "limited" })))
    if (Math.floor(Date.now() / 60_000) !== window) continue
    assert.strictEqual(outcomes.filter((o) => o.status === "fulfilled").length, 3)
    for (const o of outcomes) if (o.status === "rejected") assert.strictEqual((o.reason as MarketProblemError).problem.code, "rate_limited")
    return
  }
}

describe("worker market with rate limits in the process", () => {
  const db = tempDb("worker-process-limits")
  let direct: Market
  let worker: WorkerMarket
  beforeAll(async () => {
    direct = await createMarket({ storage: sqlite(db) })
    await seedMarket(direct)
    worker = await createWorkerMarket({ storage: sqlite(db), poolSize: 2, rateLimits: "process" })
  }, 120_000)
  afterAll(async () => {
    await worker?.close()
    await direct?.close()
  })

  it("the main thread counts for every thread: exact across the pool, and reads write nothing to the file", async () => {
    const observer = new Database(db, { readonly: true })
    try {
      const version = () => observer.pragma("data_version", { simple: true })
      const before = version()
      await limitedBurst(worker)
      for (let i = 0; i < 20; i++) await worker.rental.prices.latest({ gpu_canonical_name: ["h100-sxm"], page_size: 5 }, { token: "all" })
      assert.strictEqual(version(), before)
    } finally {
      observer.close()
    }
  })
})

describe("worker market page caches", () => {
  it("a page every worker kept is read again after a write by another connection; pageCacheMb is checked before any thread starts", async () => {
    const db = tempDb("worker-cache")
    const direct = await createMarket({ storage: sqlite(db) })
    const worker = await createWorkerMarket({ storage: sqlite(db), poolSize: 2, pageCacheMb: 1 })
    try {
      await seedMarket(direct)
      const product = observations(ADAPTER_LAST_DAY).find((o) => o.vendor === "v-alpha" && o.gpu_canonical_name === "h100-sxm")!
      const query = { vendor: "v-alpha", base_product_key: baseProductKey({ vendor_sku: null, vendor_region: null, instance_type: null, instance_variant: null, os: null, contract_term: null, ...product }) }
      const prices = async () => (await worker.rental.prices.latest(query, { token: "all" })).data.map((r) => r.price_usd_per_gpu_hour)
      // Enough calls that both threads keep the page.
      for (let i = 0; i < 4; i++) assert.deepStrictEqual(await prices(), [product.price_usd_per_gpu_hour])
      await direct.ingest.rental([{ ...product, price_usd_per_gpu_hour: 9.75, raw_price: 9.75 * product.gpu_count, extracted_at: new Date(Date.parse(product.extracted_at) + 3_600_000).toISOString() }])
      for (let i = 0; i < 4; i++) assert.deepStrictEqual(await prices(), [9.75])
    } finally {
      await worker.close()
      await direct.close()
    }
    const refused = await createWorkerMarket({ storage: sqlite(db), pageCacheMb: -1 }).then(() => undefined, (e: unknown) => e)
    assert.isTrue(ParseResult.isParseError(refused), String(refused))
    assert.include(String(refused), "pageCacheMb")
  }, 120_000)
})

describe("worker market storage", () => {
  it("refuses a storage a worker cannot open by itself, before starting any thread", async () => {
    // The types refuse memory(); a JavaScript caller can still pass it.
    const notPortable = memory() as unknown as Parameters<typeof createWorkerMarket>[0]["storage"]
    let refused: unknown
    try {
      await createWorkerMarket({ storage: notPortable, poolSize: 2 })
    } catch (e) {
      refused = e
    }
    assert.instanceOf(refused, TypeError)
    assert.match((refused as TypeError).message, /portable storage/)
  })
})

describe("worker market bounds", () => {
  it("each worker's write paths check the bounds the pool was given", async () => {
    const market = await createWorkerMarket({ storage: sqlite(tempDb("worker-bounds")), bounds: { rental: { min: 0.5, max: 5 } } })
    try {
      const record: RentalPriceObservationInput = {
        vendor: "acme", vendor_gpu_name: "H100 SXM", region: "us-east", gpu_count: 1, contract_type: "ondemand",
        raw_price: 6, raw_price_unit: "usd_per_gpu_hour", extracted_at: "2026-05-05T00:00:00Z"
      }
      const refused = await market.ingest.rental([record]).catch((e: unknown) => e)
      assert.instanceOf(refused, MarketProblemError)
      assert.include((refused as MarketProblemError).problem.detail, "6 is outside the plausible range [0.5, 5]")
      assert.strictEqual((await market.ingest.rental([{ ...record, raw_price: 4 }])).opened, 1)
    } finally {
      await market.close()
    }
  }, 60_000)
})

describe("worker market failures", () => {
  it("rejects with the reason when a worker cannot open the storage", async () => {
    const missing = portableStorage(sqliteLayer({ filename: "unused.db" }), {
      module: new URL("./fixtures/no-such-backend.mjs", import.meta.url).href,
      options: {}
    })
    let refused: unknown
    try {
      await createWorkerMarket({ storage: missing, poolSize: 2 })
    } catch (e) {
      refused = e
    }
    assert.instanceOf(refused, Error)
    assert.match((refused as Error).message, /could not open its storage: .*no-such-backend/)
  })

  it("replaces a worker that dies; its calls are refused, never left hanging", async () => {
    const db = tempDb("worker-crash")
    const direct = await createMarket({ storage: sqlite(db) })
    await seedMarket(direct)
    await direct.close()
    const storage = portableStorage(sqliteLayer({ filename: db }), {
      module: new URL("./fixtures/crashing-storage.mjs", import.meta.url).href,
      options: { filename: db }
    })
    const market = await createWorkerMarket({ storage, poolSize: 2 })
    const channel = new BroadcastChannel("gpu-market-test-crash")
    try {
      const [lost, kept] = market.threadIds() as [number, number]
      channel.postMessage(lost)
      // Calls go on while the worker ends: each is answered or refused with a problem.
      let refusals = 0
      for (let i = 0; i < 10_000 && market.threadIds().includes(lost); i++) {
        try {
          await market.rental.prices.metadata({}, { token: "all" })
        } catch (e) {
          assert.instanceOf(e, MarketProblemError)
          assert.strictEqual((e as MarketProblemError).status, 500)
          refusals++
        }
      }
      const now = market.threadIds()
      assert.notInclude(now, lost)
      assert.include(now, kept)
      assert.strictEqual(now.length, 2)
      assert.isAtMost(refusals, 1)
      // Both workers, the replacement included, answer.
      const pages = await Promise.all([0, 1, 2, 3].map(() => market.rental.prices.latest({ vendor: "v-alpha", page_size: 2 }, { token: "all" })))
      for (const page of pages) assert.strictEqual(page.data.length, 2)
    } finally {
      channel.close()
      await market.close()
    }
  })
})

describe("worker market shutdown", () => {
  it("close() stops every worker thread", async () => {
    const market = await createWorkerMarket({ storage: sqlite(tempDb("worker-close")), poolSize: 2 })
    const before = market.threadIds()
    assert.strictEqual(before.length, 2)
    await market.close()
    // A closed pool answers nothing: a call after close is refused rather than left hanging.
    let refused = false
    try {
      await market.rental.prices.metadata({}, { token: "x" })
    } catch {
      refused = true
    }
    assert.isTrue(refused)
  })
})
