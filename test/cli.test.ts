import { assert, describe, it } from "@effect/vitest"
import { existsSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { beforeAll } from "vitest"
import { freePort } from "./support/process"
import { type Run, runCli as run, runWith, serving } from "./support/cli"

/**
 * The `gpu-market` commands run in process (support/cli.ts) on temp SQLite files, as the bin runs
 * them: seeding, tokens, serving, imports with rejected rows, index computation, option checks.
 * cli.e2e.test.ts runs the bin itself for what only its process shows.
 */

const dir = mkdtempSync(join(tmpdir(), "gpu-market-cli-"))
const DB = join(dir, "market.db")

/** Runs `f` on each of `items` in turn: commands in one process take turns. */
const inTurn = async <A>(items: ReadonlyArray<A>, f: (item: A) => Promise<Run>): Promise<ReadonlyArray<Run>> => {
  const runs: Array<Run> = []
  for (const item of items) runs.push(await f(item))
  return runs
}

/** Serves `db` (with `env`), GETs each path with the token, and stops. */
const serveAll = async (token: string, paths: ReadonlyArray<string>, db = DB, env: Readonly<Record<string, string>> = {}) => {
  const port = await freePort()
  return serving(["serve", "--db", db, "--port", String(port)], env, async () => {
    const replies: Array<{ readonly status: number; readonly body: any }> = []
    for (const path of paths) {
      const response = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { authorization: `Bearer ${token}` } })
      replies.push({ status: response.status, body: await response.json() as any })
    }
    return replies
  })
}

const serve = async (token: string, path: string) => (await serveAll(token, [path]))[0]!

const RENTAL = {
  vendor: "acme", vendor_gpu_name: "H100 SXM", region: "us-east", gpu_canonical_name: "h100-sxm", gpu_manufacturer: "nvidia",
  gpu_model: "H100", gpu_count: 1, gpu_memory_gb: 80, contract_type: "ondemand", price_usd_per_gpu_hour: 2.5, raw_price: 2.5,
  raw_price_unit: "usd_per_instance_hour", extracted_at: new Date(Date.now() - 3_600_000).toISOString()
}

describe("gpu-market commands", () => {
  beforeAll(async () => {
    const seeded = await run("seed", "--size", "small", "--db", DB)
    assert.strictEqual(seeded.code, 0, seeded.stderr)
    assert.match(seeded.stdout, /Seeded the demo market from \d{4}-\d{2}-\d{2} to \d{4}-\d{2}-\d{2} \(15 days\)/)
    assert.match(seeded.stderr, /rental prices: 15\/15/) // progress, plain lines off a terminal
  }, 180_000)

  it("a value out of its range is refused before anything opens: one line naming the option, exit 2", async () => {
    const cases = [
      [["serve", "--port", "99999"], "gpu-market serve: --port is 99999; expected a whole number from 1 to 65535"],
      [["serve", "--base-url", "host/market"], 'gpu-market serve: --base-url is "host/market"; expected an http or https URL'],
      [["serve", "--page-cache-mb", "-5"], "gpu-market serve: --page-cache-mb is -5; expected a whole number of at least 0"],
      [["serve", "--rate-limits", "global"], 'gpu-market serve: --rate-limits is "global"; expected process, shared'],
      [["seed", "--days", "-3"], "gpu-market seed: --days is -3; expected a whole number of at least 0"],
      [["seed", "--vendors", "0"], "gpu-market seed: --vendors is 0; expected a whole number from 1 to"],
      [["import", "missing.csv", "--type", "rental", "--show-rejections", "-1"], "gpu-market import: --show-rejections is -1"],
      [["sync", "--once", "--preset", "public", "--lease-ms", "10"], "gpu-market sync: --lease-ms is 10; expected a whole number of at least 300"]
    ] as const
    const db = join(dir, "untouched.db")
    const runs = await inTurn(cases, ([args]) => run(...args, "--db", db))
    cases.forEach(([args, says], i) => {
      const r = runs[i]!
      assert.strictEqual(r.code, 2, `${args.join(" ")}: ${r.stderr}`)
      assert.match(r.stderr, /^[^\n]+\n$/)
      assert.include(r.stderr, says)
    })
    assert.isFalse(existsSync(db), "nothing was opened")
  }, 120_000)

  it("tokens create refuses a token that reads nothing, and --indices or --legacy without the indexes grant", async () => {
    const refusals = [
      [[], "a token with no --grant can read nothing"],
      [["--grant", "rental", "--indices", "gpu-h100-sxm-na-daily"], "--indices needs --grant indexes"],
      [["--grant", "rental:all", "--legacy"], "--legacy needs --grant indexes"],
      [["--grant", "rentals"], "--grant rentals: expected <type>[:<history>]"],
      [["--grant", "indexes"], "--grant indexes needs --indices"],
      [["--grant", "indexes", "--indices", "nope-index"], "--indices: no index nope-index in the market; known: "],
      [["--grant", "rental", "--rate-limit", "0"], "--rate-limit is 0; expected a whole number of at least 1"],
      [["--grant", "rental:since=2026-02-30"], "--grant rental:since=2026-02-30: history is"]
    ] as const
    const refused = await inTurn(refusals, ([args]) => run("tokens", "create", "--name", "Useless", "--id", "useless", ...args, "--db", DB))
    refusals.forEach(([, says], i) => {
      const r = refused[i]!
      assert.strictEqual(r.code, 2, r.stderr)
      assert.include(r.stderr, says)
      assert.strictEqual(r.stdout, "", "no secret printed")
    })
    assert.notInclude((await run("tokens", "list", "--db", DB)).stdout, "useless")
    const procurementOnly = await run("tokens", "create", "--name", "Buyer only", "--id", "buyer-only", "--procurement", "--db", DB)
    assert.strictEqual(procurementOnly.code, 0, procurementOnly.stderr)
    const indices = await run("tokens", "create", "--name", "Index reader", "--id", "index-reader", "--grant", "indexes", "--indices", "gpu-h100-sxm-na-daily", "--legacy", "--db", DB)
    assert.strictEqual(indices.code, 0, indices.stderr)
    assert.match((await run("tokens", "list", "--db", DB)).stdout, /^index-reader {2}Index reader {2}indexes \(current\) {2}indices: gpu-h100-sxm-na-daily .* legacy$/m)
  }, 120_000)

  it("tokens create prints a secret once that serve accepts; revoke makes it 401", async () => {
    const created = await run("tokens", "create", "--name", "Acme research", "--id", "acme", "--grant", "rental:all", "--db", DB)
    assert.strictEqual(created.code, 0, created.stderr)
    const secret = created.stdout.trim()
    assert.match(secret, /^\S{20,}$/)
    assert.include(created.stderr, "shown this once")

    const listed = await run("tokens", "list", "--db", DB)
    assert.strictEqual(listed.code, 0)
    assert.match(listed.stdout, /^acme {2}Acme research {2}rental \(all history\)/m)
    assert.notInclude(listed.stdout, secret)
    assert.notMatch(listed.stdout, /[0-9a-f]{64}/) // no hashes either

    const ok = await serve(secret, "/v2/gpu/rental/prices/latest?gpu_canonical_name=h100-sxm&page_size=2")
    assert.strictEqual(ok.status, 200)
    assert.strictEqual(ok.body.data.length, 2)
    const forbidden = await serve(secret, "/v2/gpu/hardware/prices/latest")
    assert.strictEqual(forbidden.status, 403)

    const revoked = await run("tokens", "revoke", "acme", "--db", DB)
    assert.strictEqual(revoked.code, 0, revoked.stderr)
    assert.strictEqual((await serve(secret, "/v2/gpu/rental/prices/metadata")).status, 401)
    const again = await run("tokens", "revoke", "acme", "--db", DB)
    assert.strictEqual(again.code, 2, "a principal that holds no token is a usage error")
    assert.strictEqual(again.stderr, "gpu-market tokens revoke: no principal acme holds a token; tokens list shows those that do (see gpu-market tokens revoke --help)\n")
  }, 180_000)

  it("serve --cors-origin (repeated, comma lists, default $GPU_MARKET_CORS_ORIGINS) lets those origins in and no other; a bad origin stops it", async () => {
    /** Starts serve with `args` and `env`, and answers a preflight from each origin with its Access-Control-Allow-Origin. */
    const allowedOf = async (args: ReadonlyArray<string>, env: Readonly<Record<string, string>>, origins: ReadonlyArray<string>) => {
      const port = await freePort()
      return serving(["serve", "--db", DB, "--port", String(port), ...args], env, async (output) => {
        const allowed: Array<string | null> = []
        for (const origin of origins) {
          const r = await fetch(`http://127.0.0.1:${port}/v2/gpu/rental/prices/latest`, {
            method: "OPTIONS", headers: { origin, "access-control-request-method": "GET" }
          })
          allowed.push(r.status === 204 ? r.headers.get("access-control-allow-origin") : null)
        }
        return { allowed, output: output() }
      })
    }
    const flags = await allowedOf(["--cors-origin", "https://a.example, https://b.example", "--cors-origin", "http://localhost:5173"],
      { GPU_MARKET_CORS_ORIGINS: "https://env.example" }, ["https://b.example", "http://localhost:5173", "https://env.example"])
    assert.deepStrictEqual(flags.allowed, ["https://b.example", "http://localhost:5173", null])
    assert.include(flags.output, "CORS allowed for: https://a.example, https://b.example, http://localhost:5173")
    const fromEnv = await allowedOf([], { GPU_MARKET_CORS_ORIGINS: "https://env.example" }, ["https://env.example", "https://a.example"])
    assert.deepStrictEqual(fromEnv.allowed, ["https://env.example", null])
    const off = await allowedOf([], {}, ["https://a.example"])
    assert.deepStrictEqual(off.allowed, [null])
    assert.notInclude(off.output, "CORS")
    const bad = await run("serve", "--db", DB, "--port", String(await freePort()), "--cors-origin", "https://a.example/")
    assert.notStrictEqual(bad.code, 0)
    assert.include(bad.stderr + bad.stdout, "did you mean https://a.example?")
  }, 180_000)

  it("serve --rate-limits and $GPU_MARKET_RATE_LIMITS choose the mode; another value is refused", async () => {
    const port = await freePort()
    const output = await serving(["serve", "--db", DB, "--port", String(port), "--rate-limits", "shared"], { GPU_MARKET_RATE_LIMITS: "process" }, async (output) => output())
    assert.match(output, /; rate limits: shared\)/)
    const bad = await runWith({ GPU_MARKET_RATE_LIMITS: "cluster" }, "serve", "--db", DB, "--port", String(port))
    assert.notStrictEqual(bad.code, 0)
    assert.include(bad.stdout + bad.stderr, 'GPU_MARKET_RATE_LIMITS is "cluster"; expected process or shared')
  }, 120_000)

  it("serve mounts the procurement service as npm start does, and documents it", async () => {
    const created = await run("tokens", "create", "--name", "Buyer", "--id", "cli-buyer", "--procurement", "--db", DB)
    assert.strictEqual(created.code, 0, created.stderr)
    const [gpus, doc] = await serveAll(created.stdout.trim(), ["/supply/gpus", "/openapi.json"])
    assert.strictEqual(gpus!.status, 200, JSON.stringify(gpus!.body))
    assert.include(gpus!.body.data.map((g: { gpu_canonical_name: string }) => g.gpu_canonical_name), "h100-sxm")
    assert.property(doc!.body.paths, "/supply/get_offers")
  }, 120_000)

  it("import of JSON Lines and CSV: bad rows listed by line, exit 1, good rows queryable", async () => {
    const jsonl = join(dir, "rental.jsonl")
    writeFileSync(jsonl, [
      JSON.stringify({ ...RENTAL, vendor: "jsonl-co" }),
      "{ not json",
      "",
      JSON.stringify({ ...RENTAL, vendor: "jsonl-co", region: "eu-west", gpu_count: -1 }),
      JSON.stringify({ ...RENTAL, vendor: "jsonl-co", region: "ap-south" })
    ].join("\n") + "\n")
    const j = await run("import", jsonl, "--type", "rental", "--db", DB)
    assert.strictEqual(j.code, 1, j.stderr)
    assert.include(j.stdout.split("\n"), "read 4: stored 2, unchanged 0, duplicate 0, skipped 0, quarantined 0, rejected 2 (not_json 1, invalid 1)")
    assert.match(j.stdout, /line 2: not JSON/)
    assert.match(j.stdout, /line 4: gpu_count/)

    const csv = join(dir, "rental.csv")
    const header = Object.keys(RENTAL).join(",")
    const row = (over: Record<string, string>) => Object.keys(RENTAL).map((k) => over[k] ?? String((RENTAL as any)[k])).join(",")
    writeFileSync(csv, [
      header,
      row({ vendor: "csv-co", vendor_gpu_name: "\"H100, \"\"SXM5\"\"\"" }),
      row({ vendor: "csv-co", region: "eu-west", gpu_memory_gb: "lots" }),
      row({ vendor: "csv-co", region: "ap-south", vendor_gpu_name: "\"H100\nSXM\"" })
    ].join("\r\n") + "\r\n")
    const c = await run("import", csv, "--type", "rental", "--db", DB)
    assert.strictEqual(c.code, 1, c.stderr)
    assert.include(c.stdout.split("\n"), "read 3: stored 2, unchanged 0, duplicate 0, skipped 0, quarantined 0, rejected 1 (invalid 1)")
    assert.match(c.stdout, /line 3: gpu_memory_gb/)

    const clean = join(dir, "clean.jsonl")
    writeFileSync(clean, JSON.stringify({ ...RENTAL, vendor: "clean-co" }) + "\n")
    // An import keeps no rows for pages, so a row-cache size it does not use stops nothing.
    const ok = await runWith({ GPU_MARKET_ROW_CACHE_ROWS: "-5" }, "import", clean, "--type", "rental", "--db", DB)
    assert.strictEqual(ok.code, 0, ok.stdout + ok.stderr)
    assert.include(ok.stdout.split("\n"), "read 1: stored 1, unchanged 0, duplicate 0, skipped 0, quarantined 0, rejected 0")
    // Each write recorded how far its file got: a file imported again skips what was done.
    const again = await run("import", clean, "--type", "rental", "--db", DB)
    assert.strictEqual(again.code, 0, again.stdout + again.stderr)
    assert.include(again.stdout.split("\n"), "read 0: stored 0, unchanged 0, duplicate 0, skipped 0, quarantined 0, rejected 0")
    assert.match(again.stdout, /resumed after line 1:/)
    const jsonlAgain = await run("import", jsonl, "--type", "rental", "--db", DB)
    assert.include(jsonlAgain.stdout.split("\n"), "read 0: stored 0, unchanged 0, duplicate 0, skipped 0, quarantined 0, rejected 0")
    assert.match(jsonlAgain.stdout, /resumed after line 5:/)

    // `serve` without --demo revokes the demo tokens: read with a token of our own.
    const token = (await run("tokens", "create", "--name", "reader", "--grant", "rental", "--db", DB)).stdout.trim()
    const r = await serve(token, "/v2/gpu/rental/prices/latest?vendor=jsonl-co,csv-co,clean-co&sort_by=vendor")
    assert.strictEqual(r.status, 200)
    const rows = r.body.data.map((d: any) => `${d.vendor}/${d.region}/${d.vendor_gpu_name}`).sort()
    assert.deepStrictEqual(rows, [
      "clean-co/us-east/H100 SXM", "csv-co/ap-south/H100\nSXM", "csv-co/us-east/H100, \"SXM5\"",
      "jsonl-co/ap-south/H100 SXM", "jsonl-co/us-east/H100 SXM"
    ])
  }, 180_000)

  it("import --type fx and --type gpus extend what later imports convert and resolve with; repeats count as duplicates", async () => {
    const fx = join(dir, "fx.csv")
    writeFileSync(fx, ["currency,date,usd_per_unit", "EUR,2026-05-01,1.1", "EUR,2026-05-04,1.2", "USD,2026-05-04,1"].join("\n") + "\n")
    const f = await run("import", fx, "--type", "fx", "--db", DB)
    assert.strictEqual(f.code, 1, f.stderr)
    assert.include(f.stdout.split("\n"), "read 3: stored 2, unchanged 0, duplicate 0, skipped 0, quarantined 0, rejected 1 (invalid 1)")
    assert.match(f.stdout, /line 4: currency: USD needs no rate/)
    assert.match(f.stderr, /^gpu-market import: 1 rejected \(see "rejected" above\) and not stored; every other entry is stored or accounted for$/m)

    // A list cell is ";"-separated.
    const gpus = join(dir, "gpus.csv")
    writeFileSync(gpus, ["gpu_canonical_name,gpu_manufacturer,gpu_model,gpu_memory_gb,form_factor,spellings", "zeta-9,zeta,Z9,64,,Zeta 9;Z9 64GB"].join("\n") + "\n")
    const g = await run("import", gpus, "--type", "gpus", "--db", DB)
    assert.strictEqual(g.code, 0, g.stdout + g.stderr)
    assert.include(g.stdout.split("\n"), "read 1: stored 1, unchanged 0, duplicate 0, skipped 0, quarantined 0, rejected 0")

    // Another process: the rows convert at the imported rate and resolve to the imported GPU.
    const rental = (over: Record<string, unknown>) => JSON.stringify({
      vendor: "fx-co", vendor_gpu_name: "Z9 64GB", vendor_sku: "z9-2x", region: "eu-west", gpu_count: 2, contract_type: "ondemand",
      raw_price: 10, raw_price_unit: "eur_per_instance_hour", extracted_at: "2026-05-05T10:00:00Z", ...over
    })
    const rows = join(dir, "eur.jsonl")
    writeFileSync(rows, [
      rental({}),
      rental({}),
      rental({ vendor_sku: "z9-2x-spot", contract_type: "spot", raw_price: 99999999 }),
      rental({ vendor_sku: "z9-8x", gpu_count: 8, raw_price: 40 }),
      rental({ vendor_sku: "z9-8x", gpu_count: 8, raw_price: 41 }),
      rental({ vendor_sku: "z9-1x", gpu_count: 1, extracted_at: "2026-05-12T10:00:00Z" })
    ].join("\n") + "\n")
    const r = await run("import", rows, "--type", "rental", "--db", DB)
    assert.strictEqual(r.code, 1, r.stderr)
    assert.include(r.stdout.split("\n"), "read 6: stored 1, unchanged 0, duplicate 1, skipped 0, quarantined 0, rejected 4 (out_of_bounds 1, conflicting_price 2, invalid 1)")
    assert.match(r.stdout, /line 3: price_usd_per_gpu_hour: 59999999\.4 is outside the plausible range \[0\.01, 100\]/)
    assert.match(r.stdout, /line 4: two prices for one product at 2026-05-05T10:00:00\.000000Z: records 3 and 4/)
    assert.match(r.stdout, /line 5: two prices for one product at 2026-05-05T10:00:00\.000000Z: records 3 and 4/)
    assert.match(r.stdout, /line 6: raw_price_unit: no EUR→USD rate covers 2026-05-12 \(latest before it: 2026-05-04\)/)
    assert.match(r.stderr, /4 rejected/)

    const token = (await run("tokens", "create", "--name", "fx reader", "--grant", "rental:all", "--db", DB)).stdout.trim()
    const stored = await serve(token, "/v2/gpu/rental/prices/history?vendor=fx-co&start=2026-05-01&end=2026-05-31")
    assert.strictEqual(stored.status, 200, JSON.stringify(stored.body))
    assert.deepStrictEqual(stored.body.data.map((d: any) => [d.gpu_canonical_name, d.gpu_model, d.gpu_memory_gb, d.price_usd_per_gpu_hour, d.raw_price_unit]), [
      ["zeta-9", "Z9", 64, 6, "eur_per_instance_hour"]
    ])
  }, 180_000)

  it("indexes compute recomputes a range and reports the values", async () => {
    const today = new Date()
    const day = (d: number) => new Date(today.getTime() - d * 86_400_000).toISOString().slice(0, 10)
    const r = await run("indexes", "compute", "--from", day(5), "--to", day(2), "--db", DB)
    assert.strictEqual(r.code, 0, r.stderr)
    const m = /computed (\d+) values over (\d+) intervals of (\d+) indices/.exec(r.stdout)
    assert.isNotNull(m, r.stdout)
    assert.isAbove(Number(m![1]), 0)
    const bad = await run("indexes", "compute", "--from", day(5), "--db", DB)
    assert.notStrictEqual(bad.code, 0)
  }, 120_000)

  it("check says a sound file is sound; it reads a SQLite file, so Redis is refused", async () => {
    const sound = await run("check", "--db", DB)
    const redis = await run("check", "--redis", "redis://127.0.0.1:1")
    assert.strictEqual(sound.code, 0, sound.stderr)
    assert.match(sound.stdout, new RegExp(`^${DB}: sound \\(PRAGMA quick_check found no problem, in [\\d.]+ m?s\\)\n$`))
    assert.strictEqual(redis.code, 2, redis.stderr)
    assert.match(redis.stderr, /^gpu-market check: check reads a SQLite file \(--db\); the storage named is Redis, which keeps none \(see gpu-market check --help\)\n$/)
  }, 60_000)
})

describe("gpu-market with an extended hardware vocabulary", () => {
  it("serve --page-cache-mb, $GPU_MARKET_PAGE_CACHE_MB and $GPU_MARKET_ROW_CACHE_ROWS size the caches (0: off); a size that is not a whole number stops serve", async () => {
    const db = join(dir, "page-cache.db")
    const token = (await run("tokens", "create", "--name", "cache-reader", "--grant", "rental:all", "--db", db)).stdout.trim()
    const path = "/v2/gpu/rental/prices/history?start=2026-01-01&end=2026-02-01"
    for (const env of [{}, { GPU_MARKET_PAGE_CACHE_MB: "0" }, { GPU_MARKET_PAGE_CACHE_MB: "8" }, { GPU_MARKET_PAGE_CACHE_MB: "0", GPU_MARKET_ROW_CACHE_ROWS: "0" }]) {
      const [first, again] = await serveAll(token, [path, path], db, env)
      assert.strictEqual(first!.status, 200, JSON.stringify(first!.body))
      assert.deepStrictEqual(again, first)
    }
    for (const [env, args, says] of [
      [{ GPU_MARKET_PAGE_CACHE_MB: "lots" }, [], 'GPU_MARKET_PAGE_CACHE_MB is "lots"'],
      [{ GPU_MARKET_ROW_CACHE_ROWS: "-5" }, [], 'GPU_MARKET_ROW_CACHE_ROWS is "-5"'],
      [{ GPU_MARKET_ROW_CACHE_ROWS: "99999999999999999999" }, [], 'GPU_MARKET_ROW_CACHE_ROWS is "99999999999999999999"'],
      [{}, ["--page-cache-mb", "-1"], "--page-cache-mb is -1; expected a whole number of at least 0"],
      // Client timeouts that cannot work stop serve too.
      [{ GPU_MARKET_HEADERS_TIMEOUT_MS: "40000" }, [], "the headers timeout (40000 ms) is longer than the request timeout (30000 ms)"],
      [{}, ["--keep-alive-timeout-ms", "0"], "--keep-alive-timeout-ms is 0; expected a whole number of at least 1"]
    ] as const) {
      const refused = await runWith(env, "serve", "--db", db, "--port", String(await freePort()), ...args)
      assert.notStrictEqual(refused.code, 0)
      assert.include(refused.stdout + refused.stderr, says)
    }
  }, 180_000)

  it("$GPU_MARKET_HARDWARE_VOCABULARY: import accepts the added values and terms and counts the dropped ones, serve filters and lists them; bad JSON stops the command", async () => {
    const db = join(dir, "vocabulary.db")
    const observation = (listing_ref: string) => JSON.stringify({
      listing_ref, gpu_canonical_name: "h100-sxm", observed_date: new Date().toISOString().slice(0, 10), price_usd: 25_000, channel: "lease_return",
      payment_terms: "Net 30; wechat acmegpu88", includes_nics: "2x ConnectX-9, acme-gpus [dot] com, (415) 555-0177"
    }) + "\n"
    const refusedFile = join(dir, "hardware-refused.jsonl")
    writeFileSync(refusedFile, observation("feed/refused"))
    const refused = await run("import", refusedFile, "--type", "hardware", "--db", db)
    assert.strictEqual(refused.code, 1, refused.stderr)
    assert.match(refused.stdout, /line 1: channel: "lease_return" is not in the hardware vocabulary of channel; accepted: oem_direct, /)

    const env = { GPU_MARKET_HARDWARE_VOCABULARY: '{"channel":["lease_return"],"includes_nics":["connectx-9"]}' }
    const file = join(dir, "hardware.jsonl")
    writeFileSync(file, observation("feed/accepted"))
    const accepted = await runWith(env, "import", file, "--type", "hardware", "--db", db)
    assert.strictEqual(accepted.code, 0, accepted.stdout + accepted.stderr)
    assert.include(accepted.stdout.split("\n"), "read 1: stored 1, unchanged 0, duplicate 0, skipped 0, quarantined 0, rejected 0")
    assert.include(accepted.stdout.split("\n"), "dropped terms 3 (payment_terms 1, includes_nics 2): descriptive text that is no term of the hardware vocabulary, not stored")

    const token = (await run("tokens", "create", "--name", "hw-reader", "--grant", "hardware", "--db", db)).stdout.trim()
    const [latest, metadata] = await serveAll(token, ["/v2/gpu/hardware/prices/latest?channel=lease_return", "/v2/gpu/hardware/prices/metadata"], db, env)
    assert.strictEqual(latest!.status, 200, JSON.stringify(latest!.body))
    assert.deepStrictEqual(latest!.body.data.map((r: Record<string, string>) => [r.channel, r.payment_terms, r.includes_nics]), [["lease_return", "net-30", "connectx-9"]])
    assert.include(metadata!.body.data.vocabulary.channel, "lease_return")
    assert.include(metadata!.body.data.vocabulary.includes_nics, "connectx-9")

    const bad = await runWith({ GPU_MARKET_HARDWARE_VOCABULARY: "{channel" }, "import", file, "--type", "hardware", "--db", db)
    assert.notStrictEqual(bad.code, 0)
    assert.include(bad.stdout + bad.stderr, `GPU_MARKET_HARDWARE_VOCABULARY is "{channel"; expected JSON`)
  }, 180_000)
})
