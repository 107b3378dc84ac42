import { assert, describe, it, layer } from "@effect/vitest"
import { StorageError } from "@gpu-market/core"
import {
  cmp, MemoryStorage, type PagePlan, putVersions, RateLimitStore, rentalPriceKeys, RentalPriceStore
} from "@gpu-market/core/storage"
import { rentalRow } from "@gpu-market/storage-testkit"
import { Cause, Context, Effect, Either, Exit, Layer, Option } from "effect"
import fc from "fast-check"
import { Redis } from "ioredis"
import * as RedisStorage from "@gpu-market/storage-redis"
import { freePort } from "../../../test/support/process"
import { redisStorageLayer, TestRedis, testRedisLayer, uniquePrefix } from "../../../test/support/redis"
import { Batch, describeRedis, encodeMember, environmentOptions, fromRedis, make, makeRentalPriceStore, makeTable, memberTie, redactUrl, rentalTable } from "../src/internal"

const sign = (n: number) => (n < 0 ? -1 : n > 0 ? 1 : 0)

describe("member encoding", () => {
  it("orders as JS < does, on (value, tie), for any text and number", () => {
    const value = fc.oneof(fc.string({ unit: "binary" }), fc.constantFrom("", "\u0000", "\u0001", "\uffff", "\ud83d\ude00"))
    fc.assert(fc.property(value, value, fc.string({ unit: "binary" }), fc.string({ unit: "binary" }), (a, b, ta, tb) => {
      const expected = cmp(a, b) || cmp(ta, tb)
      assert.strictEqual(sign(Buffer.compare(encodeMember(a, ta), encodeMember(b, tb))), expected)
      assert.strictEqual(memberTie(encodeMember(a, ta)), ta)
    }))
    const number = fc.double({ noNaN: true })
    fc.assert(fc.property(number, number, fc.string(), (a, b, tie) => {
      assert.strictEqual(sign(Buffer.compare(encodeMember(a, tie), encodeMember(b, tie))), cmp(a, b))
      assert.strictEqual(memberTie(encodeMember(a, tie)), tie)
    }))
  })
})

describe("connection", () => {
  it.effect("a row-cache size that is not a whole number ≥ 0 dies with a RangeError before anything connects", () =>
    Effect.gen(function* () {
      const port = yield* Effect.promise(freePort)
      for (const rowCacheRows of [-1, 1.5, Number.NaN]) {
        const exit = yield* Effect.exit(Effect.scoped(make({ url: `redis://127.0.0.1:${port}`, connectTimeoutMs: 500, rowCacheRows })))
        const defect = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.dieOption(exit.cause)) : undefined
        assert.instanceOf(defect, RangeError, String(rowCacheRows))
      }
    }))

  it.effect("an unreachable Redis fails the layer with a StorageError, quickly", () =>
    Effect.gen(function* () {
      const port = yield* Effect.promise(freePort)
      const exit = yield* Effect.exit(Effect.scoped(make({ url: `redis://127.0.0.1:${port}`, connectTimeoutMs: 500 })))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) {
        const error = exit.cause._tag === "Fail" ? exit.cause.error : undefined
        assert.instanceOf(error, StorageError)
        assert.strictEqual(error?.operation, "connect")
      }
    }))
})

const storage = (label: string) => redisStorageLayer(label)

/** One write command of a batch, on one of a few keys, so that commands on one key interleave. */
const batchOp = fc.oneof(
  fc.tuple(fc.constant("HSET" as const), fc.constantFrom("h1", "h2"), fc.constantFrom("f1", "f2", "f3"), fc.constantFrom("a", "b", "c")),
  fc.tuple(fc.constant("HDEL" as const), fc.constantFrom("h1", "h2"), fc.constantFrom("f1", "f2", "f3")),
  fc.tuple(fc.constant("HINCRBY" as const), fc.constantFrom("h1", "h2"), fc.constantFrom("n1", "n2"), fc.constantFrom("1", "-1")),
  fc.tuple(fc.constant("ZADD" as const), fc.constantFrom("z1", "z2"), fc.constant("0"), fc.constantFrom("m1", "m2", "m3")),
  fc.tuple(fc.constant("ZREM" as const), fc.constantFrom("z1", "z2"), fc.constantFrom("m1", "m2", "m3")),
  fc.tuple(fc.constant("SADD" as const), fc.constantFrom("s1", "s2"), fc.constantFrom("m1", "m2", "m3")),
  fc.tuple(fc.constant("SREM" as const), fc.constantFrom("s1", "s2"), fc.constantFrom("m1", "m2", "m3"))
)

layer(testRedisLayer(), { timeout: "30 seconds" })("on one server", (it) => {
  it.effect("scripts still run after the server forgets them (SCRIPT FLUSH, as after a restart)", () =>
    Effect.gen(function* () {
      const server = yield* TestRedis
      const limits = yield* RateLimitStore
      assert.strictEqual((yield* limits.hit("flush", 60_000_000, 0)).count, 1)
      yield* Effect.promise(async () => {
        const admin = new Redis(server.url)
        await admin.script("FLUSH")
        await admin.quit()
      })
      assert.strictEqual((yield* limits.hit("flush", 60_000_000, 1)).count, 2)
    }).pipe(Effect.provide(storage("flush"))))

  it.effect("calls started together reach Redis in one write, and each gets its own answer", () =>
    Effect.gen(function* () {
      const server = yield* TestRedis
      const redis = new Redis(server.url)
      yield* Effect.addFinalizer(() => Effect.promise(() => redis.quit()))
      yield* Effect.promise(() => redis.set("one-write:a", "1").then(() => redis.set("one-write:b", "2")))
      const client = fromRedis(redis, uniquePrefix("one-write"))
      const socket = (redis as unknown as { readonly stream: { _write: (...a: Array<unknown>) => void; _writev: (...a: Array<unknown>) => void } }).stream
      const writes: Array<number> = []
      const [write, writev] = [socket._write, socket._writev]
      socket._write = function(...a) { writes.push(1); return write.apply(this, a) }
      socket._writev = function(chunks, ...a) { writes.push((chunks as Array<unknown>).length); return writev.call(this, chunks, ...a) }
      const answers = yield* Effect.all([
        client.run("a", (r) => r.get("one-write:a")),
        client.run("b", (r) => r.get("one-write:b")),
        client.run("c", (r) => r.incr("one-write:c"))
      ], { concurrency: "unbounded" })
      assert.deepStrictEqual(answers, ["1", "2", 1])
      assert.deepStrictEqual(writes, [3], "one write of the three commands")
    }).pipe(Effect.scoped))

  it.effect("two connections hitting one key concurrently count every hit exactly once", () =>
    Effect.gen(function* () {
      const server = yield* TestRedis
      // Two stores under one prefix, each with its own connection, as two processes would be.
      const prefix = `shared-${Date.now().toString(36)}`
      const [first, second] = yield* Effect.all([0, 1].map(() => Effect.map(make({ url: server.url, prefix }), (s) => s.rateLimitStore)))
      const hits = Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? first! : second!).hit("client", 60_000_000, 5))
      const counts = (yield* Effect.all(hits, { concurrency: "unbounded" })).map((h) => h.count).sort((x, y) => x - y)
      assert.deepStrictEqual(counts, Array.from({ length: 200 }, (_, i) => i + 1))
      // A different prefix is a different market.
      const other = yield* make({ url: server.url, prefix: `${prefix}-other` })
      assert.strictEqual((yield* other.rateLimitStore.hit("client", 60_000_000, 5)).count, 1)
    }).pipe(Effect.scoped))

  it.effect("a checked batch leaves what its commands leave when run one by one, in order, whatever their arguments", () =>
    Effect.gen(function* () {
      const server = yield* TestRedis
      const redis = new Redis(server.url)
      yield* Effect.addFinalizer(() => Effect.promise(() => redis.quit()))
      const state = async (prefix: string) => ({
        h1: await redis.hgetall(`${prefix}:h1`), h2: await redis.hgetall(`${prefix}:h2`),
        z1: await redis.zrange(`${prefix}:z1`, 0, -1), z2: await redis.zrange(`${prefix}:z2`, 0, -1),
        s1: (await redis.smembers(`${prefix}:s1`)).sort(), s2: (await redis.smembers(`${prefix}:s2`)).sort()
      })
      let run = 0
      yield* Effect.promise(() => fc.assert(fc.asyncProperty(fc.array(batchOp, { maxLength: 40 }), async (ops) => {
        const one = `one-${run}`
        const batched = `batched-${run++}`
        for (const [command, key, ...args] of ops) await redis.call(command, `${one}:${key}`, ...args)
        const batch = new Batch()
        for (const [command, key, ...args] of ops) batch.op(command, `${batched}:${key}`, ...args)
        assert.strictEqual(await batch.execute(fromRedis(redis, "unused")), 0)
        assert.deepStrictEqual(await state(batched), await state(one))
      }), { numRuns: 60 }))
    }).pipe(Effect.scoped))

  it.effect("pages over text outside the BMP and control characters follow the reference, global index included", () =>
    Effect.gen(function* () {
      const store = yield* RentalPriceStore
      const ns = `uni-${Date.now().toString(36)}`
      const names = ["a", "\u0000x", "\u0001", "\uffff", "\ud83d\ude00", "é", "Z", ""]
      const rows = names.flatMap((name, i) => [0, 1].map((sku) =>
        rentalRow({ vendor: `${ns}-v${i % 3}`, gpu_canonical_name: `${ns}-g`, region: name, vendor_sku: `s${sku}`, price_usd_per_gpu_hour: i % 2 })))
      yield* putVersions(store.transact, rentalPriceKeys, rows)
      for (const order of ["asc", "desc"] as const) {
        for (const predicates of [[{ op: "eq", field: "gpu_canonical_name", value: `${ns}-g` }], []] as const) {
          const plan = {
            scope: { _tag: "window", start: "2000", end: "3000" }, predicates: [...predicates],
            sort: { by: "region", order }, after: undefined, limit: 1000
          } as const
          const expected = MemoryStorage.evaluateRentalPlan(rows, plan)
          const got = (yield* store.page(plan)).filter((r) => r.vendor.startsWith(ns))
          assert.deepStrictEqual(got, expected)
        }
      }
    }).pipe(Effect.provide(storage("unicode"))))

  /**
   * A table over its own connection whose pipelines wait for the gates queued: each gate gets the
   * pipeline's `exec` and answers for it. Rental rows of one GPU priced 1..60, written by `writer`.
   */
  const gatedTable = (rows: number) => Effect.gen(function* () {
    const server = yield* TestRedis
    const prefix = uniquePrefix("gated")
    const connect = () => Effect.acquireRelease(Effect.sync(() => new Redis(server.url)), (r) => Effect.promise(() => r.quit()))
    const [reader, writing] = [yield* connect(), yield* connect()]
    const writer = makeRentalPriceStore(fromRedis(writing, prefix))
    const products = Array.from({ length: 60 }, (_, i) => rentalRow({ vendor: "v", gpu_canonical_name: "g1", vendor_sku: `s${i}`, price_usd_per_gpu_hour: 1 + i }))
    yield* putVersions(writer.transact, rentalPriceKeys, products)
    const gates: Array<(exec: () => Promise<unknown>) => Promise<unknown>> = []
    const pipeline = reader.pipeline.bind(reader)
    reader.pipeline = ((...args: Parameters<typeof reader.pipeline>) => {
      const p = pipeline(...args)
      const exec = p.exec.bind(p)
      p.exec = (() => {
        const gate = gates.shift()
        return gate === undefined ? exec() : gate(exec)
      }) as typeof p.exec
      return p
    }) as typeof reader.pipeline
    const table = makeTable(fromRedis(reader, prefix), rentalTable, { rows })
    const uncached = makeTable(fromRedis(writing, prefix), rentalTable)
    return { table, uncached, writer, products, gates }
  })
  const cheapest = (order: "asc" | "desc", limit: number): PagePlan => ({
    scope: { _tag: "latest" }, predicates: [{ op: "eq", field: "gpu_canonical_name", value: "g1" }],
    sort: { by: "price_usd_per_gpu_hour", order }, after: undefined, limit
  })
  const deferred = () => {
    let resolve = () => {}
    const promise = new Promise<void>((r) => (resolve = r))
    return { promise, resolve }
  }

  it.effect("a page whose held rows another page evicts while it reads the rest still has every row", () =>
    Effect.gen(function* () {
      const { table, uncached, gates } = yield* gatedTable(20)
      yield* Effect.promise(() => table.page(cheapest("asc", 10)))
      const late = deferred()
      gates.push((exec) => exec())
      gates.push(async (exec) => {
        const reply = await exec()
        await late.promise
        return reply
      })
      const page = table.page(cheapest("asc", 20))
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 50)))
      // Twenty other rows read meanwhile push the ten cheapest out of a cache of twenty.
      yield* Effect.promise(() => table.page(cheapest("desc", 20)))
      late.resolve()
      assert.deepStrictEqual(yield* Effect.promise(() => page), yield* Effect.promise(() => uncached.page(cheapest("asc", 20))))
    }).pipe(Effect.scoped))

  it.effect("rows read after a write that came during a page are not held for pages that read before it", () =>
    Effect.gen(function* () {
      const { table, uncached, writer, products, gates } = yield* gatedTable(1_000)
      const before = yield* Effect.promise(() => uncached.page(cheapest("asc", 5)))
      // A: its index read goes now; its read of rows waits until after the write, and its reply
      // arrives with C's, as in one socket read.
      const sendA = deferred(), deliver = deferred(), cSent = deferred()
      gates.push((exec) => exec())
      gates.push(async (exec) => {
        await sendA.promise
        const reply = await exec()
        await deliver.promise
        return reply
      })
      // A filter no row meets, so A reads every row of the GPU.
      const planA: PagePlan = { ...cheapest("asc", 2), predicates: [...cheapest("asc", 2).predicates, { op: "lte", field: "gpu_count", value: 0 }] }
      const pageA = table.page(planA)
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 50)))
      // C: its index read goes before the write, its reply held back.
      gates.push(async (exec) => {
        const reply = await exec()
        cSent.resolve()
        await deliver.promise
        return reply
      })
      const pageC = table.page(cheapest("asc", 5))
      yield* Effect.promise(() => cSent.promise)
      // The cheapest product's price moves from 1 to 1.5.
      const at = "2030-01-01T00:00:00.000000Z"
      yield* writer.transact([{ base: products[0]!.base_product_key, at }], ({ current }) => Either.right({
        changes: {
          close: current.map((r) => ({ key: r.product_key, valid_to: at })),
          open: current.map(({ product_key: _, ...r }) => rentalRow({ ...r, price_usd_per_gpu_hour: 1.5, valid_from: at, extracted_at: at }))
        },
        result: undefined
      }))
      sendA.resolve()
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 50)))
      deliver.resolve()
      const [, c] = yield* Effect.promise(() => Promise.all([pageA, pageC]))
      const after = yield* Effect.promise(() => uncached.page(cheapest("asc", 5)))
      assert.notDeepEqual(after, before)
      assert.isTrue(JSON.stringify(c) === JSON.stringify(before) || JSON.stringify(c) === JSON.stringify(after), c.map((r) => r.price_usd_per_gpu_hour).join(","))
      assert.deepStrictEqual(yield* Effect.promise(() => table.page(cheapest("asc", 5))), after)
    }).pipe(Effect.scoped))

  it.effect("pages through the row cache hold what a process without it reads, after writes and after pages that raced them", () =>
    Effect.gen(function* () {
      const server = yield* TestRedis
      const prefix = uniquePrefix("row-cache")
      const storeOf = (rowCacheRows: number) => Effect.map(
        Layer.build(RedisStorage.layer({ url: server.url, prefix, rowCacheRows })),
        (ctx) => Context.get(ctx, RentalPriceStore)
      )
      const cached = yield* storeOf(1_000)
      const writer = yield* storeOf(0)
      const products = Array.from({ length: 12 }, (_, i) => rentalRow({
        vendor: `v${i % 3}`, gpu_canonical_name: "g1", vendor_sku: `s${i}`, price_usd_per_gpu_hour: 1 + i / 4
      }))
      yield* putVersions(writer.transact, rentalPriceKeys, products)
      const plans: ReadonlyArray<PagePlan> = [
        { scope: { _tag: "latest" }, predicates: [{ op: "eq", field: "gpu_canonical_name", value: "g1" }], sort: { by: "price_usd_per_gpu_hour", order: "asc" }, after: undefined, limit: 5 },
        { scope: { _tag: "latest" }, predicates: [{ op: "lte", field: "price_usd_per_gpu_hour", value: 2.5 }], sort: { by: "price_usd_per_gpu_hour", order: "desc" }, after: undefined, limit: 50 },
        { scope: { _tag: "window", start: "2000", end: "3000" }, predicates: [{ op: "in", field: "vendor", values: ["v1"] }], sort: { by: "valid_from", order: "asc" }, after: undefined, limit: 50 }
      ]
      const pagesOf = (store: RentalPriceStore["Type"]) => Effect.forEach(plans, (plan) => store.page(plan))
      // Each step moves every price of one vendor up by 1, a microsecond after the last step.
      let step = 0
      const reprice = (vendor: string) => {
        const at = new Date(Date.UTC(2027, 0, 1) + ++step).toISOString().replace("Z", "000Z")
        const bases = products.filter((r) => r.vendor === vendor).map((r) => r.base_product_key)
        return writer.transact(bases.map((base) => ({ base, at })), ({ current }) => Either.right({
          changes: {
            close: current.map((r) => ({ key: r.product_key, valid_to: at })),
            open: current.map(({ product_key: _, ...r }) => rentalRow({ ...r, price_usd_per_gpu_hour: r.price_usd_per_gpu_hour + 1, valid_from: at, extracted_at: at }))
          },
          result: undefined
        }))
      }
      const before = yield* pagesOf(cached)
      assert.deepStrictEqual(before, yield* pagesOf(writer))
      assert.isTrue(Object.isFrozen(before[0]![0]))
      yield* reprice("v1")
      const after = yield* pagesOf(cached)
      assert.deepStrictEqual(after, yield* pagesOf(writer))
      for (let i = 0; i < plans.length; i++) assert.notDeepEqual(after[i], before[i], `plan ${i}`)
      // Pages read while writes land leave nothing stale behind them.
      for (let round = 0; round < 20; round++) {
        yield* Effect.all([pagesOf(cached), reprice(`v${round % 3}`)], { concurrency: "unbounded" })
        assert.deepStrictEqual(yield* pagesOf(cached), yield* pagesOf(writer), `round ${round}`)
      }
    }).pipe(Effect.scoped))
})

describe("redactUrl", () => {
  it("leaves out the user and the whole password, whatever characters it holds", () => {
    assert.strictEqual(redactUrl("redis://:p@ss@cache.internal:6380/2"), "redis://cache.internal:6380/2")
    assert.strictEqual(redactUrl("rediss://user:ab%2Fcd@cache.internal"), "rediss://cache.internal")
    assert.strictEqual(redactUrl("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379")
    assert.notInclude(redactUrl("not a url with secret"), "secret")
  })
})

describe("topology options", () => {
  it("the environment names one topology and its settings, or none", () => {
    assert.isUndefined(environmentOptions({}))
    assert.deepStrictEqual(environmentOptions({ GPU_MARKET_REDIS_URL: "redis://h:1", GPU_MARKET_REDIS_PREFIX: "m" }), { url: "redis://h:1", prefix: "m" })
    assert.deepStrictEqual(environmentOptions({ GPU_MARKET_REDIS_CLUSTER_NODES: " a:1, b:2 ,", GPU_MARKET_REDIS_PASSWORD: "pw" }), { cluster: ["a:1", "b:2"], password: "pw" })
    assert.deepStrictEqual(environmentOptions({
      GPU_MARKET_REDIS_SENTINELS: "s:26379", GPU_MARKET_REDIS_SENTINEL_NAME: "market", GPU_MARKET_REDIS_READ_FROM_REPLICAS: "1", GPU_MARKET_REDIS_REPLICAS_TO_ACK: "2"
    }), { sentinels: ["s:26379"], sentinelName: "market", replicasToAck: 2, readFromReplicas: true })
  })

  it("two topologies, or a value that cannot be used, is an error naming the variable", () => {
    assert.throws(() => environmentOptions({ GPU_MARKET_REDIS_URL: "redis://h:1", GPU_MARKET_REDIS_SENTINELS: "s:1" }), /GPU_MARKET_REDIS_URL and GPU_MARKET_REDIS_SENTINELS are both set/)
    assert.throws(() => environmentOptions({ GPU_MARKET_REDIS_URL: "redis://h:1", GPU_MARKET_REDIS_REPLICAS_TO_ACK: "one" }), /GPU_MARKET_REDIS_REPLICAS_TO_ACK is "one"/)
    assert.throws(() => environmentOptions({ GPU_MARKET_REDIS_URL: "redis://h:1", GPU_MARKET_REDIS_READ_FROM_REPLICAS: "yes" }), /GPU_MARKET_REDIS_READ_FROM_REPLICAS is "yes"/)
  })

  it.effect("options naming no topology, two, or a node that is not host:port fail the layer with a StorageError at connect", () =>
    Effect.gen(function* () {
      for (const [options, message] of [
        [{}, /no topology/],
        [{ url: "redis://127.0.0.1:1", cluster: ["127.0.0.1:2"] }, /more than one topology/],
        [{ cluster: ["no-port"] }, /not a host:port: "no-port"/],
        [{ url: "redis://127.0.0.1:1", readFromReplicas: true }, /readFromReplicas needs sentinels/]
      ] as const) {
        const exit = yield* Effect.exit(Effect.scoped(make(options)))
        assert.isTrue(Exit.isFailure(exit))
        const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
        assert.instanceOf(error, StorageError)
        assert.strictEqual(error?.operation, "connect")
        assert.match(String((error?.cause as Error).message), message)
      }
    }))

  it("where the options connect is printed without credentials", () => {
    assert.strictEqual(describeRedis({ url: "redis://u:secret@h:6379" }), "redis redis://h:6379")
    assert.strictEqual(describeRedis({ cluster: ["a:1", "b:2"], password: "secret" }), "redis cluster a:1,b:2")
    assert.strictEqual(describeRedis({ sentinels: ["s:1"], sentinelName: "market" }), "redis sentinel market via s:1")
  })
})
