import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createMarket, describeCounts, type FormatImportSummary, type Market, type PrincipalInput } from "@gpu-market/core"
import { sqlite } from "@gpu-market/storage-sqlite"
import { closeSync, mkdtempSync, openSync, readFileSync, truncateSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { tempDb } from "./support/adapters"
import { type Run, runCli as run, runWith } from "./support/cli"
import { PUBLIC_POLICY_FILE, publicQuarantine, SKYPILOT_CLOUDS, SKYPILOT_EXPECTED } from "./support/formats"

/**
 * `gpu-market import --format skypilot|litellm` on the real public files
 * (test/fixtures/real/SOURCES.md), the command run in process (support/cli.ts) as the bin runs
 * it, into a fresh SQLite file; what it stored is then read through the Promise API on the same file.
 */

const REAL = join(import.meta.dirname, "fixtures/real")
const tempDir = (name: string) => mkdtempSync(join(tmpdir(), `${name}-`))

/** The counts line the Promise API's import of the same file gives, into a market of its own. */
const promiseCounts = async (name: string, import_: (market: Market) => Promise<FormatImportSummary>): Promise<string> => {
  const market = await createMarket({ storage: sqlite(tempDb(`formats-cli-api-${name}`)) })
  try {
    return describeCounts((await import_(market)).counts)
  } finally {
    await market.close()
  }
}

const READER: PrincipalInput = {
  id: "reader", name: "reader",
  grants: { llm_token_prices: { history: { _tag: "unrestricted" } }, gpu_rental_prices: { history: { _tag: "unrestricted" } } },
  indices: [], legacy_custom_index: false, procurement: false, rate_limit_per_minute: 100_000
}

describe("gpu-market import --format litellm", () => {
  const db = tempDb("formats-cli-litellm")
  let market: Market
  const rejections = join(tempDir("formats-cli-rejections"), "rejections.jsonl")
  let imported: Run
  beforeAll(async () => {
    // The shipped policy, named by the environment, quarantines the table's known-bad entries.
    imported = await runWith({ GPU_MARKET_IMPORT_POLICY: PUBLIC_POLICY_FILE },
      "import", join(REAL, "litellm/model_prices.json"), "--format", "litellm", "--observed-at", "2026-07-24T18:23:43Z", "--rejections", rejections, "--db", db)
    market = await createMarket({ storage: sqlite(db) })
    await market.tokens.create(READER, "reader")
  }, 300_000)
  afterAll(() => market.close())

  it("imports green with the shipped policy: the known-bad entries quarantined, listed and written to the rejections file; the Promise API counts alike", async () => {
    assert.strictEqual(imported.code, 0, imported.stderr)
    const lines = imported.stdout.split("\n")
    assert.strictEqual(lines[0], "read 8386: stored 7289, unchanged 0, duplicate 0, " +
      "skipped 1076 (sample_spec 1, non_token_price 832, non_usd_price 56, no_provider 1, not_a_model 1, alias 185), " +
      "quarantined 21 (out_of_bounds 20, unreadable 1), rejected 0")
    assert.strictEqual(lines[0], await promiseCounts("litellm", (m) =>
      m.ingest.litellm(readFileSync(join(REAL, "litellm/model_prices.json"), "utf8"), { observedAt: "2026-07-24T18:23:43Z", quarantine: publicQuarantine() })))
    assert.include(imported.stdout, "observed at 2026-07-24T18:23:43.000000Z: opened 7289, closed 0, unchanged 0")
    // The first 10 by line are shown, the rest counted.
    assert.include(imported.stdout, "quarantined (21, first 10 shown):")
    assert.include(imported.stdout, "  … 11 more (--rejections FILE writes them all")
    const written = readFileSync(rejections, "utf8").trim().split("\n").map((l) => JSON.parse(l) as { status: string; line: number; key: string; reason: string; rule: string })
    assert.strictEqual(written.length, 21)
    assert.deepStrictEqual(new Set(written.map((w) => w.status)), new Set(["quarantined"]))
    assert.deepInclude(written.at(-1), { line: 42286, key: "fireworks_ai/accounts/fireworks/models/", reason: "unreadable" })
    assert.isTrue(written.filter((w) => w.reason === "out_of_bounds").every((w) => w.key.startsWith("wandb/") && w.rule.includes("wandb")))
  })

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
      const policy = cloud === "primeintellect" ? ["--policy", PUBLIC_POLICY_FILE] : []
      runs.set(cloud, await run(...args, ...policy, ...(cloud === "lambda" ? ["--snapshot"] : []), "--db", db))
    }
    market = await createMarket({ storage: sqlite(db) })
    await market.tokens.create(READER, "reader")
  }, 600_000)
  afterAll(() => market.close())

  it("imports every real catalog green (primeintellect's listing at two prices quarantined by the shipped policy), accounting for every entry", async () => {
    for (const cloud of SKYPILOT_CLOUDS) {
      const { code, stdout, stderr } = runs.get(cloud)!
      const e = SKYPILOT_EXPECTED[cloud]
      const lines = stdout.split("\n")
      assert.strictEqual(code, 0, `${cloud}: ${stderr}`)
      // What the Promise API rejects, the shipped rule quarantines: the same lines, not a failure.
      const counts = { ...e.counts, rejected: {}, quarantined: e.counts.rejected }
      assert.strictEqual(lines[0], describeCounts(counts), cloud)
      assert.match(lines[1]!, new RegExp(`^observed at 2026-07-01T00:00:00.000000Z: opened ${e.counts.stored}, closed 0, `), cloud)
      assert.deepStrictEqual(lines.slice(2).filter((l) => l.startsWith("  line ")).map((l) => Number(/^ {2}line (\d+)/.exec(l)![1])), [...e.rejectedLines], cloud)
    }
    assert.match(runs.get("lambda")!.stdout.split("\n")[1]!, /; snapshot withdrew 0$/)
    // runpod's repeated zones read as duplicates, and no_spot as skipped, on both surfaces alike.
    for (const cloud of ["runpod", "lambda"] as const) {
      const csv = readFileSync(join(REAL, `skypilot/${cloud}-vms.csv`), "utf8")
      assert.strictEqual(runs.get(cloud)!.stdout.split("\n")[0], await promiseCounts(cloud, (m) => m.ingest.skypilot(csv, { vendor: cloud, observedAt: "2026-07-01T00:00:00Z" })), cloud)
    }
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

describe("gpu-market import --format litellm of a file over the cap", () => {
  it("is refused as a usage error before it is read: the table is read whole", async () => {
    const dir = tempDir("formats-cli-cap")
    const file = join(dir, "model_prices.json")
    // A sparse file of 64 MiB and one byte: its size is all the check reads.
    closeSync(openSync(file, "w"))
    truncateSync(file, 64 * 1024 * 1024 + 1)
    const { code, stderr } = await run("import", file, "--format", "litellm", "--db", join(dir, "market.db"))
    assert.strictEqual(code, 2, stderr)
    assert.include(stderr, "--format litellm reads the table whole")
    assert.include(stderr, "over the 67108864 an import takes")
  })
})
