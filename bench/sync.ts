import Database from "better-sqlite3"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { parse as parseYaml, stringify as stringifyYaml } from "yaml"
import { REPO_ROOT } from "./config"
import { peakRss } from "./import"
import type { Line } from "./report"

/**
 * (p) `gpu-market sync --once` of the public preset, every source served by a local HTTP server
 * (127.0.0.1) from the files the tests ship: the real SkyPilot catalogs and LiteLLM table
 * (test/fixtures/real) and the ECB sample (test/fixtures/ecb). A first sync imports them all into a
 * fresh SQLite file; a second is all 304s and must write no row. Baseline: `sync status` of the same
 * sources, the CLI's start-up and store opening with nothing fetched.
 */

const CLI = path.join(REPO_ROOT, "packages/cli/bin/gpu-market.js")
const FIXTURES = path.join(REPO_ROOT, "test/fixtures")
/** The unchanged cycle may cost at most this many times the CLI's start-up and store opening. */
export const UNCHANGED_TARGET_RATIO = 2

/** The shipped file each source of the preset is served from, by the preset's file name. */
const fileFor = (url: string, format: string) =>
  format === "ecb" ? path.join(FIXTURES, "ecb/eurofxref-hist-sample.xml")
    : format === "litellm" ? path.join(FIXTURES, "real/litellm/model_prices.json")
    : path.join(FIXTURES, `real/skypilot/${/catalogs\/v7\/([a-z]+)\/vms\.csv$/.exec(url)![1]!}-vms.csv`)

interface Run { readonly seconds: number; readonly peakRssBytes: number | undefined; readonly stdout: string }

const cli = (args: ReadonlyArray<string>): Promise<Run> => new Promise((resolve, reject) => {
  const started = performance.now()
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, NO_COLOR: "1", GPU_MARKET_REDIS_URL: "", GPU_MARKET_SYNC: "" }, stdio: ["ignore", "pipe", "pipe"] })
  let peak: number | undefined
  let stdout = ""
  let stderr = ""
  const poll = setInterval(() => {
    const rss = child.pid === undefined ? undefined : peakRss(child.pid)
    if (rss !== undefined) peak = Math.max(peak ?? 0, rss)
  }, 20)
  child.stdout.on("data", (d: Buffer) => { stdout += d.toString() })
  child.stderr.on("data", (d: Buffer) => { stderr += d.toString() })
  child.on("error", reject)
  child.on("close", (code) => {
    clearInterval(poll)
    if (code !== 0) return reject(new Error(`gpu-market ${args.join(" ")} exited ${code}: ${stdout}${stderr}`))
    resolve({ seconds: (performance.now() - started) / 1000, peakRssBytes: peak, stdout })
  })
})

/** Every row of every table but the settings (which keep each source's sync state) and rate limits. */
const rowsOf = (db: string) => {
  const sqlite = new Database(db, { readonly: true })
  try {
    const tables = (sqlite.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('settings', 'rate_limits') AND name NOT LIKE 'sqlite_%'").all() as Array<{ name: string }>).map((t) => t.name)
    return tables.reduce((n, t) => n + (sqlite.prepare(`SELECT count(*) AS n FROM "${t}"`).get() as { n: number }).n, 0)
  } finally {
    sqlite.close()
  }
}

export interface SyncBenchResults {
  readonly sources: number
  readonly bytes: number
  readonly first: Run
  readonly unchanged: Run
  readonly status: Run
  readonly rowsAfterFirst: number
  readonly rowsWrittenUnchanged: number
}

export const runSyncBench = async (log: (line: string) => void): Promise<SyncBenchResults> => {
  const preset = parseYaml(fs.readFileSync(path.join(REPO_ROOT, "packages/cli/presets/public.yaml"), "utf8")) as { sources: Array<Record<string, unknown> & { name: string; url: string; format: string }> }
  const bodies = new Map(preset.sources.map((s) => [`/${s.name}`, fs.readFileSync(fileFor(s.url, s.format))]))
  const server = http.createServer((req, res) => {
    const body = bodies.get(req.url ?? "")
    if (body === undefined) return res.writeHead(404).end()
    const etag = `"${req.url}"`
    if (req.headers["if-none-match"] === etag) return res.writeHead(304, { etag }).end()
    res.writeHead(200, { etag, "content-length": body.length, "content-type": "text/plain" }).end(body)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gpu-market-bench-sync-"))
  try {
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const sources = path.join(dir, "sources.yaml")
    const policy = path.join(REPO_ROOT, "packages/cli/policies/public-sources.yaml")
    fs.writeFileSync(sources, stringifyYaml({
      sources: preset.sources.map((s) => ({ ...s, url: `${base}/${s.name}`, ...(s.policy === undefined ? {} : { policy }) }))
    }))
    const db = path.join(dir, "market.db")
    const args = ["--sources", sources, "--db", db]
    log(`(p): sync of ${preset.sources.length} sources into a fresh file ...`)
    const first = await cli(["sync", "--once", ...args])
    const rowsAfterFirst = rowsOf(db)
    log("(p): the unchanged cycle ...")
    const unchanged = await cli(["sync", "--once", ...args])
    if (!unchanged.stdout.trim().split("\n").every((l) => l.endsWith(": unchanged: not modified since the last sync"))) throw new Error(`not all unchanged: ${unchanged.stdout}`)
    const status = await cli(["sync", "status", ...args])
    return {
      sources: preset.sources.length, bytes: [...bodies.values()].reduce((n, b) => n + b.length, 0),
      first, unchanged, status, rowsAfterFirst, rowsWrittenUnchanged: rowsOf(db) - rowsAfterFirst
    }
  } finally {
    server.closeAllConnections()
    server.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

const mib = (bytes: number | undefined) => bytes === undefined ? "n/a" : `${(bytes / 2 ** 20).toFixed(0)} MiB`

export const syncLines = (r: SyncBenchResults): ReadonlyArray<Line> => {
  const ratio = r.unchanged.seconds / r.status.seconds
  return [{
    name: `(p) sync --once of the public preset (${r.sources} sources) from a local server, all 304s: spawn to exit (rows written), vs sync status`,
    figure: `${r.unchanged.seconds.toFixed(2)} s (${r.rowsWrittenUnchanged} rows)`,
    baseline: `${r.status.seconds.toFixed(2)} s`,
    ratio,
    target: `≤ ${UNCHANGED_TARGET_RATIO.toFixed(2)}×, 0 rows`,
    pass: ratio <= UNCHANGED_TARGET_RATIO && r.rowsWrittenUnchanged === 0
  }]
}

export const syncMarkdown = (r: SyncBenchResults): string => `## (p) Sync of the public preset

\`gpu-market sync --once\` of the sources of \`--preset public\` (${r.sources}: the SkyPilot v7 catalogs of the shipped clouds, LiteLLM's table, the ECB's daily rates), each served by a local HTTP server (127.0.0.1) from the files the tests ship (${mib(r.bytes)} in all: test/fixtures/real and the ECB sample), into a fresh SQLite file, run as its own process (\`node packages/cli/bin/gpu-market.js\`); peak RSS is its VmHWM, polled every 20 ms. Then the same again: every source answers 304, and no row of any table but the settings (where each source's sync state is kept) may be written. Baseline: \`sync status\` of the same sources, the CLI's start-up and opening the store with nothing fetched. Target: the unchanged cycle within ${UNCHANGED_TARGET_RATIO}× of it, 0 rows.

| run | spawn to exit | peak RSS | rows written |
| --- | ---: | ---: | ---: |
| first sync, fresh file | ${r.first.seconds.toFixed(2)} s | ${mib(r.first.peakRssBytes)} | ${r.rowsAfterFirst.toLocaleString("en-US")} |
| unchanged cycle (all 304s) | ${r.unchanged.seconds.toFixed(2)} s | ${mib(r.unchanged.peakRssBytes)} | ${r.rowsWrittenUnchanged} |
| baseline: sync status | ${r.status.seconds.toFixed(2)} s | ${mib(r.status.peakRssBytes)} | — |
`

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href
if (isMain) {
  runSyncBench((line) => console.log(line)).then((r) => {
    console.log(syncMarkdown(r))
    for (const l of syncLines(r)) console.log(`${l.name}: ${l.figure} vs ${l.baseline}: ${l.pass ? "pass" : "FAIL"}`)
  }).catch((e: unknown) => {
    console.error(e)
    process.exitCode = 1
  })
}
