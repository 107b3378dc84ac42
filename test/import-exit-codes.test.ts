import { assert, describe, it } from "@effect/vitest"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type Run, runWith } from "./support/cli"

/**
 * `gpu-market import` exit codes: 0 when every entry was stored or accounted for, 1 when any was
 * rejected (the good ones stored), 2 for a command line the import cannot take. The command runs
 * in process (support/cli.ts), to the exit code the bin's process ends with; test/cli.e2e.test.ts
 * shows the bin passes it on. What the counts say is checked through the Promise API elsewhere
 * (test/litellm-import, test/skypilot-import).
 */

const REAL = join(import.meta.dirname, "fixtures/real")
const dir = mkdtempSync(join(tmpdir(), "gpu-market-import-exit-"))

let dbs = 0
/** Runs `import` with `args` into a fresh SQLite file, and `env` over this process's environment. */
const importWith = (env: Readonly<Record<string, string>>, ...args: ReadonlyArray<string>): Promise<Run> =>
  runWith({ GPU_MARKET_IMPORT_POLICY: "", GPU_MARKET_IMPORT_BOUNDS: "", ...env }, "import", ...args, "--db", join(dir, `market-${++dbs}.db`))
const importFile = (...args: ReadonlyArray<string>) => importWith({}, ...args)

const HEADER = "vendor,vendor_gpu_name,vendor_sku,region,gpu_count,contract_type,raw_price,raw_price_unit,extracted_at"
const row = (sku: string, price: string) => `acme,H100 SXM,${sku},us-east,1,ondemand,${price},usd_per_gpu_hour,2026-05-01T00:00:00Z`
const csvFile = (name: string, rows: ReadonlyArray<string>) => {
  const path = join(dir, name)
  writeFileSync(path, [HEADER, ...rows].join("\n") + "\n")
  return path
}

/** The lines of a report's rejected list: `[line, message]`. */
const listed = (stdout: string) =>
  stdout.split("\n").filter((l) => /^ {2}line \d+/.test(l)).map((l) => [Number(/^ {2}line (\d+)/.exec(l)![1]), l.replace(/^ {2}line \d+: /, "")] as const)

describe("gpu-market import exit codes", () => {
  it("0 when every row was stored; 1 for a strict CSV's rejections, each naming its line, no line after a broken quote swallowed", async () => {
    const clean = await importFile(csvFile("clean.csv", [row("a", "2.5"), row("b", "3")]), "--type", "rental")
    assert.strictEqual(clean.code, 0, clean.stdout + clean.stderr)
    assert.strictEqual(clean.stdout.split("\n")[0], "read 2: stored 2, unchanged 0, duplicate 0, skipped 0, quarantined 0, rejected 0")

    const rows = Array.from({ length: 8 }, (_, i) => row(`s${i + 2}`, `2.${i + 2}`))
    const strict = csvFile("strict.csv", [
      ...rows, // lines 2–9
      "acme,H100 SXM,\"s10,us-east,1,ondemand,2.5,usd_per_gpu_hour,2026-05-01T00:00:00Z", // line 10: a quote never closed
      row("s11", "2.75"),
      row("s12", "298.75"), // above the rental bound (100)
      row("s13", "\"3\""),
      row("s14", "abc"),
      row("s15", "-2.5"),
      "acme,H100 SXM,s16,us-east" // a short row
    ])
    const rejections = join(dir, "rejections.jsonl")
    const r = await importFile(strict, "--type", "rental", "--show-rejections", "3", "--rejections", rejections)
    assert.strictEqual(r.code, 1, r.stderr)
    const lines = r.stdout.split("\n")
    assert.strictEqual(lines[0], "read 15: stored 10, unchanged 0, duplicate 0, skipped 0, quarantined 0, rejected 5 (not_csv 1, out_of_bounds 1, invalid 2, field_count 1)")
    assert.include(lines, "rejected (5, first 3 shown):")
    assert.deepStrictEqual(listed(r.stdout).map(([line]) => line), [10, 12, 14])
    assert.match(listed(r.stdout)[0]![1], /^not valid CSV: .*; the lines after line 10 are read on their own$/)
    assert.include(lines, "  … 2 more (--rejections FILE writes them all, --show-rejections N shows more)")
    assert.match(r.stderr, /^gpu-market import: 5 rejected \(see "rejected" above\) and not stored; every other entry is stored or accounted for$/m)
    const written = readFileSync(rejections, "utf8").trim().split("\n").map((l) => JSON.parse(l) as { status: string; line: number; reason: string; message: string })
    assert.deepStrictEqual(written.map((w) => [w.status, w.line, w.reason]), [
      ["rejected", 10, "not_csv"], ["rejected", 12, "out_of_bounds"], ["rejected", 14, "invalid"], ["rejected", 15, "invalid"], ["rejected", 16, "field_count"]
    ])
    assert.match(written[1]!.message, /298\.75 is outside the plausible range \[0\.01, 100\]/)
    assert.match(written[4]!.message, /expected 9 fields as the header names, got 4/)
  }, 60_000)

  it("1 for a public-format file with a price that is no price, listed by line", async () => {
    const catalog = join(dir, "acme-vms.csv")
    writeFileSync(catalog, ["InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice",
      "ok,H100,8,208,1800,24,us-east-1,,", "abc,H100,8,208,1800,abc,us-east-1,,", "neg,H100,8,208,1800,-2.5,us-east-1,,", "short,H100,8"].join("\n") + "\n")
    const r = await importFile(catalog, "--format", "skypilot", "--vendor", "acme", "--show-rejections", "0")
    assert.strictEqual(r.code, 1, r.stdout + r.stderr)
    // Three GPU rows of two prices (the spot ones empty), and a short row.
    assert.strictEqual(r.stdout.split("\n")[0], "read 7: stored 1, unchanged 0, duplicate 0, skipped 3 (no_spot 3), quarantined 0, rejected 3 (not_a_price 2, field_count 1)")
    assert.deepStrictEqual(listed(r.stdout), [])
    assert.include(r.stdout, "rejected (3, first 0 shown):")
  }, 60_000)

  it("bounds from --bounds and from $GPU_MARKET_IMPORT_BOUNDS store what the defaults reject; a bad bound is a usage error", async () => {
    const file = csvFile("dear.csv", [row("dear", "298.75")])
    assert.strictEqual((await importFile(file, "--type", "rental")).code, 1)
    const flag = await importFile(file, "--type", "rental", "--bounds", "rental=0.01..500")
    assert.strictEqual(flag.code, 0, flag.stdout + flag.stderr)
    assert.strictEqual(flag.stdout.split("\n")[0], "read 1: stored 1, unchanged 0, duplicate 0, skipped 0, quarantined 0, rejected 0")
    const env = await importWith({ GPU_MARKET_IMPORT_BOUNDS: "rental=0.01..500,llm=0..20000" }, file, "--type", "rental")
    assert.strictEqual(env.code, 0, env.stdout + env.stderr)
    // The flag wins over the environment.
    const both = await importWith({ GPU_MARKET_IMPORT_BOUNDS: "rental=0.01..500" }, file, "--type", "rental", "--bounds", "rental=0.01..200")
    assert.strictEqual(both.code, 1, both.stdout + both.stderr)
    const bad = await importFile(file, "--type", "rental", "--bounds", "rental=5")
    assert.strictEqual(bad.code, 2, bad.stderr)
    assert.match(bad.stderr, /^gpu-market import: --bounds: "rental=5" is not TYPE=MIN\.\.MAX/m)
    const badEnv = await importWith({ GPU_MARKET_IMPORT_BOUNDS: "gpu=1..2" }, file, "--type", "rental")
    assert.strictEqual(badEnv.code, 2, badEnv.stderr)
    assert.include(badEnv.stderr, "$GPU_MARKET_IMPORT_BOUNDS")
  }, 60_000)

  it("2 for a command line the import cannot take, naming what is wrong; nothing is imported", async () => {
    const lambda = join(REAL, "skypilot/lambda-vms.csv")
    const noVendor = await importFile(lambda, "--format", "skypilot")
    assert.strictEqual(noVendor.code, 2, noVendor.stderr)
    assert.match(noVendor.stderr, /^gpu-market import: --format skypilot needs --vendor <slug> \(see gpu-market import --help\)$/m)
    const yesterday = await importFile(lambda, "--format", "skypilot", "--vendor", "lambda", "--observed-at", "yesterday")
    assert.strictEqual(yesterday.code, 2, yesterday.stderr)
    assert.include(yesterday.stderr, "observed_at: expected an ISO 8601 datetime")
    const unknown = await importFile(lambda, "--format", "xlsx")
    assert.strictEqual(unknown.code, 2, unknown.stderr)
    const wrong = await importFile(join(REAL, "litellm/model_prices.json"), "--format", "skypilot", "--vendor", "lambda")
    assert.strictEqual(wrong.code, 2, wrong.stderr)
    assert.include(wrong.stderr, "the file is not a SkyPilot catalog")
    assert.include(wrong.stderr, "it looks like LiteLLM's price table (--format litellm)")
    assert.strictEqual(wrong.stdout, "")
    // Rows of a type: a public-format file given with --type is refused before any line is read.
    const rows = await importFile(join(REAL, "litellm/model_prices.json"), "--type", "llm")
    assert.strictEqual(rows.code, 2, rows.stderr)
    assert.match(rows.stderr, /^gpu-market import: the file is not JSON Lines rows .*; it looks like LiteLLM's price table \(--format litellm\)/m)
    const policy = join(dir, "policy.yaml")
    writeFileSync(policy, "quarantine:\n  - match: { vendor: acme }\n    reason: too_dear\n    why: x\n")
    const badPolicy = await importFile(lambda, "--format", "skypilot", "--vendor", "lambda", "--policy", policy)
    assert.strictEqual(badPolicy.code, 2, badPolicy.stderr)
    assert.include(badPolicy.stderr, `the import policy ${policy}:`)
  }, 60_000)
})
