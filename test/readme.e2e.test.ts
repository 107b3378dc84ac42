import { assert, describe, it } from "@effect/vitest"
import { exec } from "node:child_process"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { resolve } from "node:path"
import { promisify } from "node:util"
import ts from "typescript"
import { AGAINST_NPM_START, type Block, DOCS, PACKAGES, packageReadme, README, readmeBlocks, ROOT, shown } from "./support/readme"

/**
 * Every code block of the root README, of each page under docs/ and of each package's README
 * (packages/<name>/README.md) is run by the suite. A block says how, in an HTML comment on the
 * line before it:
 * - ```ts: `<!-- example: examples/<file>.ts -->`: the block appears verbatim (modulo indentation
 *   and blank lines) in that file, which a test under test/ runs (or which is a test itself);
 * - ```sh: `<!-- run -->`: this test runs each line from the repository root and expects it to
 *   succeed;
 *   `<!-- run against npm start -->` (root README and docs/ only): test/start.e2e.test.ts runs the block as one
 *   bash script against the demo server of `npm start` (127.0.0.1:8787 becomes its address);
 *   `<!-- tested by: test/<file>.test.ts -->`: that test runs these commands (e.g. the CLI);
 *   `<!-- not run: <reason> -->`: shown only, with the reason; in a package README only for
 *   `npm install` lines.
 * An unmarked ts or sh block fails. A fence without a language is a figure, not code.
 *
 * A package README also says what the package is for (ESM only, Node ≥ 20), how to install it,
 * and names every entry point and every export of its barrels (core's entries, hundreds of names,
 * are described in groups).
 */

const CODE = new Set(["ts", "typescript", "js", "sh", "bash", "shell"])

const testSources = () => readdirSync(resolve(ROOT, "test")).filter((f) => f.endsWith(".test.ts")).map((f) => readFileSync(resolve(ROOT, "test", f), "utf8"))
const trimmed = (lines: ReadonlyArray<string>) => lines.map((l) => l.trim()).filter((l) => l !== "")
/** A file vitest runs itself (vitest.config.ts: packages/x/test/**, test/**). */
const isTestFile = (file: string) => /^(packages\/[^/]+\/test|test)\/.+\.test\.ts$/.test(file)

interface Rules {
  /** Whether `run against npm start` is allowed: test/start.e2e.test.ts runs only the root README's. */
  readonly againstNpmStart: boolean
  /** Whether `not run` is only for `npm install` lines. */
  readonly notRunOnlyInstalls: boolean
}

const describeBlocks = (readme: string, rules: Rules) =>
  describe(`${shown(readme)} code blocks`, () => {
    const at = (b: Block) => `${shown(readme)} line ${b.line}`
    const blocks = readmeBlocks(readme).filter((b) => CODE.has(b.lang))

    it("every ts or sh block says how the suite runs it", () => {
      const markers = `^(example: |run$|${rules.againstNpmStart ? `${AGAINST_NPM_START}$|` : ""}tested by: |not run: .+)`
      const unmarked = blocks.filter((b) => b.marker === undefined || !new RegExp(markers).test(b.marker))
      assert.deepStrictEqual(unmarked.map((b) => `${at(b)} (${b.lang}): ${b.marker ?? "no marker"}`), [], `${shown(readme)}: unmarked code blocks`)
    })

    it("every ts block appears verbatim in an example the suite runs", () => {
      const tests = testSources()
      for (const b of blocks.filter((b) => b.marker?.startsWith("example: "))) {
        const file = b.marker!.slice("example: ".length)
        assert.isTrue(existsSync(resolve(ROOT, file)), `${at(b)}: ${file} does not exist`)
        const source = trimmed(readFileSync(resolve(ROOT, file), "utf8").split("\n")).join("\n")
        assert.include(source, trimmed(b.body).join("\n"), `${at(b)}: the block is not in ${file}`)
        assert.isTrue(isTestFile(file) || tests.some((t) => t.includes(file)), `${at(b)}: no test runs ${file}`)
      }
    })

    it("every sh block marked tested by names a test that exists", () => {
      for (const b of blocks.filter((b) => b.marker?.startsWith("tested by: "))) {
        const file = b.marker!.slice("tested by: ".length)
        assert.isTrue(existsSync(resolve(ROOT, file)), `${at(b)}: ${file} does not exist`)
      }
    })

    if (rules.notRunOnlyInstalls) {
      it("every block not run is npm install lines", () => {
        for (const b of blocks.filter((b) => b.marker?.startsWith("not run: "))) {
          assert.isTrue(b.lang === "sh" && trimmed(b.body).every((l) => /^npm install( [@\w./-]+)+$/.test(l)), `${at(b)}: only install commands may go unrun`)
        }
      })
    }

    // Asynchronously, so the test worker stays responsive while the commands run.
    it("every sh block marked run succeeds", { timeout: 300_000 }, async () => {
      for (const b of blocks.filter((b) => b.marker === "run")) {
        for (const command of trimmed(b.body)) await promisify(exec)(command, { cwd: ROOT, timeout: 120_000 })
      }
    })
  })

describeBlocks(README, { againstNpmStart: true, notRunOnlyInstalls: false })
for (const page of DOCS) describeBlocks(page, { againstNpmStart: true, notRunOnlyInstalls: false })
for (const dir of PACKAGES.filter((dir) => existsSync(packageReadme(dir)))) {
  describeBlocks(packageReadme(dir), { againstNpmStart: false, notRunOnlyInstalls: true })
}

interface PackageJson {
  readonly name: string
  readonly exports?: Record<string, { readonly types: string }>
  readonly bin?: Record<string, string>
}

/** The names each entry point of a package exports, read from its sources with the TypeScript checker. */
const exportsOf = (dir: string, pkg: PackageJson): ReadonlyArray<{ readonly specifier: string; readonly names: ReadonlyArray<string> }> => {
  const src = resolve(ROOT, "packages", dir, "src")
  const files = (readdirSync(src, { recursive: true }) as Array<string>).filter((f) => f.endsWith(".ts")).map((f) => resolve(src, f))
  // Only this package's files: names re-exported from elsewhere need no resolution to be listed.
  const program = ts.createProgram(files, {
    noResolve: true, noLib: true, types: [], module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler, target: ts.ScriptTarget.ES2022
  })
  const checker = program.getTypeChecker()
  return Object.entries(pkg.exports ?? {}).map(([subpath, entry]) => {
    const file = resolve(ROOT, "packages", dir, entry.types.replace(/^\.\/dist\//, "src/").replace(/\.d\.ts$/, ".ts"))
    const module = checker.getSymbolAtLocation(program.getSourceFile(file)!)!
    return { specifier: `${pkg.name}${subpath.slice(1)}`, names: checker.getExportsOfModule(module).map((s) => s.name) }
  })
}

describe("package READMEs", () => {
  it("every package has one", () => {
    assert.deepStrictEqual(PACKAGES.filter((dir) => !existsSync(packageReadme(dir))).map((dir) => `packages/${dir}/README.md`), [])
  })

  for (const dir of PACKAGES.filter((dir) => existsSync(packageReadme(dir)))) {
    const readme = readFileSync(packageReadme(dir), "utf8")
    const pkg = JSON.parse(readFileSync(resolve(ROOT, "packages", dir, "package.json"), "utf8")) as PackageJson

    it(`packages/${dir}: install line, ESM only, Node ≥ 20`, () => {
      const installs = readmeBlocks(packageReadme(dir)).filter((b) => b.body.some((l) => l.trim().startsWith("npm install ")))
      assert.isTrue(installs.some((b) => b.body.some((l) => l.split(" ").includes(pkg.name))), `packages/${dir}/README.md: no \`npm install ${pkg.name}\``)
      assert.match(readme, /ESM[- ]only/, `packages/${dir}/README.md: say it is ESM-only`)
      assert.match(readme, /Node(\.js)? (≥ ?|>= ?)20/, `packages/${dir}/README.md: say it needs Node ≥ 20`)
    })

    it(`packages/${dir}: names every entry point, bin and export`, { timeout: 60_000 }, () => {
      for (const bin of Object.keys(pkg.bin ?? {})) assert.include(readme, `\`${bin}\``, `packages/${dir}/README.md: the bin ${bin}`)
      for (const { specifier, names } of exportsOf(dir, pkg)) {
        const named = readme.includes(`\`${specifier}\``) || (specifier === pkg.name && readme.startsWith(`# ${pkg.name}\n`))
        assert.isTrue(named, `packages/${dir}/README.md: the entry point ${specifier}`)
        // Core's main entry and its storage and adapter subpaths export hundreds of names: those READMEs describe them in groups.
        if (dir === "core") continue
        const missing = names.filter((name) => !new RegExp(`\`(\\w+\\.)?${name}\\b[^\`]*\``).test(readme))
        assert.deepStrictEqual(missing, [], `packages/${dir}/README.md: exports of ${specifier} it does not name`)
      }
    })
  }
})
