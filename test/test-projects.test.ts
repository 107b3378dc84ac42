import { assert, describe, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"

/**
 * The in-process project (`npm run test:fast`) stays fast only while none of its files starts
 * another process of ours: a file that spawns the bin, a server, npm or node, or opens Chromium,
 * is named `*.e2e.test.ts` and runs in the e2e project. redis-server is a store here, as a SQLite
 * file is, so starting one (test/support/redis.ts) keeps a file in process.
 */

const ROOT = join(import.meta.dirname, "..")

/** What a test file imports that runs another process: a module, or a helper of test/support. */
const PROCESS_IMPORTS: ReadonlyArray<readonly [module: RegExp, names?: RegExp]> = [
  [/^node:child_process$/],
  [/^playwright-core$/],
  [/\/support\/process$/, /\bstartUntil\b/],
  [/\/support\/crash$/, /\b(spawnTree|killAt)\b/],
  [/\/support\/redis-serving$/],
  [/\/support\/redis-topologies$/]
]

const testFiles = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() && entry.name !== "node_modules" && entry.name !== "fixtures"
      ? testFiles(join(dir, entry.name))
      : entry.name.endsWith(".test.ts") ? [join(dir, entry.name)] : [])

/** The imports of a file that start another process, as `module { names }`. */
const processImports = (source: string): Array<string> =>
  Array.from(source.matchAll(/^import\s+(?:type\s+)?([\s\S]*?)\s+from\s+"([^"]+)"/gm)).flatMap(([, names, module]) =>
    PROCESS_IMPORTS.some(([m, n]) => m.test(module!) && (n === undefined || n.test(names!))) ? [`${module} ${names}`] : [])

describe("test projects", () => {
  const files = [...testFiles(join(ROOT, "test")), ...readdirSync(join(ROOT, "packages")).flatMap((p) => {
    try {
      return testFiles(join(ROOT, "packages", p, "test"))
    } catch {
      return []
    }
  })].map((file) => relative(ROOT, file))

  it("a file that starts another process is an e2e test, and an e2e test starts one", () => {
    const misplaced = files.flatMap((file) => {
      const imports = processImports(readFileSync(join(ROOT, file), "utf8"))
      const e2e = file.endsWith(".e2e.test.ts")
      if (!e2e && imports.length > 0) return [`${file} runs another process (${imports.join("; ")}): name it *.e2e.test.ts`]
      if (e2e && imports.length === 0) return [`${file} starts no process: drop ".e2e" so it runs in process`]
      return []
    })
    assert.deepStrictEqual(misplaced, [])
    assert.isAbove(files.filter((file) => file.endsWith(".e2e.test.ts")).length, 0)
  })
})
