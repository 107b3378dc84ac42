import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { resolve } from "node:path"
import { promisify } from "node:util"
import { Redis } from "ioredis"
import { type RedisServer, startRedis } from "./support/redis"

const ROOT = resolve(import.meta.dirname, "..")

describe("examples/redis.ts and examples/redis-market.ts", () => {
  let redis: RedisServer
  beforeAll(async () => {
    redis = await startRedis()
  })
  afterAll(() => redis?.stop())

  it("one runtime writes, another with its own connection reads the same market", { timeout: 90_000 }, async () => {
    const { stdout } = await promisify(execFile)(resolve(ROOT, "node_modules/.bin/tsx"), ["examples/redis.ts"], {
      cwd: ROOT, encoding: "utf8", timeout: 60_000, env: { ...process.env, GPU_MARKET_REDIS_URL: redis.url }
    })
    assert.match(stdout, new RegExp(`^writer: ingested 3 observations into ${redis.url.replace(/[.]/g, "\\.")} under gpu-market-example-`, "m"))
    assert.match(stdout, /^lambda\s+2\.49 USD\/GPU-h since 2026-06-02T00:00:00\.000000Z$/m)
    assert.match(stdout, /^coreweave\s+3\.29 USD\/GPU-h/m)
    assert.isBelow(stdout.indexOf("lambda"), stdout.indexOf("coreweave"), "cheapest first")
    assert.match(stdout, /^3 price changes between/m)
  })

  it("examples/redis-market.ts: two Promise-API markets on one url and prefix; its keys removed", { timeout: 90_000 }, async () => {
    const { stdout } = await promisify(execFile)(resolve(ROOT, "node_modules/.bin/tsx"), ["examples/redis-market.ts"], {
      cwd: ROOT, encoding: "utf8", timeout: 60_000, env: { ...process.env, GPU_MARKET_REDIS_URL: redis.url }
    })
    const prefix = /under (gpu-market-example-[0-9a-z]+): 1 row, lambda 2\.49$/m.exec(stdout)?.[1]
    assert.isDefined(prefix, stdout)
    const client = new Redis(redis.url)
    try {
      assert.deepStrictEqual(await client.keys(`${prefix}:*`), [], "the example deletes its keys")
    } finally {
      await client.quit()
    }
  })
})
