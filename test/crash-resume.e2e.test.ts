import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Redis } from "ioredis"
import { createWriteStream, mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { once } from "node:events"
import { killAt, redisProbe, spawnTree, sqliteProbe, type StoreCounts, type StoreProbe, stopAll, excerpt, type Tree, waitFor } from "./support/crash"
import { type DemoSnapshot, demoSnapshot, snapshotDifferences } from "./support/demo-snapshot"
import { freePort } from "./support/process"
import { type RedisServer, startRedis, uniquePrefix } from "./support/redis"

/**
 * Killed with `kill -9` in the middle of writing, a market must pick up where it stopped: run
 * again on the same store, `npm start` finishes its first seed and serves the same demo market
 * an uninterrupted first start serves, and `gpu-market import` of the same file finishes with
 * every observation stored exactly once. Real processes on real stores; each kill waits for a
 * point the store shows (never a sleep), freezes the process tree there, and kills it whole.
 */

const ROOT = resolve(import.meta.dirname, "..")
const BIN = join(ROOT, "node_modules/.bin/gpu-market")
const tempDir = (label: string) => mkdtempSync(join(tmpdir(), `gpu-market-${label}-`))

/** Where a process keeps its market: the environment that points npm start at it, CLI flags, a probe. */
interface Store {
  readonly env: Record<string, string>
  readonly flags: ReadonlyArray<string>
  readonly probe: () => StoreProbe
}

const sqliteStore = (): Store & { readonly file: string } => {
  const file = join(tempDir("crash"), "market.db")
  // An empty GPU_MARKET_REDIS_URL keeps a developer's Redis setting from taking over.
  return { file, env: { GPU_MARKET_DB: file, GPU_MARKET_REDIS_URL: "" }, flags: ["--db", file], probe: () => sqliteProbe(file) }
}

const redisStore = (server: RedisServer): Store & { readonly prefix: string } => {
  const prefix = uniquePrefix("crash")
  return {
    prefix,
    env: { GPU_MARKET_REDIS_URL: server.url, GPU_MARKET_REDIS_PREFIX: prefix },
    flags: ["--redis", server.url, "--redis-prefix", prefix],
    probe: () => redisProbe(server.url, prefix)
  }
}

// ---------------------------------------------------------------------------------------------
// npm start

/** `npm start` on a free port; the demo seeds itself on a fresh store. */
const npmStart = async (store: Store) => {
  const port = await freePort()
  const tree = spawnTree("npm", ["start", "--silent"], { cwd: ROOT, env: { ...process.env, ...store.env, PORT: String(port) } })
  return { tree, base: `http://127.0.0.1:${port}` }
}

/** Waits for the banner; throws with the output when the process exits first. The day the demo reaches. */
const listening = async (tree: Tree, what: string, timeoutMs: number): Promise<string> => {
  await waitFor(`${what} to listen`, async () => {
    if (/listening on http/.test(tree.output())) return true
    if (!tree.running()) {
      const { code, signal } = await tree.exited
      throw new Error(`${what} exited (${code ?? signal}) before listening:\n${excerpt(tree.output())}`)
    }
    return false
  }, timeoutMs)
  const day = /(?:to|current through) (\d{4}-\d{2}-\d{2})/.exec(tree.output())
  assert.isNotNull(day, tree.output())
  return day![1]!
}

/**
 * The points of the first seed where a kill lands, in the order the seed reaches them (rental
 * days, then hardware, LLM, transactions, indexes, tokens), each as what the store shows. A point
 * holds only while the seed is inside that phase: it has written some of the phase's data and
 * none of the next phase's.
 */
const SEED_POINTS: ReadonlyArray<{ readonly name: string; readonly holds: (c: StoreCounts) => boolean }> = [
  // A few weeks of the 180 rental days stored (the demo stores ~20k rental versions in all).
  { name: "rental prices", holds: (c) => c.rental >= 2_000 && c.hardware === 0 },
  // Some of the hardware weeks stored (~43k observations in all).
  { name: "hardware prices", holds: (c) => c.hardware >= 5_000 && c.llm === 0 },
  { name: "LLM token prices", holds: (c) => c.llm > 0 && c.deals === 0 },
  { name: "transactions", holds: (c) => c.deals > 0 && c.indexDefinitions === 0 },
  // Definitions stored, tokens (the very last step) not yet.
  { name: "indexes", holds: (c) => c.indexDefinitions > 0 && c.tokens === 0 }
]

/**
 * The demo market an uninterrupted first start serves, read once per run and shared by both
 * backends (the demo is the same on each; the snapshot leaves out what a store's random secrets
 * decide). Started when the first test starts, so it seeds while that test crashes its own.
 */
let reference: Promise<{ readonly day: string; readonly snapshot: DemoSnapshot }> | undefined
const referenceMarket = () =>
  (reference ??= (async () => {
    const { tree, base } = await npmStart(sqliteStore())
    try {
      const day = await listening(tree, "the reference start on a fresh store", 300_000)
      return { day, snapshot: await demoSnapshot(base) }
    } finally {
      await tree.stop()
    }
  })())

/**
 * Starts npm start on a fresh `store` and kills it at each seed point in turn, starting it again
 * on the same store after each kill; the last start must listen and serve the reference market.
 */
const crashThroughFirstSeed = async (store: Store) => {
  const expected = referenceMarket()
  // A rejection is reported where it is awaited; this keeps it from counting as unhandled meanwhile.
  expected.catch(() => {})
  const probe = store.probe()
  let tree: Tree | undefined
  try {
    let after = "a fresh store"
    for (const point of SEED_POINTS) {
      tree = (await npmStart(store)).tree
      try {
        await killAt(tree, probe, { name: `a kill -9 during ${point.name}`, holds: point.holds }, 300_000)
      } catch (e) {
        throw new Error(`npm start on ${after}: ${(e as Error).message}`)
      }
      after = `a store whose first seed was killed during ${point.name}`
    }
    const resumed = await npmStart(store)
    tree = resumed.tree
    const day = await listening(resumed.tree, `npm start on ${after}`, 300_000)
    const resumedSnapshot = await demoSnapshot(resumed.base)
    await resumed.tree.stop()
    const { day: referenceDay, snapshot } = await expected
    assert.strictEqual(day, referenceDay, "both markets end on the same day (a run across UTC midnight cannot compare them)")
    assert.deepStrictEqual(snapshotDifferences(resumedSnapshot, snapshot), [])
  } finally {
    await tree?.kill()
    await probe.close()
  }
}

describe("npm start killed (kill -9) during its first seed, then started again on the same store", () => {
  let redis: RedisServer | undefined
  beforeAll(async () => {
    redis = await startRedis()
  })
  afterAll(async () => {
    await stopAll()
    await redis?.stop()
  })

  it("SQLite: each later start resumes, and the last serves the market an uninterrupted first start serves", { timeout: 480_000 }, async () => {
    await crashThroughFirstSeed(sqliteStore())
  })

  it("Redis: each later start resumes, and the last serves the market an uninterrupted first start serves", { timeout: 600_000 }, async () => {
    await crashThroughFirstSeed(redisStore(redis!))
  })
})

// ---------------------------------------------------------------------------------------------
// gpu-market import

/**
 * The import file: every product observed at each of STEPS hourly steps, in time order. SQLite
 * imports 400 products (80k rows, 80 writes of 1,000 rows); Redis 50 (10k rows, 20 writes of 500),
 * as its import is about four times slower. Both leave a kill a third of the way through many
 * writes on each side.
 */
const STEPS = 200
const SQLITE_PRODUCTS = 400
const REDIS_PRODUCTS = 50
/** Every tenth step repeats the step before's price: an unchanged observation, no new version. */
const repeats = (t: number) => t % 10 === 9
/** Versions an import of `products` stores: one per product and step that changes the price. */
const versionsOf = (products: number) => products * Array.from({ length: STEPS }, (_, t) => t).filter((t) => !repeats(t)).length

const IMPORT_START_MS = Date.UTC(2025, 0, 1)
const stepPrice = (p: number, t: number): number => {
  const s = repeats(t) ? t - 1 : t
  // Consecutive steps always differ: the parity term and the mod-7 term never cancel.
  return Math.round((2 + (p % 50) * 0.1 + (s % 2) * 0.05 + (s % 7) * 0.01) * 10_000) / 10_000
}

/** Writes the deterministic JSON Lines file: step by step, every product at each hourly step. */
const writeRentalFile = async (path: string, products: number): Promise<void> => {
  const out = createWriteStream(path)
  for (let t = 0; t < STEPS; t++) {
    const at = new Date(IMPORT_START_MS + t * 3_600_000).toISOString()
    let chunk = ""
    for (let p = 0; p < products; p++) {
      const price = stepPrice(p, t)
      chunk += JSON.stringify({
        vendor: `v-import-${p % 7}`, vendor_gpu_name: "H100 SXM", vendor_sku: `sku-${p}`, region: p % 2 === 0 ? "us-east" : "eu-west",
        gpu_canonical_name: "h100-sxm", gpu_manufacturer: "nvidia", gpu_model: "H100", gpu_count: 1, gpu_memory_gb: 80,
        contract_type: "ondemand", price_usd_per_gpu_hour: price, raw_price: price, raw_price_unit: "usd_per_instance_hour",
        extracted_at: at
      }) + "\n"
    }
    if (!out.write(chunk)) await once(out, "drain")
  }
  out.end()
  await once(out, "finish")
}

/** `gpu-market import` of the file, as a process tree. */
const startImport = (file: string, store: Store): Tree =>
  spawnTree(BIN, ["import", file, "--type", "rental", ...store.flags], { cwd: ROOT, env: { ...process.env, NO_COLOR: "1" } })

/** How a process ended, and what it printed: an import's summary line first, rejected rows after. */
const ended = async (tree: Tree) => ({ ...(await tree.exited), output: tree.output() })

/** Runs an import to its end. */
const runImport = (file: string, store: Store) => ended(startImport(file, store))

const assertCompleted = (run: { readonly code: number | null; readonly signal: NodeJS.Signals | null; readonly output: string }, what: string) => {
  if (run.code === 0 && /^read \d+: stored \d+, unchanged \d+, duplicate \d+, skipped 0, quarantined 0, rejected 0$/m.test(run.output)) return
  // The summary and the first rejected rows; there may be tens of thousands of them.
  const lines = run.output.split("\n")
  assert.fail(`${what} ended with ${run.code ?? run.signal}:\n${lines.slice(0, 6).join("\n")}${lines.length > 6 ? `\n… (${lines.length} lines)` : ""}`)
}

/** A stored version as text: the fields that identify it and its place in its product's chain. */
type Version = { readonly base: string; readonly key: string; readonly from: string; readonly to: string | null; readonly price: number }

/** Versions not in one chain per product: each ends where its successor begins, only the last is open. */
const chainBreaks = (versions: ReadonlyArray<Version>): ReadonlyArray<Version> =>
  versions.filter((v, i) => {
    const next = versions[i + 1]
    return next !== undefined && next.base === v.base ? v.to !== next.from : v.to !== null
  })

const sqliteVersions = (file: string): ReadonlyArray<Version> => {
  const db = new Database(file, { readonly: true, fileMustExist: true })
  try {
    return db.prepare(`SELECT base_product_key AS base, product_key AS key, valid_from AS "from", valid_to AS "to", price_usd_per_gpu_hour AS price
      FROM rental_prices ORDER BY base_product_key, valid_from`).all() as Array<Version>
  } finally {
    db.close()
  }
}

/** The file's indexes: a bulk load holds some back while it runs. */
const sqliteIndexes = (file: string): ReadonlyArray<string> => {
  const db = new Database(file, { readonly: true, fileMustExist: true })
  try {
    return db.prepare("SELECT name FROM sqlite_schema WHERE type = 'index' ORDER BY name").pluck().all() as Array<string>
  } finally {
    db.close()
  }
}

/** A Redis store's versions by their keys: `product_key` hashes the product, `valid_from` and the price. */
const redisVersions = async (url: string, prefix: string) => {
  const redis = new Redis(url)
  try {
    const keys = (await redis.hkeys(`${prefix}:{rental}:rows`)).sort()
    const current = await redis.hgetall(`${prefix}:{rental}:current`)
    return { keys, current }
  } finally {
    redis.disconnect()
  }
}

/** Asserts two lists hold the same texts, saying how many are missing and extra rather than printing 180k lines. */
const sameTexts = (actual: ReadonlyArray<string>, expected: ReadonlyArray<string>, what: string) => {
  const have = new Set(actual)
  const want = new Set(expected)
  const missing = [...want].filter((v) => !have.has(v))
  const extra = [...have].filter((v) => !want.has(v))
  if (missing.length > 0 || extra.length > 0 || actual.length !== expected.length) {
    assert.fail(`${what}: ${actual.length} stored, ${expected.length} expected; ${missing.length} missing (e.g. ${missing[0]}), ${extra.length} extra (e.g. ${extra[0]})`)
  }
}

describe("gpu-market import killed (kill -9) midway, then run again on the same store", () => {
  const dir = tempDir("import")
  const files = { sqlite: join(dir, "rental-80k.jsonl"), redis: join(dir, "rental-10k.jsonl") }
  let redis: RedisServer | undefined
  beforeAll(async () => {
    await writeRentalFile(files.sqlite, SQLITE_PRODUCTS)
    await writeRentalFile(files.redis, REDIS_PRODUCTS)
    redis = await startRedis()
  }, 60_000)
  afterAll(async () => {
    await stopAll()
    await redis?.stop()
  })

  /** Kills an import once a third of its versions are stored (and before the last), then runs it again. */
  const crashImport = async (file: string, store: Store, versions: number) => {
    const probe = store.probe()
    const first = startImport(file, store)
    try {
      await killAt(first, probe, {
        name: "a kill -9 with a third of the rows stored",
        holds: (c) => c.rental >= versions / 3 && c.rental < versions
      }, 180_000)
    } finally {
      await first.kill()
      await probe.close()
    }
    const again = await runImport(file, store)
    assertCompleted(again, "the import run again after a kill -9 midway")
    // The killed run's writes recorded how far it got: the second run starts there.
    assert.match(again.output, /resumed after line \d+:/)
  }

  /** `crashImport` into `crashed` while the same file is imported uninterrupted into `clean` alongside (nothing in it depends on timing). */
  const crashBesideClean = async (file: string, crashed: Store, clean: Store, versions: number) => {
    const uninterrupted = startImport(file, clean)
    try {
      await crashImport(file, crashed, versions)
      assertCompleted(await ended(uninterrupted), "the uninterrupted import")
    } finally {
      await uninterrupted.kill()
    }
  }

  it(`SQLite: the second run completes; every one of the ${SQLITE_PRODUCTS * STEPS} rows is stored once, as an uninterrupted import stores it`, { timeout: 600_000 }, async () => {
    const file = files.sqlite
    const VERSIONS = versionsOf(SQLITE_PRODUCTS)
    const crashed = sqliteStore()
    const clean = sqliteStore()
    await crashBesideClean(file, crashed, clean, VERSIONS)
    const versions = sqliteVersions(crashed.file)
    assert.strictEqual(versions.length, VERSIONS, "one version per price change")
    assert.strictEqual(new Set(versions.map((v) => v.key)).size, VERSIONS, "no product_key twice")
    assert.deepStrictEqual(chainBreaks(versions).slice(0, 3), [], "one chain per product")
    const text = (vs: ReadonlyArray<Version>) => vs.map((v) => JSON.stringify(v))
    sameTexts(text(versions), text(sqliteVersions(clean.file)), "versions")
    // The killed run held the serving indexes back (a bulk load); the second run built them.
    assert.deepStrictEqual(sqliteIndexes(crashed.file), sqliteIndexes(clean.file))
  })

  it(`Redis: the second run completes; every one of the ${REDIS_PRODUCTS * STEPS} rows is stored once, as an uninterrupted import stores it`, { timeout: 600_000 }, async () => {
    const file = files.redis
    const VERSIONS = versionsOf(REDIS_PRODUCTS)
    const crashed = redisStore(redis!)
    const clean = redisStore(redis!)
    await crashBesideClean(file, crashed, clean, VERSIONS)
    const got = await redisVersions(redis!.url, crashed.prefix)
    const want = await redisVersions(redis!.url, clean.prefix)
    assert.strictEqual(got.keys.length, VERSIONS, "one version per price change")
    assert.strictEqual(Object.keys(got.current).length, REDIS_PRODUCTS, "one current version per product")
    // A version's key hashes its product, valid_from and price: the same keys are the same versions.
    sameTexts(got.keys, want.keys, "product keys")
    // And the same one current per product (valid_to is checked row by row on SQLite above).
    const pairs = (current: Record<string, string>) => Object.entries(current).map(([base, key]) => `${base} ${key}`)
    sameTexts(pairs(got.current), pairs(want.current), "current versions")
  })
})
