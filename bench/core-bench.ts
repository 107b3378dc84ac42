import {
  Auth, marketLayer, type MarketServices, type Page, type Principal, type RentalPrice, RentalPrices, type StorageError
} from "@gpu-market/core"
import { type QueryInput, requestOrigin } from "@gpu-market/core/adapters"
import * as SqliteStorage from "../packages/storage-sqlite/src/internal"
import type Database from "better-sqlite3"
import { Effect, Layer, ManagedRuntime } from "effect"
import { deepStrictEqual, ok } from "node:assert/strict"
import { BARE_SQL, openBare, type Row, rawRow } from "./bare"
import { type BenchConfig, BENCH_TOKEN, POPULAR_GPU, SORT_BY } from "./config"
import { interleaved, mean, median, quantile } from "./stats"

/** The caller every benchmark request comes from: full rental access, a limit it never reaches. */
export const benchPrincipal: Principal = {
  id: "bench" as Principal["id"],
  name: "benchmark",
  grants: { gpu_rental_prices: { history: { _tag: "unrestricted" } } },
  indices: "all",
  legacy_custom_index: false,
  procurement: false,
  rate_limit_per_minute: 1_000_000_000
}

export interface Timing {
  readonly medianUs: number
  /** Includes the GC pauses a median skips; throughput follows the mean. */
  readonly meanUs: number
  readonly p10Us: number
  readonly p90Us: number
  readonly samples: number
}

export const timing = (samples: ReadonlyArray<number>): Timing => ({
  medianUs: median(samples),
  meanUs: mean(samples),
  p10Us: quantile(samples, 0.1),
  p90Us: quantile(samples, 0.9),
  samples: samples.length
})

export interface CoreResults {
  readonly direct: {
    readonly core: Timing
    readonly bare: Timing
    /** Informational: the bare statement in raw mode with literal rows. */
    readonly bareRaw: Timing
    readonly plan: string
  }
  readonly deep: {
    readonly pageSize: number
    readonly page: number
    readonly first: Timing
    readonly deep: Timing
    readonly plan: string
    readonly walkMs: number
  }
  /** Length of a real page token, so the baseline server's meta is the same size. */
  readonly pageTokenLength: number
}

type Runtime = ManagedRuntime.ManagedRuntime<MarketServices, StorageError>

export const openMarket = (filename: string): Runtime =>
  ManagedRuntime.make(marketLayer.pipe(Layer.provide(SqliteStorage.layer({ filename }))))

/** Registers the bench token (idempotent: the market stores it by hash). */
export const issueBenchToken = (runtime: Runtime) =>
  runtime.runPromise(Effect.flatMap(Auth, (auth) => auth.issue(benchPrincipal, BENCH_TOKEN)))

const explain = (db: Database.Database, sql: string, params: ReadonlyArray<unknown>) =>
  (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>).map((r) => r.detail).join("; ")

/** (a) one `/latest` page through the core vs the bare statement; (b) page 1 vs a deep page. */
export const runCoreBench = async (config: BenchConfig, filename: string, runtime: Runtime): Promise<CoreResults> => {
  const rental = await runtime.runPromise(RentalPrices)
  const origin = requestOrigin("http://127.0.0.1:8787")
  const latest = (query: QueryInput): Page<RentalPrice> => runtime.runSync(rental.latest({ principal: benchPrincipal, query, origin }))

  const db = openBare(filename)
  try {
    const bare = db.prepare(BARE_SQL)
    const bareRaw = db.prepare(BARE_SQL).raw(true)
    const rawRows = () => (bareRaw.all(POPULAR_GPU) as Array<ReadonlyArray<unknown>>).map(rawRow)
    const query = { gpu_canonical_name: POPULAR_GPU, sort_by: SORT_BY, page_size: "100" }
    const bareRows = bare.all(POPULAR_GPU) as Array<Row>
    const corePage = latest(query)
    ok(bareRows.length === 101, `the bare statement returned ${bareRows.length} rows, not 101`)
    deepStrictEqual(corePage.data, bareRows.slice(0, 100), "core and bare statement disagree on the first 100 rows")
    deepStrictEqual(rawRows(), bareRows, "raw-mode rows differ from object rows")
    const pageTokenLength = corePage.meta.next?.query_params.page_token?.length ?? 0

    const direct = interleaved(
      [
        { name: "core", run: () => latest(query) },
        { name: "bare", run: () => bare.all(POPULAR_GPU) },
        { name: "bareRaw", run: rawRows }
      ],
      config
    )

    // Walks the real page tokens, as a client would, to the token that asks for the deep page.
    const firstQuery = { gpu_canonical_name: POPULAR_GPU, sort_by: SORT_BY, page_size: String(config.deepPageSize) }
    const nextOf = (page: Page<RentalPrice>, p: number) => {
      if (page.meta.next === null) {
        throw new Error(`${POPULAR_GPU} has only ${p - 1} pages of ${config.deepPageSize}; page ${config.deepPage} is needed`)
      }
      return page.meta.next.query_params
    }
    const walkStart = performance.now()
    let page = latest(firstQuery)
    for (let p = 2; p < config.deepPage; p++) page = latest(nextOf(page, p))
    const deepPageQuery = nextOf(page, config.deepPage)
    const walkMs = performance.now() - walkStart
    const offset = (config.deepPage - 1) * config.deepPageSize
    const expected = db.prepare(BARE_SQL.replace("LIMIT 101", "LIMIT ? OFFSET ?")).all(POPULAR_GPU, config.deepPageSize, offset)
    deepStrictEqual(latest(deepPageQuery).data, expected, `page ${config.deepPage} is not rows ${offset + 1}..${offset + config.deepPageSize}`)

    const deep = interleaved(
      [
        { name: "first", run: () => latest(firstQuery) },
        { name: "deep", run: () => latest(deepPageQuery) }
      ],
      config
    )

    const anchor = [{ op: "in" as const, field: "gpu_canonical_name", values: [POPULAR_GPU] }]
    const sort = { by: SORT_BY, order: "asc" as const }
    const firstSql = SqliteStorage.compilePage({ scope: { _tag: "latest" }, predicates: anchor, sort, after: undefined, limit: 101 })
    const deepSql = SqliteStorage.compilePage({ scope: { _tag: "latest" }, predicates: anchor, sort, after: { value: 1, tie: "0".repeat(32) }, limit: 11 })
    return {
      direct: {
        core: timing(direct.core!),
        bare: timing(direct.bare!),
        bareRaw: timing(direct.bareRaw!),
        plan: `core: ${explain(db, firstSql.sql, firstSql.params)} | bare: ${explain(db, BARE_SQL, [POPULAR_GPU])}`
      },
      deep: {
        pageSize: config.deepPageSize,
        page: config.deepPage,
        first: timing(deep.first!),
        deep: timing(deep.deep!),
        plan: explain(db, deepSql.sql, deepSql.params),
        walkMs
      },
      pageTokenLength
    }
  } finally {
    db.close()
  }
}
