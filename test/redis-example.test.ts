import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { resolve } from "node:path"
import { promisify } from "node:util"
import { type RedisServer, startRedis } from "./support/redis"

const ROOT = resolve(import.meta.dirname, "..")

describe("examples/redis.ts", () => {
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
})
