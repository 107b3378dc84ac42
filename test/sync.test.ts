import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parse as parseYaml } from "yaml"
import { runWith } from "./support/cli"

/**
 * `gpu-market sync --once`, run in process as the bin runs it (support/cli.ts), against a local
 * HTTP server (127.0.0.1 only) that serves the real lambda SkyPilot catalog
 * (test/fixtures/real/SOURCES.md) and altered copies of it: what a sync applies, and that every
 * way a source can go wrong changes nothing in the SQLite file and is reported, with the exit code
 * a scheduler reads.
 */

const REAL = join(import.meta.dirname, "fixtures/real/skypilot/lambda-vms.csv")
const dir = mkdtempSync(join(tmpdir(), "gpu-market-sync-"))

const cli = (...args: ReadonlyArray<string>) => runWith({ GPU_MARKET_SYNC: "", GPU_MARKET_LOG_FORMAT: "json" }, ...args)

// The catalog's lines (CRLF as published); line 189 is gpu_1x_a10 in europe-central-1 at 0.75 USD/h.
const original = readFileSync(REAL, "utf8")
const lines = original.split("\r\n")
assert.match(lines[188]!, /^gpu_1x_a10,A10,1\.0,30\.0,200\.0,0\.75,europe-central-1,/)
const csv = (rows: ReadonlyArray<string>) => rows.join("\r\n")
const priceChanged = csv(lines.map((l, i) => (i === 188 ? l.replace(",0.75,", ",0.79,") : l)))
const dropped = csv(lines.map((l, i) => (i === 188 ? l.replace(",0.75,", ",0.79,") : l)).filter((_, i) => i !== 189))
// A half-published catalog: the header and a dozen rows.
const halfPublished = csv([lines[0]!, ...lines.slice(188, 200), ""])

/** What the server answers at each path; every request is counted by path and kept with its headers. */
type Route = (req: http.IncomingMessage, res: http.ServerResponse) => void
const routes = new Map<string, Route>()
const requests: Array<{ readonly path: string; readonly headers: http.IncomingHttpHeaders }> = []
const served = (body: string, etag: string, type = "text/plain; charset=utf-8"): Route => (req, res) => {
  if (req.headers["if-none-match"] === etag) {
    res.writeHead(304, { etag })
    return res.end()
  }
  res.writeHead(200, { "content-type": type, etag, "content-length": Buffer.byteLength(body) })
  res.end(body)
}

const server = http.createServer((req, res) => {
  requests.push({ path: req.url ?? "", headers: req.headers })
  const route = routes.get(req.url ?? "")
  if (route === undefined) {
    res.writeHead(404)
    return res.end()
  }
  route(req, res)
})
let base = ""
beforeAll(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => {
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  resolve()
})))
afterAll(() => new Promise<void>((resolve) => {
  server.closeAllConnections()
  server.close(() => resolve())
}))

const db = join(dir, "market.db")
/** Every rental row version in the file: any write, of a price or a withdrawal, changes it. */
const rentalRows = () => {
  const sqlite = new Database(db, { readonly: true })
  try {
    return (sqlite.prepare("SELECT count(*) AS n, count(valid_to) AS closed FROM rental_prices").get() as { n: number; closed: number })
  } finally {
    sqlite.close()
  }
}

/** A sources file of `sources` (the lambda vendor's snapshot at each path), fast to fail. */
const sourcesFile = (name: string, sources: ReadonlyArray<{ readonly name: string; readonly path: string; readonly extra?: string }>) => {
  const file = join(dir, `${name}.yaml`)
  writeFileSync(file, ["sources:", ...sources.flatMap((s) => [
    `  - name: ${s.name}`,
    `    url: ${base}${s.path}`,
    "    format: skypilot",
    "    vendor: lambda",
    "    snapshot: true",
    "    timeout_ms: 400",
    "    attempts: 2",
    "    backoff_ms: 10",
    ...(s.extra === undefined ? [] : [`    ${s.extra}`])
  ])].join("\n") + "\n")
  return file
}
const lambda = () => sourcesFile("lambda", [{ name: "lambda", path: "/lambda/vms.csv" }])
const syncLambda = () => cli("sync", "--once", "--sources", lambda(), "--db", db)

describe("gpu-market sync --once", () => {
  it("imports a snapshot, then an unchanged source is one 304 that writes nothing, a price change opens a row, a dropped product is withdrawn", async () => {
    routes.set("/lambda/vms.csv", served(original, "\"v1\""))
    const first = await syncLambda()
    assert.strictEqual(first.code, 0, first.stdout + first.stderr)
    assert.strictEqual(first.stdout.trim(),
      "lambda: imported: read 629: stored 306, unchanged 0, duplicate 0, skipped 323 (cpu_only 17, no_spot 306), quarantined 0, rejected 0; withdrew 0")
    assert.match(first.stderr, /"msg":"sync lambda: attempt 1: 59797 bytes"/)
    const imported = rentalRows()
    assert.strictEqual(imported.n, 306)

    const before = requests.length
    const again = await syncLambda()
    assert.strictEqual(again.code, 0, again.stdout + again.stderr)
    assert.strictEqual(again.stdout.trim(), "lambda: unchanged: not modified since the last sync")
    assert.strictEqual(requests.length - before, 1)
    assert.strictEqual(requests.at(-1)!.headers["if-none-match"], "\"v1\"")
    assert.deepStrictEqual(rentalRows(), imported)
    // An unchanged source keeps what its last import did in `sync status`.
    const kept = await cli("sync", "status", "--sources", lambda(), "--db", db)
    assert.strictEqual(kept.code, 0, kept.stderr)
    assert.match(kept.stdout, /^lambda: unchanged at (\S+); last success \1; next run \S+\n {2}not modified since the last sync\n {2}last import at (?!\1)\S+: read 629: stored 306, unchanged 0, duplicate 0, skipped 323 \(cpu_only 17, no_spot 306\), quarantined 0, rejected 0; withdrew 0$/m)

    routes.set("/lambda/vms.csv", served(priceChanged, "\"v2\""))
    const changed = await syncLambda()
    assert.strictEqual(changed.code, 0, changed.stdout + changed.stderr)
    assert.match(changed.stdout, /^lambda: imported: read 629: stored 1, unchanged 305, .*; withdrew 0$/m)
    assert.deepStrictEqual(rentalRows(), { n: 307, closed: 1 })

    routes.set("/lambda/vms.csv", served(dropped, "\"v3\""))
    const withdrawn = await syncLambda()
    assert.strictEqual(withdrawn.code, 0, withdrawn.stdout + withdrawn.stderr)
    assert.match(withdrawn.stdout, /^lambda: imported: read 627: stored 0, unchanged 305, .*; withdrew 1$/m)
    assert.deepStrictEqual(rentalRows(), { n: 307, closed: 2 })

    const status = await cli("sync", "status", "--sources", lambda(), "--db", db)
    assert.strictEqual(status.code, 0, status.stderr)
    assert.match(status.stdout, /^lambda: imported at \S+; last success \S+; next run \S+\n {2}read 627: stored 0, unchanged 305, .*; withdrew 1$/m)
  })

  it("a 500, a timeout, a truncated body, a wrong content type, an oversized body, a redirect loop, a body in another format and a mass withdrawal change nothing, each reported; exit 1", async () => {
    routes.set("/lambda/vms.csv", served(dropped, "\"v3\""))
    await syncLambda()
    const settled = rentalRows()

    routes.set("/500", (_, res) => {
      res.writeHead(500)
      res.end("down")
    })
    routes.set("/slow", () => { /* never answers */ })
    routes.set("/cut", (_, res) => {
      res.writeHead(200, { "content-type": "text/plain", "content-length": Buffer.byteLength(original) })
      // The first 1000 bytes reach the client, then the connection is cut.
      res.write(original.slice(0, 1000), () => setTimeout(() => res.socket?.destroy(), 20))
    })
    routes.set("/html", served("<!doctype html><title>Sign in</title>", "\"h\"", "text/html"))
    routes.set("/big", served(dropped, "\"b\""))
    routes.set("/loop", (_, res) => {
      res.writeHead(302, { location: "/loop" })
      res.end()
    })
    routes.set("/json", served(JSON.stringify({ "gpt-4o": { input_cost_per_token: 0.0000025, litellm_provider: "openai", mode: "chat" } }, null, 2), "\"j\""))
    routes.set("/half", served(halfPublished, "\"half\""))
    const file = sourcesFile("failing", [
      { name: "five-hundred", path: "/500" },
      { name: "timeout", path: "/slow" },
      { name: "truncated", path: "/cut" },
      { name: "html", path: "/html" },
      { name: "oversized", path: "/big", extra: "max_bytes: 1000" },
      { name: "loop", path: "/loop" },
      { name: "not-skypilot", path: "/json" },
      { name: "half", path: "/half" }
    ])
    const before = requests.length
    const r = await cli("sync", "--once", "--sources", file, "--db", db)
    assert.strictEqual(r.code, 1, r.stdout + r.stderr)
    assert.deepStrictEqual(r.stdout.trim().split("\n"), [
      "five-hundred: refused: HTTP 500",
      "timeout: refused: no whole answer within 400 ms",
      `truncated: refused: the body was cut off after 1000 bytes`,
      "html: refused: served as text/html, not a data file",
      "oversized: refused: 59611 bytes, more than the cap of 1000 bytes",
      "loop: refused: more than 5 redirects",
      "not-skypilot: refused: not a skypilot file (it looks like litellm)",
      "half: held back: the snapshot would withdraw 294 of 305 current products, more than 25%"
    ])
    assert.deepStrictEqual(rentalRows(), settled)
    // 5xx, timeouts and cut bodies are tried again (attempts: 2); the others are not.
    const byPath = (path: string) => requests.slice(before).filter((q) => q.path === path).length
    assert.deepStrictEqual([byPath("/500"), byPath("/slow"), byPath("/cut"), byPath("/html"), byPath("/big"), byPath("/loop"), byPath("/half")], [2, 2, 2, 1, 1, 6, 1])
    assert.match(r.stderr, /"msg":"sync five-hundred: attempt 1 of 2: HTTP 500, retrying"/)
    assert.match(r.stderr, /8 of 8 sources not synced cleanly/)

    const status = await cli("sync", "status", "--sources", file, "--db", db)
    assert.match(status.stdout, /^half: held back at \S+; last success never; next run \S+\n {2}the snapshot would withdraw 294 of 305/m)
  })

  it("an ECB reference-rate file becomes FX rates in USD (a euro at the USD rate, C at USD / C); a malformed one changes nothing", async () => {
    const ecb = readFileSync(join(import.meta.dirname, "fixtures/ecb/eurofxref-hist-sample.xml"), "utf8")
    routes.set("/ecb.xml", served(ecb, "\"e1\"", "application/xml"))
    const file = join(dir, "ecb.yaml")
    const ecbSources = (path: string) => writeFileSync(file, `sources:\n  - name: ecb\n    url: ${base}${path}\n    format: ecb\n    timeout_ms: 400\n    attempts: 1\n`)
    ecbSources("/ecb.xml")
    const fxDb = join(dir, "fx.db")
    const fx = () => {
      const sqlite = new Database(fxDb, { readonly: true })
      try {
        return sqlite.prepare("SELECT currency, date, usd_per_unit FROM fx_rates ORDER BY date, currency").all() as Array<{ currency: string; date: string; usd_per_unit: number }>
      } finally {
        sqlite.close()
      }
    }
    const r = await cli("sync", "--once", "--sources", file, "--db", fxDb)
    assert.strictEqual(r.code, 0, r.stdout + r.stderr)
    assert.strictEqual(r.stdout.trim(), "ecb: imported: 8 FX rates in USD")
    // By hand: 1.05 / 0.9375 = 1.12, 1.05 / 0.84 = 1.25, 1.05 / 162.5 = 0.00646153846…, 1.055 / 0.844 = 1.25, 1.055 / 160 = 0.00659375, 1.055 / 0.9284 = 1.13636363…
    const expected: Array<[string, string, number]> = [
      ["CHF", "2026-11-26", 1.12], ["EUR", "2026-11-26", 1.05], ["GBP", "2026-11-26", 1.25], ["JPY", "2026-11-26", 0.006461538461538462],
      ["CHF", "2026-11-27", 1.1363636363636365], ["EUR", "2026-11-27", 1.055], ["GBP", "2026-11-27", 1.25], ["JPY", "2026-11-27", 0.00659375]
    ]
    const stored = fx()
    assert.deepStrictEqual(stored.map((x) => [x.currency, x.date]), expected.map(([c, d]) => [c, d]))
    stored.forEach((x, i) => assert.approximately(x.usd_per_unit, expected[i]![2], 1e-12, `${x.currency} ${x.date}`))

    // Cut short, a day without USD, a rate given twice, another XML document: refused whole, nothing written.
    const cut = ecb.slice(0, ecb.indexOf("<Cube time='2026-11-26'>"))
    for (const [path, body, why] of [
      ["/ecb-cut.xml", cut, "cut short"],
      ["/ecb-no-usd.xml", ecb.replace("<Cube currency='USD' rate='1.0500'/>", "").replace("rate='162.50'", "rate='99'"), "2026-11-26 has no USD rate"],
      ["/ecb-twice.xml", ecb.replace("<Cube currency='GBP' rate='0.8400'/>", "<Cube currency='GBP' rate='0.8400'/><Cube currency='GBP' rate='0.9'/>"), "2026-11-26: GBP is given twice"],
      ["/ecb-other.xml", "<?xml version=\"1.0\"?><rss><channel/></rss>", "the gesmes:Envelope expected"]
    ] as const) {
      routes.set(path, served(body.replace("rate='1.0550'", "rate='2'"), `"${path}"`, "text/xml"))
      ecbSources(path)
      const bad = await cli("sync", "--once", "--sources", file, "--db", fxDb)
      assert.strictEqual(bad.code, 1, bad.stdout + bad.stderr)
      assert.include(bad.stdout, "ecb: refused: not an ECB reference-rate file: ")
      assert.include(bad.stdout, why)
      assert.deepStrictEqual(fx(), stored)
    }
    const snapshot = join(dir, "ecb-snapshot.yaml")
    writeFileSync(snapshot, `sources:\n  - name: ecb\n    url: ${base}/ecb.xml\n    format: ecb\n    snapshot: true\n`)
    const refused = await cli("sync", "--once", "--sources", snapshot, "--db", fxDb)
    assert.strictEqual(refused.code, 2)
    assert.match(refused.stderr, /source ecb: format ecb cannot be a snapshot/)
  })

  it("a jsonl or csv source is rows of its type through the row import: good rows stored, a bad one rejected (exit 1); never a snapshot, never without a type", async () => {
    const rowsDb = join(dir, "rows.db")
    routes.set("/fx.csv", served("currency,date,usd_per_unit\nEUR,2026-11-20,1.04\nGBP,2026-11-20,-3\nJPY,2026-11-20,0.0065\n", "\"c1\"", "text/csv"))
    routes.set("/fx.jsonl", served("{\"currency\":\"CHF\",\"date\":\"2026-11-21\",\"usd_per_unit\":1.13}\n", "\"j1\"", "application/x-ndjson"))
    routes.set("/fx-not-rows.csv", served(lines.slice(0, 5).join("\r\n"), "\"s1\""))
    const file = join(dir, "rows.yaml")
    const source = (name: string, path: string, format: string, extra = "    type: fx\n") => `  - name: ${name}\n    url: ${base}${path}\n    format: ${format}\n${extra}`
    writeFileSync(file, "sources:\n" + source("fx-csv", "/fx.csv", "csv") + source("fx-jsonl", "/fx.jsonl", "jsonl") + source("catalog-as-rows", "/fx-not-rows.csv", "csv"))
    const r = await cli("sync", "--once", "--sources", file, "--db", rowsDb)
    assert.strictEqual(r.code, 1, r.stdout + r.stderr)
    assert.deepStrictEqual(r.stdout.trim().split("\n"), [
      "fx-csv: rejected: read 3: stored 2, unchanged 0, duplicate 0, skipped 0, quarantined 0, rejected 1 (invalid 1)",
      "fx-jsonl: imported: read 1: stored 1, unchanged 0, duplicate 0, skipped 0, quarantined 0, rejected 0",
      "catalog-as-rows: refused: not a csv file (it looks like skypilot)"
    ])
    const sqlite = new Database(rowsDb, { readonly: true })
    try {
      assert.deepStrictEqual(sqlite.prepare("SELECT currency, date, usd_per_unit FROM fx_rates ORDER BY currency").all(), [
        { currency: "CHF", date: "2026-11-21", usd_per_unit: 1.13 },
        { currency: "EUR", date: "2026-11-20", usd_per_unit: 1.04 },
        { currency: "JPY", date: "2026-11-20", usd_per_unit: 0.0065 }
      ])
    } finally {
      sqlite.close()
    }
    for (const [extra, message] of [
      ["    type: fx\n    snapshot: true\n", /source rows: format jsonl cannot be a snapshot \(only skypilot and litellm catalogs withdraw what they no longer list\)/],
      ["", /source rows: format jsonl needs a type \(rental, hardware, transactions, llm, indexes, fx, gpus\)/]
    ] as const) {
      writeFileSync(file, "sources:\n" + source("rows", "/fx.jsonl", "jsonl", extra))
      const bad = await cli("sync", "--once", "--sources", file, "--db", rowsDb)
      assert.strictEqual(bad.code, 2, bad.stdout + bad.stderr)
      assert.match(bad.stderr, message)
    }
  })

  it("exit 2 for a command line or sources file it cannot take, nothing fetched", async () => {
    const before = requests.length
    const none = await cli("sync", "--once", "--db", db)
    assert.strictEqual(none.code, 2)
    assert.match(none.stderr, /give --sources FILE, --preset public or \$GPU_MARKET_SYNC/)
    const bad = join(dir, "bad.yaml")
    writeFileSync(bad, "sources:\n  - name: x\n    url: http://127.0.0.1:1/x\n    format: skypilot\n")
    const noVendor = await cli("sync", "--once", "--sources", bad, "--db", db)
    assert.strictEqual(noVendor.code, 2)
    assert.match(noVendor.stderr, /source x: format skypilot needs a vendor/)
    assert.strictEqual(requests.length, before)
  })

  it("the syncing guide's sources file reads as written", async () => {
    const section = readFileSync(join(import.meta.dirname, "../docs/guides/syncing.md"), "utf8")
    const yaml = /```yaml\n([\s\S]*?)```/.exec(section)![1]!
    const file = join(dir, "readme-sources.yaml")
    writeFileSync(file, yaml)
    writeFileSync(join(dir, "public-sources.yaml"), readFileSync(join(import.meta.dirname, "../packages/cli/policies/public-sources.yaml")))
    const status = await cli("sync", "status", "--sources", file, "--db", join(dir, "readme.db"))
    assert.strictEqual(status.code, 0, status.stderr)
    assert.strictEqual(status.stdout, "lambda: never synced\nlitellm: never synced\n")
  })

  it("the shipped preset names every shipped SkyPilot cloud's catalog and LiteLLM's table at their public locations, with the shipped policy", async () => {
    const preset = parseYaml(readFileSync(join(import.meta.dirname, "../packages/cli/presets/public.yaml"), "utf8")) as {
      sources: ReadonlyArray<{ name: string; url: string; format: string; vendor?: string; policy: string }>
    }
    const clouds = readFileSync(join(import.meta.dirname, "fixtures/real/SOURCES.md"), "utf8").match(/`catalogs\/v7\/[a-z]+\/vms\.csv`/g)!
    assert.deepStrictEqual(
      preset.sources.filter((s) => s.format === "skypilot").map((s) => s.url).sort(),
      [...new Set(clouds)].map((c) => `https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/${c.slice(1, -1)}`).sort()
    )
    assert.deepStrictEqual(preset.sources.filter((s) => s.format === "litellm").map((s) => s.url),
      ["https://raw.githubusercontent.com/BerriAI/litellm/main/model_prices_and_context_window.json"])
    assert.ok(preset.sources.filter((s) => s.format !== "ecb").every((s) => s.policy === "../policies/public-sources.yaml"))
    assert.deepStrictEqual(preset.sources.filter((s) => s.format === "ecb").map((s) => s.url), ["https://www.ecb.europa.eu/stats/eurofxref/eurofxref-daily.xml"])
    // As installed, the preset and the policy it names read (nothing is fetched by status).
    const status = await cli("sync", "status", "--preset", "public", "--db", join(dir, "preset.db"))
    assert.strictEqual(status.code, 0, status.stderr)
    assert.deepStrictEqual(status.stdout.trim().split("\n"), preset.sources.map((s) => `${s.name}: never synced`))
  })
})
