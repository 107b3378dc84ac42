import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, relative, resolve } from "node:path"

/**
 * The links of the repository's Markdown, and the anchors its headings make, by the rules GitHub
 * renders them with, so a link checked here is a link that works on GitHub.
 */

/** A link as written: the file it is in, its line, and its target. */
export interface Link {
  readonly file: string
  readonly line: number
  readonly target: string
}

/** The lines outside fenced code blocks, with inline code blanked out: neither holds a link or a heading. */
const prose = (text: string): ReadonlyArray<{ readonly line: number; readonly text: string }> => {
  const out: Array<{ line: number; text: string }> = []
  let fence: string | undefined
  text.split("\n").forEach((line, i) => {
    const open = /^\s*(```+|~~~+)/.exec(line)
    if (open !== null) {
      if (fence === undefined) fence = open[1]!
      else if (line.trim().startsWith(fence)) fence = undefined
      return
    }
    if (fence === undefined) out.push({ line: i + 1, text: line })
  })
  return out
}

/**
 * GitHub's anchor for a heading's text (github-slugger): the rendered text in lower case, every
 * character that is not a letter, mark, digit, connector, space or hyphen removed, spaces made
 * hyphens; a repeated anchor gets `-1`, `-2`, ….
 */
export const slug = (heading: string): string =>
  heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // a link shows its text
    .replace(/<[^>]+>/g, "") // HTML tags render nothing
    .replace(/[`*]/g, "") // code and emphasis marks
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-")

/** The anchors a Markdown file has: one per heading (ATX), numbered when repeated, and explicit `id`/`name` attributes. */
export const anchorsOf = (file: string): ReadonlySet<string> => {
  const seen = new Map<string, number>()
  const anchors = new Set<string>()
  for (const { text } of prose(readFileSync(file, "utf8"))) {
    for (const m of text.matchAll(/<a\s[^>]*(?:id|name)="([^"]+)"/g)) anchors.add(m[1]!)
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(text)
    if (heading === null) continue
    const base = slug(heading[1]!)
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    anchors.add(n === 0 ? base : `${base}-${n}`)
  }
  return anchors
}

/** Every inline link, image and reference definition of a Markdown file, outside code. */
export const linksOf = (file: string): ReadonlyArray<Link> =>
  prose(readFileSync(file, "utf8")).flatMap(({ line, text }) => {
    const code = text.replace(/`[^`]*`/g, (m) => " ".repeat(m.length))
    const inline = [...code.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!)
    const definitions = [...code.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$/g)].map((m) => m[1]!)
    const hrefs = [...code.matchAll(/\b(?:href|src)="([^"]+)"/g)].map((m) => m[1]!)
    return [...inline, ...definitions, ...hrefs].map((target) => ({ file, line, target }))
  })

/** The Markdown files under `dir` (recursively), skipping what `skip` names (relative to `dir`). */
export const markdownUnder = (dir: string, skip: (path: string) => boolean = () => false): ReadonlyArray<string> =>
  existsSync(dir)
    ? (readdirSync(dir, { recursive: true }) as Array<string>).filter((f) => f.endsWith(".md") && !skip(f)).sort().map((f) => resolve(dir, f))
    : []

/**
 * What is wrong with a link, or undefined: a relative link must name a file or folder inside
 * `root` that exists, and its `#anchor` a heading of that Markdown file (or of its own file).
 * An http(s) link is not fetched, but must not point at this machine.
 */
export const problemOf = (root: string, link: Link): string | undefined => {
  const { target } = link
  if (/^https?:\/\//i.test(target)) {
    const host = new URL(target).hostname
    return /^(localhost|127\.\d+\.\d+\.\d+|0\.0\.0\.0|\[::1\])$/.test(host) ? "points at this machine" : undefined
  }
  if (/^mailto:/i.test(target)) return undefined
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("/")) return "is neither relative nor http(s)"
  const [path = "", anchor] = target.split("#") as [string, string | undefined]
  const file = path === "" ? link.file : resolve(dirname(link.file), decodeURIComponent(path))
  if (relative(root, file).startsWith("..")) return "points outside the repository"
  if (!existsSync(file)) return `names ${relative(root, file)}, which does not exist`
  if (anchor === undefined) return undefined
  if (statSync(file).isDirectory() || !file.endsWith(".md")) return "has an anchor into something that is not a Markdown file"
  return anchorsOf(file).has(decodeURIComponent(anchor)) ? undefined : `names #${anchor}, which is no heading of ${relative(root, file)}`
}
