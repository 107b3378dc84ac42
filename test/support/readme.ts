import { existsSync, readdirSync, readFileSync } from "node:fs"
import { relative, resolve } from "node:path"
import { markdownUnder } from "./links"

/**
 * The code blocks of the READMEs (the root one and each package's) and of the pages under docs/,
 * each with the HTML comment on the line before it, which says how the suite runs the block (see
 * test/readme.e2e.test.ts).
 */

export const ROOT = resolve(import.meta.dirname, "../..")
export const README = resolve(ROOT, process.env.GPU_MARKET_README ?? "README.md")

/** The workspace packages, by directory name under packages/. */
export const PACKAGES: ReadonlyArray<string> = readdirSync(resolve(ROOT, "packages"))
  .filter((dir) => existsSync(resolve(ROOT, "packages", dir, "package.json")))
  .sort()

/** The README of a package: `packages/<dir>/README.md`, the one npm shows. */
export const packageReadme = (dir: string): string => resolve(ROOT, "packages", dir, "README.md")

/** The Markdown pages under docs/ (not docs/api/, which TypeDoc generates), sorted. */
export const DOCS: ReadonlyArray<string> = markdownUnder(resolve(ROOT, "docs"), (path) => path.startsWith("api/"))

/** A path as the test messages show it: relative to the repository root. */
export const shown = (file: string): string => relative(ROOT, file)

export interface Block {
  readonly line: number
  readonly lang: string
  readonly marker: string | undefined
  readonly body: ReadonlyArray<string>
}

export const readmeBlocks = (file: string = README): ReadonlyArray<Block> => {
  const lines = readFileSync(file, "utf8").split("\n")
  const out: Array<Block> = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^\s*```(\w*)\s*$/.exec(lines[i]!)
    if (open === null) continue
    const start = i
    const body: Array<string> = []
    for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i]!); i++) body.push(lines[i]!)
    let before = start - 1
    while (before >= 0 && lines[before]!.trim() === "") before--
    const marker = before >= 0 ? /^\s*<!--\s*(.+?)\s*-->\s*$/.exec(lines[before]!)?.[1] : undefined
    out.push({ line: start + 1, lang: open[1]!, marker, body })
  }
  return out
}

/** The `sh` blocks that run against the demo server of `npm start` on 127.0.0.1:8787 (root README and docs/ only). */
export const AGAINST_NPM_START = "run against npm start"
