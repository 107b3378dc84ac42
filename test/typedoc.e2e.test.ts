import { assert, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { promisify } from "node:util"

/**
 * The TypeScript API reference (`npm run docs:api`, typedoc.config.mjs) builds from every
 * package's public entry points without an error or a warning (a broken `{@link}` in a JSDoc
 * comment is one), and documents each package that exports an API. The test writes TypeDoc's JSON
 * model to a temporary folder rather than the HTML, which needs the same reading of the sources.
 */

const ROOT = resolve(import.meta.dirname, "..")

interface Reflection {
  readonly name: string
  readonly children?: ReadonlyArray<Reflection>
}

describe("npm run docs:api", () => {
  it("documents every package's public entry points, with no warning", { timeout: 600_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "gpu-market-typedoc-"))
    try {
      const json = join(dir, "api.json")
      // Asynchronously, so the test worker stays responsive while TypeDoc reads the sources.
      const { stdout, stderr } = await promisify(execFile)(resolve(ROOT, "node_modules/.bin/typedoc"), ["--json", json, "--logLevel", "Warn"], {
        cwd: ROOT, timeout: 540_000, env: { ...process.env, NO_COLOR: "1" }
      })
      assert.strictEqual(`${stdout}${stderr}`.trim(), "")
      const project = JSON.parse(readFileSync(json, "utf8")) as Reflection
      const documented = (project.children ?? []).map((c) => c.name).sort()
      const published = readdirSync(resolve(ROOT, "packages"))
        .map((d) => resolve(ROOT, "packages", d, "package.json"))
        .filter(existsSync)
        .map((f) => JSON.parse(readFileSync(f, "utf8")) as { name: string; exports?: unknown })
        .filter((p) => p.exports !== undefined)
        .map((p) => p.name)
        .sort()
      assert.deepStrictEqual(documented, published)
      // Core's main entry documents the Promise API an app starts from.
      const names = (r: Reflection): ReadonlyArray<string> => [r.name, ...(r.children ?? []).flatMap(names)]
      const core = project.children?.find((c) => c.name === "@gpu-market/core")
      assert.include(names(core!), "createMarket")
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
