import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createMarket, type Market, type PrincipalInput } from "@gpu-market/core"
import { sqlite } from "@gpu-market/storage-sqlite"
import { execFile } from "node:child_process"
import { join } from "node:path"
import { tempDb } from "./support/adapters"
import { SKYPILOT_CLOUDS, SKYPILOT_EXPECTED } from "./support/formats"

/**
 * `gpu-market import --format skypilot|litellm` on the real public files
 * (test/fixtures/real/SOURCES.md), run as a user runs it, into a fresh SQLite file; what it
 * stored is then read through the Promise API on the same file.
 */

const ROOT = join(import.meta.dirname, "..")
const BIN = join(ROOT, "node_modules/.bin/gpu-market")
const REAL = join(import.meta.dirname, "fixtures/real")

interface Run { readonly code: number; readonly stdout: string; readonly stderr: string }

const run = (...args: ReadonlyArray<string>): Promise<Run> =>
  new Promise((resolve) => {
    execFile(BIN, [...args], { env: { ...process.env, NO_COLOR: "1", GPU_MARKET_REDIS_URL: "" }, timeout: 300_000 },
      (error, stdout, stderr) => resolve({ code: error === null ? 0 : Number(error.code ?? 1), stdout, stderr }))
  })

const READER: PrincipalInput = {
  id: "reader", name: "reader",
  grants: { llm_token_prices: { history: { _tag: "unrestricted" } }, gpu_rental_prices: { history: { _tag: "unrestricted" } } },
  indices: [], legacy_custom_index: false, procurement: false, rate_limit_per_minute: 100_000
}

describe("gpu-market import --format litellm", () => {
  const db = tempDb("formats-cli-litellm")
  let market: Market
  beforeAll(async () => {
    const imported = await run("import", join(REAL, "litellm/model_prices.json"), "--format", "litellm", "--observed-at", "2026-07-24T18:23:43Z", "--db", db)
    // LiteLLM's wandb prices, 1,000,000 times too high, are refused by the plausibility bound: exit 1, the rest stored.
    assert.strictEqual(imported.code, 1, imported.stderr)
    assert.include(imported.stderr, "20 observation(s) rejected")
    assert.strictEqual(imported.stdout.split("\n")[0], "accepted 7289, duplicate 0, rejected 20, skipped 1076 (sample_spec 1, non_token_price 832, non_usd_price 56, no_provider 1, not_a_model 1, alias 185)")
    assert.include(imported.stdout, "observed at 2026-07-24T18:23:43.000000Z: opened 7289, closed 0, unchanged 0")
    assert.include(imported.stdout, "line 42286 (fireworks_ai/accounts/fireworks/models/): the key names no model slug")
    market = await createMarket({ storage: sqlite(db) })
    await market.tokens.create(READER, "reader")
  }, 300_000)
  afterAll(() => market.close())

  it("stores the real per-token prices per 1M tokens", async () => {
    const prices = async (model: string, provider: string) => {
      const page = await market.llm.tokenPrices.latest({ model: [model], serving_provider: [provider], page_size: 100 }, { token: "reader" })
      return Object.fromEntries(page.data.filter((r) => r.qualifiers === null && r.metric === "tokens").map((r) => [r.price_type, r.price_usd_per_1m_tokens]))
    }
    // gpt-4o: 2.5e-06 and 1e-05 USD per token; deepseek-chat: 2.8e-07 and 4.2e-07.
    assert.deepInclude(await prices("gpt-4o", "openai"), { input: 2.5, output: 10 })
    assert.deepInclude(await prices("deepseek-chat", "deepseek"), { input: 0.28, output: 0.42 })
  })
})

describe("gpu-market import --format skypilot", () => {
  const db = tempDb("formats-cli-skypilot")
  const runs = new Map<string, Run>()
  let market: Market
  beforeAll(async () => {
    for (const cloud of SKYPILOT_CLOUDS) {
      const args = ["import", join(REAL, `skypilot/${cloud}-vms.csv`), "--format", "skypilot", "--vendor", cloud, "--observed-at", "2026-07-01T00:00:00Z"]
      runs.set(cloud, await run(...args, ...(cloud === "lambda" ? ["--snapshot"] : []), "--db", db))
    }
    market = await createMarket({ storage: sqlite(db) })
    await market.tokens.create(READER, "reader")
  }, 600_000)
  afterAll(() => market.close())

  it("imports every real catalog: counts by reason, refused lines listed, exit 1 only where a row was refused", () => {
    for (const cloud of SKYPILOT_CLOUDS) {
      const { code, stdout, stderr } = runs.get(cloud)!
      const e = SKYPILOT_EXPECTED[cloud]
      const skipped = Object.entries(e.skipped)
      const lines = stdout.split("\n")
      assert.strictEqual(code, e.rejectedLines.length === 0 ? 0 : 1, `${cloud}: ${stderr}`)
      // A repeat of a row at one instant (runpod's zones, primeintellect's crusoecloud listings) is a duplicate: stored once.
      assert.strictEqual(lines[0], `accepted ${e.opened}, duplicate ${e.observations - e.rejectedLines.length - e.opened}, rejected ${e.rejectedLines.length}, ` +
        `skipped ${skipped.reduce((n, [, c]) => n + c, 0)} (${skipped.map(([reason, n]) => `${reason} ${n}`).join(", ")})`, cloud)
      assert.match(lines[1]!, new RegExp(`^observed at 2026-07-01T00:00:00.000000Z: opened ${e.opened}, closed 0, `), cloud)
      assert.deepStrictEqual(lines.slice(2).filter((l) => l.startsWith("  line ")).map((l) => Number(/^ {2}line (\d+)/.exec(l)![1])), [...e.rejectedLines], cloud)
    }
    assert.match(runs.get("lambda")!.stdout.split("\n")[1]!, /; snapshot withdrew 0$/)
  })

  it("serves the real vendors' H100s at Price / GPU count per GPU-hour", async () => {
    const rows = []
    for await (const row of market.rental.prices.latest.rows({ gpu_search: ["h100"], page_size: 1000 }, { token: "reader" })) rows.push(row)
    assert.includeMembers([...new Set(rows.map((r) => r.vendor))], [...SKYPILOT_CLOUDS])
    for (const row of rows) assert.approximately(row.price_usd_per_gpu_hour, row.raw_price / row.gpu_count, 5e-7, `${row.vendor} ${row.vendor_sku}`)
    const cudo = rows.find((r) => r.vendor === "cudo" && r.vendor_sku === "epyc-genoa-h100-nvl-pcie_8x64v128gb" && r.vendor_region === "au-melbourne-1")!
    assert.deepStrictEqual([cudo.gpu_canonical_name, cudo.gpu_memory_gb, cudo.gpu_count, cudo.raw_price, cudo.price_usd_per_gpu_hour], ["h100-nvl", 94, 8, 20.7008, 2.5876])
  })
})
