import { afterAll, afterEach, assert, beforeAll, describe, it } from "@effect/vitest"
import { createMarket, type RentalPrice } from "@gpu-market/core"
import { redis } from "@gpu-market/storage-redis"
import { sqlite } from "@gpu-market/storage-sqlite"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { spawnTree, stopAll, excerpt, type Tree, waitFor } from "./support/crash"
import { TOKENS } from "./support/market"
import { RACE_VENDOR, raceInstant, racePrice, type RaceResult } from "./support/racing-writer"
import { type RedisServer, startRedis, uniquePrefix } from "./support/redis"

/**
 * Two writers race on one product: two processes, each with its own connection to one SQLite
 * file, or its own client to one redis-server, ingest successive price changes of the same
 * product, each minute its own call, each writer in time order, as fast as they can: both send
 * every minute (two replicas of one feed), so each often sends what the other has just stored,
 * or reads a current row the other is about to replace. (Interleaving the minutes instead, A the
 * even and B the odd, is not a race but late data: an observation older than the price in force,
 * at a price never in force then, is refused by the write path's rule, whoever sends it.)
 * stored. Neither caller may get an error, and the product's stored history must be exactly one
 * version chain holding every price change: no lost update, no second current row, no gap or
 * overlap.
 */

const ROOT = resolve(import.meta.dirname, "..")
const TSX = join(ROOT, "node_modules/.bin/tsx")
/** Calls per writer: hundreds of rounds, so the two interleave in every way they can. */
const ROUNDS = 300

type Storage = { readonly env: Record<string, string>; readonly open: () => ReturnType<typeof sqlite> }

/** Runs both writers to the end and returns their results. */
const race = async (storage: Storage): Promise<ReadonlyArray<RaceResult>> => {
  const writers: Array<Tree> = [0, 1].map((parity) => {
    const tree = spawnTree(TSX, ["test/support/racing-writer.ts"], {
      cwd: ROOT,
      env: { ...process.env, ...storage.env, RACE_PARITY: String(parity), RACE_ROUNDS: String(ROUNDS) },
      stdin: "pipe"
    })
    return tree
  })
  await waitFor("both writers ready", () => {
    for (const w of writers) if (!w.running()) throw new Error(`a writer exited before the race:\n${excerpt(w.output())}`)
    return writers.every((w) => /^ready$/m.test(w.output()))
  }, 60_000)
  for (const w of writers) w.child.stdin!.end("go\n")
  return await Promise.all(writers.map(async (w) => {
    const { code, signal } = await w.exited
    const line = /^result (.*)$/m.exec(w.output())
    assert.isNotNull(line, `writer exited (${code ?? signal}) without a result:\n${excerpt(w.output())}`)
    return JSON.parse(line![1]!) as RaceResult
  }))
}

/** Every stored version of the raced product, oldest first, read through the Promise API. */
const history = async (storage: Storage): Promise<{ readonly versions: ReadonlyArray<RentalPrice>; readonly current: ReadonlyArray<RentalPrice> }> => {
  const market = await createMarket({ storage: storage.open() })
  try {
    await market.tokens.create(TOKENS.all, "all")
    const versions: Array<RentalPrice> = []
    for await (const row of market.rental.prices.history.rows(
      { vendor: RACE_VENDOR, start: "2000-01-01", sort_by: "valid_from", sort_order: "asc", page_size: 1000 }, { token: "all" }
    )) versions.push(row)
    const current = await market.rental.prices.latest({ vendor: RACE_VENDOR, page_size: 1000 }, { token: "all" })
    return { versions, current: current.data }
  } finally {
    await market.close()
  }
}

const checkRace = async (storage: Storage) => {
  const results = await race(storage)
  const { versions, current } = await history(storage)
  const got = versions.map((v) => ({ from: v.valid_from, to: v.valid_to, price: v.price_usd_per_gpu_hour }))
  // One chain, whatever it holds: each version ends where the next begins, only the last is open.
  const breaks = got.flatMap((v, i) => (i < got.length - 1 ? v.to !== got[i + 1]!.from : v.to !== null) ? [i] : [])
  assert.deepStrictEqual(breaks.slice(0, 5), [], `the ${got.length} stored versions are not one chain at ${breaks.length} places (first 5 shown)`)
  assert.strictEqual(current.length, 1, "exactly one current row")
  for (const r of results) {
    assert.deepStrictEqual(r.refused.slice(0, 5), [], `writer ${r.parity} was refused ${r.refused.length} of ${r.calls} calls (first 5 shown)`)
    assert.strictEqual(r.written, r.calls)
  }
  // Every change, in order: minute m's price from minute m to minute m + 1, the last one current.
  const minutes = 2 * ROUNDS
  // Stored instants carry microseconds.
  const micros = (m: number) => raceInstant(m).replace(/Z$/, "000Z")
  const want = Array.from({ length: minutes }, (_, m) => ({
    from: micros(m),
    to: m === minutes - 1 ? null : micros(m + 1),
    price: racePrice(m)
  }))
  const firstDifference = want.findIndex((w, i) => JSON.stringify(got[i]) !== JSON.stringify(w))
  assert.strictEqual(firstDifference, -1,
    `${got.length} versions stored, ${minutes} price changes sent; first difference at minute ${firstDifference}: ` +
    `stored ${JSON.stringify(got.slice(Math.max(0, firstDifference - 1), firstDifference + 2))}, ` +
    `expected ${JSON.stringify(want.slice(Math.max(0, firstDifference - 1), firstDifference + 2))}`)
  assert.strictEqual(got.length, minutes)
  assert.strictEqual(current[0]!.price_usd_per_gpu_hour, racePrice(minutes - 1))
}

afterEach(() => stopAll())

describe("two writers racing on one product", () => {
  let redisServer: RedisServer | undefined
  beforeAll(async () => {
    redisServer = await startRedis()
  })
  afterAll(async () => {
    await redisServer?.stop()
  })

  const sqliteStore = async (): Promise<Storage> => {
    const db = join(mkdtempSync(join(tmpdir(), "gpu-market-race-")), "market.db")
    // Migrate the file first: both writers then open an existing store instead of racing to create it.
    await (await createMarket({ storage: sqlite(db) })).close()
    return { env: { RACE_DB: db }, open: () => sqlite(db) }
  }
  const redisStore = (): Storage => {
    const prefix = uniquePrefix("race")
    return { env: { RACE_REDIS_URL: redisServer!.url, RACE_REDIS_PREFIX: prefix }, open: () => redis(redisServer!.url, prefix) }
  }

  it("SQLite: two connections to one file both succeed; one version chain with every change", { timeout: 120_000 }, async () => {
    await checkRace(await sqliteStore())
  })

  it("Redis: two clients on one server both succeed; one version chain with every change", { timeout: 120_000 }, async () => {
    await checkRace(redisStore())
  })
})
