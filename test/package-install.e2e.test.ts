import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import { copyFileSync, existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { rm } from "node:fs/promises"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join, resolve, sep } from "node:path"

/**
 * The packages as a new user gets them: `npm pack` every workspace, install the tarballs (and
 * nothing of the workspace) into an app outside the repository, then run that app with plain
 * `node` (direct, worker threads, mounted over node:http) and type-check a strict `nodenext`
 * TypeScript consumer with the app's own `tsc`. One `npm install` for everything, in the hook.
 *
 * better-sqlite3's install script (`prebuild-install || node-gyp rebuild`) runs as it does for a
 * user; a user's prebuild-install downloads the addon for their Node and platform, and here it
 * finds that same prebuild in a local folder (prebuild-install's documented
 * `better_sqlite3_local_prebuilds`), packed from the addon the repository's own install built
 * for this Node. Compiling SQLite from source again would take a minute of the suite to prove
 * what better-sqlite3's own CI proves.
 */

const ROOT = resolve(import.meta.dirname, "..")
const FIXTURES = resolve(import.meta.dirname, "fixtures/package-install")
const PACKAGES = ["cli", "client", "core", "demo", "http-adapter", "storage-redis", "storage-sqlite", "storage-testkit", "worker"]
const INSTALLED = ["client", "core", "http-adapter", "storage-sqlite", "storage-testkit", "worker"]

/** Children still running; afterAll ends each one's process group. */
const running = new Set<ChildProcess>()
const killTree = (child: ChildProcess) => {
  try { process.kill(-child.pid!, "SIGKILL") } catch { /* already gone */ }
}

/**
 * The environment of a shell outside the repository: no `npm_*` from an enclosing `npm test`
 * (they would configure the inner npm), no NODE_PATH or NODE_OPTIONS reaching into the repo.
 */
const cleanEnv = (): NodeJS.ProcessEnv =>
  Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) && k !== "NODE_PATH" && k !== "NODE_OPTIONS"))

interface Ran { readonly code: number | null; readonly stdout: string; readonly stderr: string; readonly ms: number }

/** Runs a command in its own process group; on timeout the whole group is killed and the run fails. */
const run = (command: string, args: ReadonlyArray<string>, cwd: string, timeoutMs: number, env: NodeJS.ProcessEnv = {}): Promise<Ran> =>
  new Promise((done, fail) => {
    const started = performance.now()
    const child = spawn(command, args, { cwd, env: { ...cleanEnv(), ...env }, stdio: ["ignore", "pipe", "pipe"], detached: true })
    running.add(child)
    let stdout = ""
    let stderr = ""
    child.stdout!.on("data", (c: Buffer) => (stdout += c.toString()))
    child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()))
    const timer = setTimeout(() => {
      killTree(child)
      fail(new Error(`${command} ${args.join(" ")} still running after ${timeoutMs} ms:\n${stdout}\n${stderr}`))
    }, timeoutMs)
    child.once("error", (e) => {
      clearTimeout(timer)
      running.delete(child)
      fail(e)
    })
    child.once("close", (code) => {
      clearTimeout(timer)
      running.delete(child)
      done({ code, stdout, stderr, ms: performance.now() - started })
    })
  })

/** Like `run`, and fails with the output unless the command exits 0. */
const ok = async (command: string, args: ReadonlyArray<string>, cwd: string, timeoutMs: number, env: NodeJS.ProcessEnv = {}): Promise<Ran> => {
  const ran = await run(command, args, cwd, timeoutMs, env)
  if (ran.code !== 0) throw new Error(`${command} ${args.join(" ")} exited with ${ran.code}:\n${ran.stdout}\n${ran.stderr}`)
  return ran
}

const temps: Array<string> = []
const tempDir = (label: string) => {
  const dir = mkdtempSync(join(tmpdir(), `gpu-market-${label}-`))
  temps.push(dir)
  return dir
}

/**
 * A folder holding the repository's better-sqlite3 addon as the prebuild prebuild-install looks for
 * (`<name>-v<version>-<runtime>-v<abi>-<platform><libc>-<arch>.tar.gz`, `build/Release/*.node` inside).
 * Named for the repository's exact version: an app that resolves another version finds no
 * prebuild here and compiles, as it would offline.
 */
const localPrebuilds = async (): Promise<string> => {
  const pkg = createRequire(join(ROOT, "package.json")).resolve("better-sqlite3/package.json")
  const { version } = JSON.parse(readFileSync(pkg, "utf8")) as { version: string }
  const dir = tempDir("prebuilds")
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`
  await ok("tar", ["-czf", join(dir, name), "-C", dirname(pkg), "build/Release/better_sqlite3.node"], dir, 60_000)
  return dir
}

interface Packed { readonly name: string; readonly filename: string; readonly files: ReadonlyArray<{ readonly path: string }> }
let packDir = ""
let packed: ReadonlyArray<Packed> = []
const tarball = (pkg: string) => {
  const found = packed.find((p) => p.name === `@gpu-market/${pkg}`)
  if (found === undefined) throw new Error(`no tarball of @gpu-market/${pkg}`)
  return found
}

beforeAll(async () => {
  packDir = tempDir("packs")
  const { stdout } = await ok("npm", ["pack", "--workspaces", "--pack-destination", packDir, "--json"], ROOT, 120_000)
  packed = JSON.parse(stdout) as ReadonlyArray<Packed>
}, 150_000)

afterAll(async () => {
  for (const child of running) killTree(child)
  running.clear()
  // Asynchronously: the apps' node_modules are tens of thousands of files, and removing them
  // synchronously on a busy machine held the worker's event loop past vitest's 60 s RPC timeout.
  await Promise.all(temps.map((dir) => rm(dir, { recursive: true, force: true, maxRetries: 3 })))
})

describe("npm pack", () => {
  it("packs every workspace package", () => {
    assert.deepStrictEqual(packed.map((p) => p.name).sort(), PACKAGES.map((p) => `@gpu-market/${p}`))
    for (const p of packed) assert.isTrue(existsSync(join(packDir, p.filename)), p.filename)
  })

  it("ships the compiled package only: dist, package.json (and the CLI's bin, import policy and sync preset, the demo's real catalogs, the dashboard's files), no src/ or test files", () => {
    for (const pkg of PACKAGES) {
      const paths = tarball(pkg).files.map((f) => f.path)
      const allowed = (path: string) =>
        path === "package.json" || path === "README.md" || path === "LICENSE" || path.startsWith("dist/") ||
        (pkg === "cli" && (path.startsWith("bin/") || path.startsWith("policies/") || path.startsWith("presets/"))) || (pkg === "demo" && path.startsWith("data/")) ||
        (pkg === "http-adapter" && path.startsWith("dashboard/"))
      assert.deepStrictEqual(paths.filter((path) => !allowed(path)), [], `@gpu-market/${pkg}: unexpected files`)
      assert.deepStrictEqual(
        paths.filter((path) => /(^|\/)(src|test)\//.test(path) || /\.test\.[cm]?[jt]s$/.test(path) || path.endsWith(".tsbuildinfo")), [],
        `@gpu-market/${pkg}: sources or tests`
      )
      // Every file the exports map and bin name is in the tarball.
      const manifest = JSON.parse(readFileSync(join(ROOT, "packages", pkg, "package.json"), "utf8")) as {
        exports?: Record<string, Record<string, string>>
        bin?: Record<string, string>
      }
      const targets = [...Object.values(manifest.exports ?? {}).flatMap((conditions) => Object.values(conditions)), ...Object.values(manifest.bin ?? {})]
      assert.deepStrictEqual(targets.map((t) => t.replace(/^\.\//, "")).filter((t) => !paths.includes(t)), [], `@gpu-market/${pkg}: exports or bin not shipped`)
      // The demo market reads the real SkyPilot catalogs it ships, with their attribution.
      if (pkg === "demo") for (const file of ["data/SOURCES.md", "data/skypilot/lambda-vms.csv"]) assert.include(paths, file)
      // The dashboard's page and modules, which the adapter reads at run time.
      if (pkg === "http-adapter") for (const file of ["dashboard/page.html", "dashboard/main.js"]) assert.include(paths, file)
      if (pkg === "cli") {
        assert.include(paths, "dist/main.js")
        assert.include(paths, "bin/gpu-market.js")
        // The policy with which the public files import green, named in the README by its installed path.
        assert.include(paths, "policies/public-sources.yaml")
        // The sources of `sync --preset public`, which name that policy by its path beside them.
        assert.include(paths, "presets/public.yaml")
      } else {
        assert.include(paths, "dist/index.js", `@gpu-market/${pkg}`)
        assert.include(paths, "dist/index.d.ts", `@gpu-market/${pkg}`)
      }
    }
  })

  it("ships README.md and LICENSE in every package", () => {
    const missing = PACKAGES.flatMap((pkg) => {
      const paths = tarball(pkg).files.map((f) => f.path)
      return ["README.md", "LICENSE"].filter((file) => !paths.includes(file)).map((file) => `@gpu-market/${pkg}: ${file}`)
    })
    assert.deepStrictEqual(missing, [])
  })
})

describe("an app outside the repository, installed from the tarballs", () => {
  let app = ""
  let installMs = 0

  beforeAll(async () => {
    app = tempDir("app")
    assert.isFalse(app.startsWith(ROOT + sep), "the app must live outside the repository")
    writeFileSync(join(app, "package.json"), JSON.stringify({
      name: "gpu-market-install-check",
      private: true,
      type: "module",
      dependencies: {
        ...Object.fromEntries(INSTALLED.map((pkg) => [`@gpu-market/${pkg}`, `file:${join(packDir, tarball(pkg).filename)}`])),
        "typescript": "~5.9.3",
        "@types/node": "^20.19.0",
        // The test kit's peers, as a backend author's test setup has them.
        "vitest": "~3.2.4",
        "@effect/vitest": "0.30.0"
      },
      // npm 11 runs no dependency's install script unless allowed: better-sqlite3's script installs its addon.
      allowScripts: { "better-sqlite3": true, "esbuild": true, "msgpackr-extract": true, "@parcel/watcher": false, "core-js": false }
    }, null, 2))
    for (const file of ["app.mjs", "consumer.ts", "tsconfig.json", "conformance.test.mjs"]) copyFileSync(join(FIXTURES, file), join(app, file))
    const installed = await ok("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline"], app, 540_000,
      { npm_config_better_sqlite3_local_prebuilds: await localPrebuilds() })
    installMs = installed.ms
    console.info(`package-install: npm install of the tarballs took ${(installMs / 1000).toFixed(1)} s`)
  }, 600_000)

  /** Runs `node app.mjs <mode>` in the app and returns the JSON it prints. */
  const runApp = async (mode: string): Promise<any> => {
    const { stdout } = await ok(process.execPath, ["app.mjs", mode], app, 90_000)
    return JSON.parse(stdout.trim().split("\n").at(-1)!)
  }

  it("installs the tarballs themselves, one copy of core, and better-sqlite3's addon by its install script", () => {
    assert.isAbove(installMs, 0)
    const lock = JSON.parse(readFileSync(join(app, "package-lock.json"), "utf8")) as { packages: Record<string, { resolved?: string }> }
    for (const pkg of INSTALLED) {
      const dir = join(app, "node_modules/@gpu-market", pkg)
      assert.isFalse(lstatSync(dir).isSymbolicLink(), `${pkg} is a copy, not a link into the workspace`)
      const resolved = lock.packages[`node_modules/@gpu-market/${pkg}`]?.resolved ?? ""
      assert.isTrue(resolved.startsWith("file:") && resolved.endsWith(`/${tarball(pkg).filename}`), `${pkg} resolved from ${resolved}`)
      assert.isFalse(existsSync(join(dir, "node_modules/@gpu-market")), `${pkg} has a nested @gpu-market package`)
    }
    assert.deepStrictEqual(readdirSync(join(app, "node_modules/@gpu-market")).sort(), INSTALLED)
    assert.isTrue(existsSync(join(app, "node_modules/better-sqlite3/build/Release/better_sqlite3.node")), "better-sqlite3 addon installed")
  })

  it("(a) node app.mjs: createMarket over SQLite, a token, ingest, a page and the next by its page token", { timeout: 120_000 }, async () => {
    const out = await runApp("direct")
    for (const [name, path] of Object.entries(out.resolved as Record<string, string>)) {
      assert.isTrue(path.startsWith(join(app, "node_modules") + sep), `${name} resolves to ${path}`)
    }
    assert.deepStrictEqual(out.ingested, { received: 6, opened: 6, closed: 0, unchanged: 0, duplicates: 0 })
    assert.strictEqual(out.tokenType, "string")
    assert.lengthOf(out.page1, 2)
    assert.lengthOf(out.page2, 2)
    assert.isTrue(out.page1.every((r: string) => r.startsWith("nebius/")), out.page1.join())
    assert.isTrue(out.page2.every((r: string) => r.startsWith("lambda/")), out.page2.join())
    assert.deepStrictEqual(out.page1.filter((r: string) => out.page2.includes(r)), [])
    assert.strictEqual(out.all, 6)
    assert.include(out.next, "page_token")
    assert.deepStrictEqual(out.hasMore, [true, true])
    assert.deepStrictEqual(out.refusals, [{ status: 400, code: "missing_anchor" }, { status: 401, code: "unauthenticated" }])
  })

  it("(b) node app.mjs: createWorkerMarket with two threads answers as the direct market", { timeout: 120_000 }, async () => {
    const out = await runApp("worker")
    assert.strictEqual(out.threads, 2)
    assert.strictEqual(out.distinctThreads, 2)
    assert.lengthOf(out.direct.page1, 2)
    assert.deepStrictEqual(out.worker, out.direct)
  })

  it("(c) node app.mjs: nodeHandler in node:http, a page and meta.next.url, and @gpu-market/client reading every page", { timeout: 120_000 }, async () => {
    const out = await runApp("http")
    assert.deepStrictEqual(out.statuses, [200, 200])
    assert.match(out.type, /^application\/json/)
    assert.isTrue(out.nextUrl.startsWith(`${out.origin}/v2/gpu/rental/prices/latest?`), out.nextUrl)
    assert.include(out.nextUrl, "page_token=")
    assert.lengthOf(out.direct.page1, 2)
    assert.deepStrictEqual(out.page1, out.direct.page1)
    assert.deepStrictEqual(out.page2, out.direct.page2)
    assert.deepStrictEqual(out.anonymous, { status: 401, type: "application/problem+json", code: "unauthenticated" })
    // @gpu-market/client, installed: every row by following meta.next, the first pages as the direct market's.
    assert.lengthOf(out.clientRows, out.direct.all)
    assert.deepStrictEqual(out.clientRows.slice(0, 4), [...out.direct.page1, ...out.direct.page2])
    assert.includeMembers(out.dashboard, ["200 uPlot.iife.min.js", "200 main.js", "200 dashboard.css"])
    assert.isTrue(out.dashboard.every((d: string) => d.startsWith("200 ")), out.dashboard.join())
  })

  it("(e) the test kit's suite passes on core's in-memory store under the app's own vitest", { timeout: 240_000 }, async () => {
    const ran = await run(join(app, "node_modules/.bin/vitest"), ["run", "conformance.test.mjs", "--reporter=json", "--outputFile=conformance.json"], app, 220_000)
    assert.strictEqual(ran.code, 0, `${ran.stdout}${ran.stderr}`.slice(-4000))
    const report = JSON.parse(readFileSync(join(app, "conformance.json"), "utf8")) as {
      readonly numTotalTests: number; readonly numPassedTests: number; readonly numFailedTests: number; readonly numPendingTests: number
    }
    // Every case of every store ran and passed: none failed, none skipped.
    assert.isAbove(report.numTotalTests, 50)
    assert.deepStrictEqual([report.numPassedTests, report.numFailedTests, report.numPendingTests], [report.numTotalTests, 0, 0])
  })

  it("(d) a strict nodenext TypeScript consumer type-checks against the installed types, with no cast", { timeout: 240_000 }, async () => {
    const source = readFileSync(join(app, "consumer.ts"), "utf8").replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "")
    assert.notMatch(source, /\bas\s+(?!const\b)[A-Za-z{[(]|<[A-Z][A-Za-z]*>\s*[a-z(]|@ts-(ignore|expect-error|nocheck)|!\./, "consumer.ts has a cast")
    const tsc = await run(join(app, "node_modules/.bin/tsc"), ["-p", "."], app, 220_000)
    assert.strictEqual(`${tsc.stdout}${tsc.stderr}`, "")
    assert.strictEqual(tsc.code, 0)
  })
})

describe("@gpu-market/core installed alone, as an embedder installs it", () => {
  it("brings effect and its format libraries, and no test runner", { timeout: 300_000 }, async () => {
    const app = tempDir("core-only")
    writeFileSync(join(app, "package.json"), JSON.stringify({
      name: "gpu-market-core-only", private: true, type: "module",
      dependencies: { "@gpu-market/core": `file:${join(packDir, tarball("core").filename)}` },
      allowScripts: { "msgpackr-extract": true }
    }, null, 2))
    await ok("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline"], app, 280_000)
    const lock = JSON.parse(readFileSync(join(app, "package-lock.json"), "utf8")) as { packages: Record<string, unknown> }
    const names = Object.keys(lock.packages).filter((path) => path !== "").map((path) => path.split("node_modules/").pop()!)
    assert.includeMembers(names, ["@gpu-market/core", "effect", "msgpackr", "yaml"])
    assert.deepStrictEqual(names.filter((name) => /(^|\/)(vitest|vite|@vitest\/.*|@effect\/vitest|chai|esbuild)$/.test(name)), [])
    // And its main entry loads in plain node.
    const ran = await ok(process.execPath, ["--input-type=module", "-e", "const m = await import(\"@gpu-market/core\"); console.log(typeof m.createMarket)"], app, 60_000)
    assert.strictEqual(ran.stdout.trim(), "function")
  })
})
