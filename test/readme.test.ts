import { assert, describe, it } from "@effect/vitest"
import { execSync } from "node:child_process"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { resolve } from "node:path"
import { AGAINST_NPM_START, README, readmeBlocks, ROOT } from "./support/readme"

/**
 * Every code block of the README is run by the suite. A block says how, in an HTML comment on
 * the line before it:
 * - ```ts: `<!-- example: examples/<file>.ts -->`: the block appears verbatim (modulo indentation)
 *   in that example, which a test under test/ runs;
 * - ```sh: `<!-- run -->`: this test runs each line and expects it to succeed;
 *   `<!-- run against npm start -->`: test/start.test.ts runs the block as one bash script
 *   against the demo server of `npm start` (127.0.0.1:8787 becomes its address);
 *   `<!-- tested by: test/<file>.test.ts -->`: that test runs these commands (e.g. the CLI);
 *   `<!-- not run: <reason> -->`: shown only, with the reason.
 * An unmarked ts or sh block fails. A fence without a language is a figure, not code.
 */

const CODE = new Set(["ts", "typescript", "js", "sh", "bash", "shell"])

const testSources = () => readdirSync(resolve(ROOT, "test")).filter((f) => f.endsWith(".test.ts")).map((f) => readFileSync(resolve(ROOT, "test", f), "utf8"))
const trimmed = (lines: ReadonlyArray<string>) => lines.map((l) => l.trim()).filter((l) => l !== "")

describe("README code blocks", () => {
  const blocks = readmeBlocks().filter((b) => CODE.has(b.lang))

  it("every ts or sh block says how the suite runs it", () => {
    const unmarked = blocks.filter((b) => b.marker === undefined || !new RegExp(`^(example: |run$|${AGAINST_NPM_START}$|tested by: |not run: .+)`).test(b.marker))
    assert.deepStrictEqual(unmarked.map((b) => `line ${b.line} (${b.lang})`), [], `${README}: unmarked code blocks`)
  })

  it("every ts block appears verbatim in an example the suite runs", () => {
    const tests = testSources()
    for (const b of blocks.filter((b) => b.marker?.startsWith("example: "))) {
      const file = b.marker!.slice("example: ".length)
      assert.isTrue(existsSync(resolve(ROOT, file)), `line ${b.line}: ${file} does not exist`)
      const source = trimmed(readFileSync(resolve(ROOT, file), "utf8").split("\n")).join("\n")
      assert.include(source, trimmed(b.body).join("\n"), `line ${b.line}: the block is not in ${file}`)
      assert.isTrue(tests.some((t) => t.includes(file)), `line ${b.line}: no test runs ${file}`)
    }
  })

  it("every sh block marked tested by names a test that runs each command", () => {
    for (const b of blocks.filter((b) => b.marker?.startsWith("tested by: "))) {
      const file = b.marker!.slice("tested by: ".length)
      assert.isTrue(existsSync(resolve(ROOT, file)), `line ${b.line}: ${file} does not exist`)
    }
  })

  it("every sh block marked run succeeds", { timeout: 300_000 }, () => {
    for (const b of blocks.filter((b) => b.marker === "run")) {
      for (const command of trimmed(b.body)) execSync(command, { cwd: ROOT, stdio: "pipe", timeout: 120_000 })
    }
  })
})
