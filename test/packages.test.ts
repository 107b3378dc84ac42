import { assert, describe, it } from "@effect/vitest"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { builtinModules } from "node:module"
import { join, relative, resolve } from "node:path"

/**
 * The rules that make the packages installable and keep their boundaries: one version for all,
 * exports that point at compiled files with types, tarballs of dist + README + LICENSE, every
 * import declared by the package that makes it, and a core that does no I/O of its own.
 */

const ROOT = resolve(import.meta.dirname, "..")
const PACKAGES = resolve(ROOT, "packages")

interface Manifest {
  readonly name: string
  readonly version: string
  readonly license: string
  readonly type: string
  readonly files?: ReadonlyArray<string>
  readonly exports?: Record<string, { readonly types: string; readonly import: string }>
  readonly bin?: Record<string, string>
  readonly dependencies?: Record<string, string>
  readonly peerDependencies?: Record<string, string>
}

const packages = readdirSync(PACKAGES).map((dir) => ({
  dir: join(PACKAGES, dir),
  manifest: JSON.parse(readFileSync(join(PACKAGES, dir, "package.json"), "utf8")) as Manifest
}))

const sources = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [])

/** The packages a source file imports (bare specifiers, by package name), static or dynamic. */
const importedPackages = (file: string): Array<string> => {
  const text = readFileSync(file, "utf8")
  const patterns = [
    /^(?:import|export)\s+(?:type\s+)?(?:\*(?:\s+as\s+\w+)?|\{[^}]*\}|\w+(?:\s*,\s*\{[^}]*\})?)\s+from\s+"([^"]+)"/gm,
    /^import\s+"([^"]+)"/gm,
    /\bimport\(\s*"([^"]+)"\s*\)/g
  ]
  const specifiers = patterns.flatMap((re) => [...text.matchAll(re)].map((m) => m[1]!)).filter((s) => !s.startsWith("."))
  return specifiers
    .filter((s) => !s.startsWith("node:") && !builtinModules.includes(s))
    .map((s) => (s.startsWith("@") ? s.split("/").slice(0, 2).join("/") : s.split("/")[0]!))
}

describe("packages", () => {
  it("share one version, and depend on each other at exactly that version", () => {
    const versions = new Set(packages.map((p) => p.manifest.version))
    assert.strictEqual(versions.size, 1, `versions: ${[...versions].join(", ")}`)
    const [version] = versions
    for (const { manifest } of packages) {
      for (const [dep, range] of Object.entries(manifest.dependencies ?? {})) {
        if (dep.startsWith("@gpu-market/")) assert.strictEqual(range, version, `${manifest.name} → ${dep}`)
      }
    }
    const config = JSON.parse(readFileSync(resolve(ROOT, ".changeset/config.json"), "utf8")) as { fixed: Array<Array<string>> }
    assert.deepStrictEqual(config.fixed, [["@gpu-market/*"]])
  })

  it("are ESM, MIT, and ship dist with a README and a LICENSE", () => {
    for (const { dir, manifest } of packages) {
      assert.strictEqual(manifest.type, "module", manifest.name)
      assert.strictEqual(manifest.license, "MIT", manifest.name)
      assert.includeMembers([...manifest.files ?? []], ["dist", "README.md", "LICENSE"], manifest.name)
      assert.isFalse((manifest.files ?? []).some((f) => f.startsWith("src") || f.startsWith("test")), manifest.name)
      assert.isTrue(existsSync(join(dir, "README.md")), `${manifest.name} has a README`)
      assert.strictEqual(readFileSync(join(dir, "LICENSE"), "utf8"), readFileSync(resolve(ROOT, "LICENSE"), "utf8"), `${manifest.name} LICENSE`)
    }
  })

  it("export compiled JavaScript with its declarations for every entry point", () => {
    for (const { dir, manifest } of packages) {
      for (const [entry, target] of Object.entries(manifest.exports ?? {})) {
        assert.match(target.import, /^\.\/dist\/.+\.js$/, `${manifest.name} ${entry}`)
        assert.strictEqual(target.types, target.import.replace(/\.js$/, ".d.ts"), `${manifest.name} ${entry}`)
        // npm test builds first, so the files are there.
        assert.isTrue(existsSync(join(dir, target.import)), `${manifest.name} ${entry}: ${target.import}`)
        assert.isTrue(existsSync(join(dir, target.types)), `${manifest.name} ${entry}: ${target.types}`)
      }
      for (const bin of Object.values(manifest.bin ?? {})) assert.isTrue(existsSync(join(dir, bin)), `${manifest.name} bin ${bin}`)
    }
  })

  it("declare every package their sources import", () => {
    for (const { dir, manifest } of packages) {
      const declared = new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {}), manifest.name])
      for (const file of sources(join(dir, "src"))) {
        for (const pkg of importedPackages(file)) {
          assert.isTrue(declared.has(pkg), `${relative(ROOT, file)} imports ${pkg}, which ${manifest.name} does not declare`)
        }
      }
    }
  })

  it("keep core free of I/O runtimes: no tsx, no storage backend, no platform-node, no file system", () => {
    const core = packages.find((p) => p.manifest.name === "@gpu-market/core")!
    for (const file of sources(join(core.dir, "src"))) {
      const text = readFileSync(file, "utf8")
      for (const forbidden of ["tsx", "@gpu-market/storage-sqlite", "@gpu-market/storage-redis", "@effect/platform-node", "node:fs", "node:worker_threads", "node:child_process", "node:net", "node:http"]) {
        assert.notInclude(text, `"${forbidden}`, `${relative(ROOT, file)} imports ${forbidden}`)
      }
    }
  })

  it("core brings no test runner, and only the format libraries its main entry loads (msgpackr: page tokens; yaml: offer requests and import policies; hyparquet-writer and @bokuweb/zstd-wasm: Parquet exports)", () => {
    const core = packages.find((p) => p.manifest.name === "@gpu-market/core")!
    assert.deepStrictEqual(Object.keys(core.manifest.dependencies ?? {}).sort(), ["@bokuweb/zstd-wasm", "effect", "hyparquet-writer", "msgpackr", "yaml"])
    assert.deepStrictEqual(Object.keys(core.manifest.peerDependencies ?? {}), [])
    const testkit = packages.find((p) => p.manifest.name === "@gpu-market/storage-testkit")!
    assert.deepStrictEqual(Object.keys(testkit.manifest.peerDependencies ?? {}).sort(), ["@effect/vitest", "vitest"])
  })

  it("the client loads core's browser-safe reads entry only: no server, no storage, no Node module", () => {
    const client = packages.find((p) => p.manifest.name === "@gpu-market/client")!
    assert.deepStrictEqual(Object.keys(client.manifest.dependencies ?? {}), ["@gpu-market/core"])
    for (const file of sources(join(client.dir, "src"))) {
      const text = readFileSync(file, "utf8")
      const values = [...text.matchAll(/^(?:import|export)\s+(?!type\b)[^"]*?from\s+"([^"]+)"/gm)].map((m) => m[1]!).filter((s) => !s.startsWith("."))
      assert.deepStrictEqual(values.filter((s) => s !== "@gpu-market/core/reads"), [], `${relative(ROOT, file)} loads more than @gpu-market/core/reads`)
    }
  })

  it("the HTTP adapter depends on core alone among our packages", () => {
    const adapter = packages.find((p) => p.manifest.name === "@gpu-market/http-adapter")!
    const ours = Object.keys(adapter.manifest.dependencies ?? {}).filter((d) => d.startsWith("@gpu-market/"))
    assert.deepStrictEqual(ours, ["@gpu-market/core"])
  })

  it("install nothing that phones home, and no install script the root's allowScripts does not name", () => {
    const lock = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8")) as {
      readonly packages: Record<string, { readonly hasInstallScript?: boolean }>
    }
    const root = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { readonly allowScripts: Record<string, boolean> }
    const names = Object.keys(lock.packages).filter((path) => path !== "").map((path) => path.split("node_modules/").pop()!)
    // @scarf/scarf reports each install to its vendor (swagger-ui-dist pulled it); the docs page uses Redoc instead.
    for (const telemetry of ["@scarf/scarf", "swagger-ui-dist"]) assert.notInclude(names, telemetry)
    const scripted = Object.entries(lock.packages).filter(([, p]) => p.hasInstallScript === true).map(([path]) => path.split("node_modules/").pop()!)
    for (const name of scripted) assert.property(root.allowScripts, name, `${name} runs an install script: decide it in allowScripts`)
    // What allowScripts names is in the lock: no stale entry.
    for (const name of Object.keys(root.allowScripts)) assert.include(names, name)
  })
})
