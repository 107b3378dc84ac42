import { assert, describe, layer } from "@effect/vitest"
import {
  encodeExport, estimateExport, type ExportFormat, type MarketServices, problemOf, RentalPriceIngest, requestOrigin, type RowExport, type Storage
} from "@gpu-market/core"
import { catalogue, makeExportCalls } from "@gpu-market/core/adapters"
import { EventLogStore } from "@gpu-market/core/storage"
import { Chunk, type Context, Effect, Either, FastCheck as fc, Stream, TestClock } from "effect"
import { seededBackends } from "./support/backends"
import { assertCsvHolds, assertJsonlHolds, assertParquetHolds, joined } from "./support/exports"
import { dayIso, GPUS, http, LAST_DAY, NOW_MS, observations, type Reply, seed, TOKENS, type TokenName, VENDORS } from "./support/market"
import { testRedisLayer } from "./support/redis"

/**
 * Exports on memory, SQLite and Redis: for random queries of the rental endpoints and tokens of
 * different grants and floors, an export's rows equal, value for value and in order, what walking
 * `meta.next` of the same query returns, in every format read back by another reader; a refused
 * query is refused with the problem its page gets; a write while an export is read ends the
 * export with an error, never a quiet mix of two states.
 */

const entry = (name: string) => catalogue.find((e) => e.name === name)!

/** The rows walking `meta.next` from `path` returns, or the problem its first page is refused with. */
const walk = (path: string, token: TokenName) =>
  Effect.gen(function* () {
    const rows: Array<Record<string, unknown>> = []
    let next: string | null = path
    while (next !== null) {
      const reply: Reply = yield* http(next, { token })
      if (reply.status !== 200) return Either.left({ status: reply.status, code: reply.body.code as string })
      rows.push(...reply.body.data)
      const link: { readonly url: string } | null = reply.body.meta.next
      next = link === null ? null : link.url.slice("http://market.test".length)
    }
    return Either.right(rows)
  })

/** Exports `query` of the endpoint `name` as `token`'s caller: its watermark and rows, or the problem it is refused with. */
const exported = (name: string, query: Record<string, string>, token: TokenName) =>
  Effect.gen(function* () {
    const call = (yield* makeExportCalls)(entry(name))!
    const result = yield* Effect.either(call({ principal: TOKENS[token], query, origin: requestOrigin("http://market.test") }))
    if (Either.isLeft(result)) {
      const problem = problemOf(result.left, "-")
      return Either.left({ status: problem.status, code: problem.code })
    }
    return Either.right(result.right)
  })

const file = <E>(format: ExportFormat, exported: RowExport<Readonly<Record<string, unknown>>, E>) =>
  Effect.map(Stream.runCollect(encodeExport(format, exported)), (chunks) => joined(Chunk.toReadonlyArray(chunks)))

const someOf = (values: ReadonlyArray<string>) => fc.uniqueArray(fc.constantFrom(...values), { minLength: 1, maxLength: 2 }).map((v) => v.join(","))

/** A rental query of any endpoint, filter, sort and batch size, and the token that asks it. */
const rentalQuery = fc.record({
  endpoint: fc.constantFrom("latest", "asOf", "history"),
  token: fc.constantFrom<TokenName>("all", "since", "rolling", "current"),
  vendor: fc.option(someOf(VENDORS), { nil: undefined }),
  gpu: fc.option(someOf(GPUS.map((g) => g.slug)), { nil: undefined }),
  contract: fc.option(fc.constantFrom("ondemand", "spot"), { nil: undefined }),
  sort: fc.option(fc.constantFrom("valid_from", "price_usd_per_gpu_hour", "gpu_count", "vendor", "region"), { nil: undefined }),
  order: fc.option(fc.constantFrom("asc", "desc"), { nil: undefined }),
  start: fc.integer({ min: 0, max: LAST_DAY }),
  span: fc.integer({ min: 1, max: 30 }),
  pageSize: fc.integer({ min: 5, max: 60 })
}).map((q) => {
  const query: Record<string, string> = { page_size: String(q.pageSize) }
  if (q.vendor !== undefined) query.vendor = q.vendor
  if (q.gpu !== undefined || q.endpoint !== "history") query.gpu_canonical_name = q.gpu ?? "h100-sxm"
  if (q.contract !== undefined) query.contract_type = q.contract
  if (q.sort !== undefined) query.sort_by = q.sort
  if (q.order !== undefined) query.sort_order = q.order
  if (q.endpoint === "history") {
    query.start = dayIso(q.start)
    query.end = dayIso(Math.min(q.start + q.span, LAST_DAY + 1))
  }
  if (q.endpoint === "asOf") query.at = dayIso(q.start)
  return { name: `rental.prices.${q.endpoint}`, query, token: q.token }
})

/**
 * Random queries, the whole history in small batches as each token with history may see it (its
 * floor cuts the window), and in the default batches, longer than any page (read past a store's row cache).
 */
const QUERIES: ReadonlyArray<{ readonly name: string; readonly query: Record<string, string>; readonly token: TokenName }> = [
  ...fc.sample(rentalQuery, { numRuns: 12, seed: 36 }),
  ...(["all", "since", "rolling"] as const).map((token) => ({
    name: "rental.prices.history", query: { start: dayIso(0), end: dayIso(LAST_DAY + 1), page_size: "7" }, token
  })),
  { name: "rental.prices.history", query: { start: dayIso(0), end: dayIso(LAST_DAY + 1) }, token: "all" }
]

const pathOf = (name: string, query: Record<string, string>) => `/api${entry(name).path}?${new URLSearchParams(query).toString()}`

describe("exports", () => {
  layer(testRedisLayer(), { timeout: "120 seconds" })((it) => {
    it.effect("equal the walked pages on every backend, in every format, for every token", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(NOW_MS)
        const backends = yield* seededBackends("export", seed)
        let refused = 0, batched = 0
        for (const [backend, context] of Object.entries(backends)) {
          for (const { name, query, token } of QUERIES) {
            const label = `${backend} ${name} ${JSON.stringify(query)} as ${token}`
            const paged = yield* Effect.provide(walk(pathOf(name, query), token), context as Context.Context<MarketServices | Storage>)
            const result = yield* Effect.provide(exported(name, query, token), context as Context.Context<MarketServices | Storage>)
            if (Either.isLeft(paged)) {
              assert.deepStrictEqual(result, Either.left(paged.left), label)
              refused++
              continue
            }
            assert.isTrue(Either.isRight(result), label)
            const exp = Either.getOrThrow(result)
            const rows = Chunk.toReadonlyArray(yield* Stream.runCollect(exp.rows))
            assert.deepStrictEqual(rows, paged.right, label)
            if (query.page_size !== undefined && rows.length > Number(query.page_size)) batched++
            assert.strictEqual(exp.watermark, yield* Effect.provide(Effect.flatMap(EventLogStore, (log) => log.head), context as Context.Context<MarketServices | Storage>), label)
            assertJsonlHolds(yield* file("jsonl", exp), rows)
            assertCsvHolds("gpu_rental_prices", yield* file("csv", exp), rows)
            const parquet = yield* file("parquet", exp)
            yield* Effect.promise(() => assertParquetHolds("gpu_rental_prices", parquet, rows))
            const estimate = yield* estimateExport(exp)
            assert.strictEqual(estimate.rows, rows.length, label)
            assert.strictEqual(estimate.bytes.jsonl, (yield* file("jsonl", exp)).length, label)
            assert.strictEqual(estimate.bytes.csv, (yield* file("csv", exp)).length, label)
            if (rows.length <= 25_000) assert.strictEqual(estimate.bytes.parquet, parquet.length, label)
          }
        }
        // The sample holds refusals (a token without history) and exports of several batches.
        assert.isAbove(refused, 0, "refused")
        assert.isAbove(batched, 0, "batched")
      }).pipe(Effect.scoped), { timeout: 300_000 })

    it.effect("end with an error when the rows change while they are read, on every backend", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(NOW_MS)
        const backends = yield* seededBackends("export-changed", seed)
        for (const [backend, context] of Object.entries(backends)) {
          const run = Effect.gen(function* () {
            const result = yield* exported("rental.prices.history", { start: dayIso(0), end: dayIso(LAST_DAY + 1), page_size: "100" }, "all")
            const exp = Either.getOrThrow(result)
            const ingest = yield* RentalPriceIngest
            let batches = 0
            const changed = observations(LAST_DAY).map((o) => {
              const price = (o.price_usd_per_gpu_hour ?? 1) + 1
              return { ...o, price_usd_per_gpu_hour: price, raw_price: price * o.gpu_count, extracted_at: new Date(NOW_MS - 3_600_000).toISOString() }
            })
            // The write lands once the first batch is read, before the second is.
            const read = yield* Effect.either(Stream.runCount(Stream.mapChunksEffect(exp.rows, (chunk) =>
              ++batches === 1 ? Effect.as(ingest.ingest(changed), chunk) : Effect.succeed(chunk))))
            assert.isTrue(Either.isLeft(read), `${backend}: an export read across a write must fail`)
            assert.strictEqual((read as Either.Left<{ _tag: string; detail: string }, number>).left._tag, "StorageUnavailable", JSON.stringify(read))
            assert.include((read as Either.Left<{ _tag: string; detail: string }, number>).left.detail, exp.watermark)
          })
          yield* Effect.provide(run, context as Context.Context<MarketServices | Storage>)
        }
      }).pipe(Effect.scoped), { timeout: 300_000 })
  })
})
