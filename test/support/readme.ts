import { readFileSync } from "node:fs"
import { resolve } from "node:path"

/**
 * The code blocks of the README, each with the HTML comment on the line before it, which says
 * how the suite runs the block (see test/readme.test.ts).
 */

export const ROOT = resolve(import.meta.dirname, "../..")
export const README = resolve(ROOT, process.env.GPU_MARKET_README ?? "README.md")

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

/** The `sh` blocks that run against the demo server of `npm start` on 127.0.0.1:8787. */
export const AGAINST_NPM_START = "run against npm start"
