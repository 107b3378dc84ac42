import { assert, describe, it } from "@effect/vitest"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import ts from "typescript"

/**
 * No module under `packages/*\/src` is part of an import cycle, type-only imports included: a
 * cycle is where a boundary has been lost (a contract that knows its implementations, a backend
 * that leans on another), whether or not it breaks module loading today.
 */

const ROOT = resolve(import.meta.dirname, "..")
const PACKAGES = resolve(ROOT, "packages")

const sources = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [])

/** Each workspace package's entry points, mapped from what `exports` publishes back to sources. */
const entryPoints = new Map<string, string>()
for (const dir of readdirSync(PACKAGES)) {
  const manifest = JSON.parse(readFileSync(join(PACKAGES, dir, "package.json"), "utf8")) as {
    readonly name: string
    readonly exports?: Record<string, { readonly import: string }>
  }
  for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
    const source = join(PACKAGES, dir, target.import.replace(/^\.\/dist\//, "src/").replace(/\.js$/, ".ts"))
    entryPoints.set(subpath === "." ? manifest.name : `${manifest.name}${subpath.slice(1)}`, source)
  }
}

/** The source files a module imports: relative ones and workspace packages, static, type-only or `import("…")`. */
const importsOf = (file: string): Array<string> =>
  ts.preProcessFile(readFileSync(file, "utf8"), true, true).importedFiles.flatMap(({ fileName }) => {
    if (fileName.startsWith(".")) {
      const target = resolve(dirname(file), fileName.replace(/\.js$/, ".ts"))
      return existsSync(target) ? [target] : []
    }
    const entry = entryPoints.get(fileName)
    return entry === undefined ? [] : [entry]
  })

/** The strongly connected components with more than one module (or a module importing itself): Tarjan's. */
const cycles = (graph: ReadonlyMap<string, ReadonlyArray<string>>): Array<Array<string>> => {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const found: Array<Array<string>> = []
  const visit = (v: string) => {
    index.set(v, index.size)
    low.set(v, index.get(v)!)
    stack.push(v)
    onStack.add(v)
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) === index.get(v)) {
      const component: Array<string> = []
      let w: string
      do {
        w = stack.pop()!
        onStack.delete(w)
        component.push(w)
      } while (w !== v)
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort())
    }
  }
  for (const v of graph.keys()) if (!index.has(v)) visit(v)
  return found
}

describe("import cycles", () => {
  it("the detector finds a loop through several modules and a self-import, and nothing in a tree", () => {
    const graph = new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a", "d"]], ["d", []], ["e", ["e"]], ["f", ["d"]]])
    assert.sameDeepMembers(cycles(graph), [["a", "b", "c"], ["e"]])
    assert.deepStrictEqual(cycles(new Map([["a", ["b", "c"]], ["b", ["c"]], ["c", []]])), [])
  })

  it("no module under packages/*/src is part of one", () => {
    const files = readdirSync(PACKAGES).flatMap((dir) => sources(join(PACKAGES, dir, "src")))
    assert.isAbove(files.length, 100)
    const graph = new Map(files.map((f) => [f, importsOf(f)]))
    // The graph must see across packages, or a cycle between two could hide.
    const redisImports = [...graph].filter(([f]) => f.includes("/storage-redis/src/")).flatMap(([, to]) => to)
    assert.isTrue(redisImports.some((f) => f.includes("/core/src/")), "imports of @gpu-market/core are resolved")
    const found = cycles(graph).map((c) => c.map((f) => relative(ROOT, f)).join(" → "))
    assert.deepStrictEqual(found, [])
  })
})
